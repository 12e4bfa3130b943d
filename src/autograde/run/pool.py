"""Пул работников на этой машине: работы параллельно, итоги — по мере готовности в главный процесс.

``outcomes(tasks, context, workers)`` выдаёт пары (задача, ``Outcome`` или текст сбоя) в порядке
готовности. Работник — отдельный процесс (fork: nbformat, jupyter_client и шаблон отзыва уже
загружены), умирает вместе с главным (PR_SET_PDEATHSIG), берёт свой слот песочницы. Если
процесс-работник упал, пул пересоздаётся и работа повторяется; упала дважды — сбой этой работы.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import signal
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool

from autograde.lab.task import Context, Outcome, Task, loaded
from autograde.render import feedback
from autograde.run.worker import grade

IN_FLIGHT = 2  # работ в полёте на одного работника: один считает, следующая уже ждёт

_STATE: dict = {}


def _init(context: Context, counter) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C обрабатывает главный процесс
    with counter.get_lock():
        slot = counter.value
        counter.value += 1
    _STATE.update(context=context, slot=slot)


def _grade(task: Task) -> Outcome:
    return grade(task, _STATE["context"], _STATE["slot"])


def outcomes(tasks: list[Task], context: Context, workers: int) -> Iterator[tuple[Task, Outcome | str]]:
    """Пары (задача, итог или текст сбоя) по мере готовности. В полёте — не больше ``IN_FLIGHT`` работ на
    работника: байты сдачи читаются с диска, когда работа уходит работнику (``loaded``), поэтому память
    главного процесса не растёт с группой."""
    if not tasks:
        return
    feedback._exporter()  # шаблон отзыва — до fork: работники получат его готовым
    mp = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    counter = mp.Value("i", 0)
    attempts: dict[str, int] = {}
    waiting = list(reversed(tasks))  # берём с конца: порядок задач сохраняется
    while waiting:
        executor = ProcessPoolExecutor(max_workers=min(workers, len(waiting)), mp_context=mp, initializer=_init,
                                       initargs=(context, counter))
        futures: dict = {}
        broken = False
        try:
            _refill(executor, futures, waiting, IN_FLIGHT * workers)
            while futures and not broken:
                finished, _ = wait(futures, return_when=FIRST_COMPLETED)
                for future in finished:
                    task = futures.pop(future)
                    try:
                        yield task, future.result()
                    except BrokenProcessPool:
                        broken = True
                        attempts[task.student] = attempts.get(task.student, 0) + 1
                        if attempts[task.student] < 2:
                            waiting.append(task)
                        else:
                            yield task, "процесс проверки упал дважды на этой работе"
                    except Exception as exc:  # noqa: BLE001 — сбой проверки одной работы: остальные идут дальше
                        yield task, f"{type(exc).__name__}: {exc}"
                if not broken:
                    _refill(executor, futures, waiting, IN_FLIGHT * workers)
        finally:
            if broken or futures:
                if broken:  # недоделанные — снова в очередь, новым пулом
                    waiting.extend(reversed(list(futures.values())))
                for process in list(getattr(executor, "_processes", {}).values()):
                    process.kill()
                executor.shutdown(wait=False, cancel_futures=True)
            else:
                executor.shutdown(wait=True)


def _refill(executor, futures: dict, waiting: list[Task], limit: int) -> None:
    """Отдать пулу работы из ``waiting``, пока в полёте меньше ``limit``; байты сдачи — только сейчас."""
    while waiting and len(futures) < limit:
        task = waiting.pop()
        futures[executor.submit(_grade, loaded(task))] = task

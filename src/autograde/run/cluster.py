"""Работники на кластере Dask: ``grade LAB --cluster tcp://host:8786`` или ``--cluster local:N``.

Тот же шов, что у pool.py: ``Cluster.outcomes(tasks, context)`` выдаёт пары (задача, ``Outcome`` или
текст сбоя) в порядке готовности, а пишет всё по-прежнему только главный процесс. Отличия от пула:

* ``Context`` (эталон, лимиты, файлы задания — содержимым, а не путями этой машины) едет к
  работникам плагином Dask: его получает и работник, который подключится или перезапустится
  посреди проверки;
* каждый работник до первой работы сам проверяет песочницу (``check_sandbox``) и сверяет код
  проверки, эталонную библиотеку и версии пакетов с главным процессом; не вышло — отказ (``Refused``),
  и проверка останавливается: без песочницы и на другом коде работник не проверяет ничего;
* слот песочницы (свой uid у каждой песочницы под root) работник берёт один на процесс —
  свободный номер на своей машине (блокировка файла), поэтому у двух работников одного узла
  слоты разные;
* работник умер посреди работы — Dask отдаёт её другому; работа, которая роняет работников
  раз за разом (``KilledWorker``: больше ``distributed.scheduler.allowed-failures`` падений,
  у ``local:N`` — двух), становится строкой с ошибкой проверки, как в пуле;
* в полёте не больше двух работ на поток кластера: главный процесс не пересылает планировщику
  всю группу сразу, а ``kill -9`` главного теряет не больше этого.
"""

from __future__ import annotations

import dataclasses
import fcntl
import hashlib
import importlib.metadata
import logging
import os
import platform
import re
import tempfile
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from distributed import get_worker
from distributed.diagnostics.plugin import WorkerPlugin

from autograde.course import CHECKOUT, Course, CourseError
from autograde.lab.task import Context, Outcome, Task, loaded
from autograde.run.worker import grade
from autograde.sandbox import check_sandbox
from autograde.sandbox.policy import reference_package
from autograde.store.results import works
from minirag import plural

LOCAL = re.compile(r"local:(\d+)")
CONNECT_TIMEOUT = 10  # секунд на подключение к планировщику
LOCAL_START_TIMEOUT = 300  # секунд на запуск хотя бы одного работника local:N
LOCAL_ALLOWED_FAILURES = 1  # у local:N работа, уронившая двух работников, — ошибка (как в пуле)
PACKAGES = ("numpy", "nbformat", "nbconvert", "nbgrader", "ipykernel", "jupyter_client", "nh3")
SLOTS = 32  # uid песочницы различает 32 слота на процесс-работник (sandbox/launch.py)
# local:N: без фоновой работы Dask, которая нужна только его панели (её здесь нет): профилировщик задач
# (снимок стека каждые 10 мс), замер GIL, опрос системы дважды в секунду. На 2 ядрах она съедала процессор
# у проверки (benchmarks/README.md, «Кластер»); работникам отдельного планировщика это ставят в их конфиге Dask.
QUIET = {"distributed.worker.profile.enabled": False, "distributed.admin.system-monitor.gil.enabled": False,
         "distributed.admin.system-monitor.interval": "5s"}


class Refused(Exception):
    """Работник отказался проверять. ``code`` — код выхода команды: 3 — нет песочницы, 2 — другой код."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.code = code

    def __reduce__(self):
        return Refused, (str(self), self.code)


class Cluster:
    """Подключение к кластеру Dask на время одной проверки. Пример: ``Cluster("local:2").outcomes(tasks, ctx)``."""

    Refused = Refused  # grade.py ловит отказ работника, не импортируя Dask без --cluster

    def __init__(self, address: str):
        import dask
        from distributed import Client, LocalCluster

        self.address, self.local, self.graded_by = address, None, Counter()
        local = LOCAL.fullmatch(address)
        try:
            if local:
                if int(local.group(1)) < 1:
                    raise CourseError("--cluster local:N: N должно быть не меньше 1.")
                # на всё время процесса (одна проверка): работников запускает scale() позже, в фоне
                dask.config.set({"distributed.scheduler.allowed-failures": LOCAL_ALLOWED_FAILURES, **QUIET})
                self.local = LocalCluster(n_workers=0, threads_per_worker=1, processes=True, host="127.0.0.1",
                                          dashboard_address=None, silence_logs=logging.CRITICAL)
                self.local.scale(int(local.group(1)))  # не ждём: работники запускаются, пока идёт приём сдач
                self.client = Client(self.local, timeout=CONNECT_TIMEOUT)
            elif "://" in address:
                self.client = Client(address, timeout=CONNECT_TIMEOUT)
            else:
                raise CourseError(f"--cluster {address!r}: ждали адрес планировщика Dask (tcp://host:8786) "
                                  "или local:N.")
        except (OSError, TimeoutError, ValueError) as exc:
            self.close()
            raise CourseError(f"планировщик Dask {address} недоступен ({exc}): запустите его (dask scheduler) "
                              "или исправьте адрес в --cluster; ничего не проверено.") from None
        # журнал Dask (переподключения, трассировки при закрытии) — не для терминала: что случилось, скажем сами
        for handler in logging.getLogger("distributed").handlers:
            handler.setLevel(logging.CRITICAL)

    def outcomes(self, tasks: list[Task], context: Context) -> Iterator[tuple[Task, Outcome | str]]:
        """Пары (задача, итог или текст сбоя) по мере готовности; сбой проверки одной работы — текст."""
        if not tasks:
            return
        from distributed import as_completed
        from distributed.client import FutureCancelledError
        from distributed.scheduler import KilledWorker

        if self.local is not None:
            try:
                self.client.wait_for_workers(1, timeout=LOCAL_START_TIMEOUT)
            except TimeoutError:
                raise CourseError(f"работники {self.address} не запустились за {LOCAL_START_TIMEOUT} с.") from None
        run = uuid.uuid4().hex[:12]
        plugin = f"autograde-{run}"
        self.client.register_plugin(_Lab(run, context, fingerprint()), name=plugin)
        waiting, flying, done = list(reversed(tasks)), {}, as_completed()

        def refill() -> None:
            window = 2 * max(1, sum(self.client.nthreads().values()))
            while waiting and len(flying) < window:
                task = waiting.pop()
                future = self.client.submit(_grade_there, run, loaded(task), key=f"grade-{task.student}-{run}",
                                            pure=False)
                flying[future.key] = task
                done.add(future)

        try:
            refill()
            for future in done:
                task = flying.pop(future.key)
                try:
                    where, outcome = future.result()
                except Refused:
                    raise
                except KilledWorker as exc:
                    times = plural(exc.allowed_failures + 1, "раз", "раза", "раз")
                    outcome = f"процесс проверки падал на этой работе {times} подряд, на разных работниках кластера"
                except FutureCancelledError as exc:
                    raise CourseError(f"связь с кластером Dask {self.address} потеряна ({exc.reason}): запустите "
                                      "проверку снова — готовое не потеряется.") from None
                except Exception as exc:  # noqa: BLE001 — сбой проверки одной работы: остальные идут дальше
                    outcome = f"{type(exc).__name__}: {exc}"
                else:
                    self.graded_by[where] += 1
                future.release()
                refill()
                yield task, outcome
        finally:
            for future in list(done.futures):
                future.cancel()
            try:
                self.client.unregister_worker_plugin(plugin)
            except Exception:  # noqa: BLE001 — кластер уже недоступен: плагин уйдёт вместе с ним
                pass

    def report(self) -> str:
        """Строка для сводки: сколько работ проверил каждый работник."""
        if not self.graded_by:
            return f"Кластер {self.address}: в этом запуске работ не было."
        parts = [f"{name} — {works(n)}" for name, n in sorted(self.graded_by.items())]
        return f"По работникам кластера {self.address}: " + ", ".join(parts) + "."

    def close(self) -> None:
        for part in (getattr(self, "client", None), self.local):
            if part is not None:
                try:
                    part.close()
                except Exception:  # noqa: BLE001 — закрываем то, что уже могло умереть
                    pass


def fingerprint() -> dict[str, str]:
    """От чего, кроме задания, зависит итог работы: код проверки, эталонная библиотека, Python и пакеты."""
    here = Path(__file__).resolve().parents[1]  # весь пакет autograde: стадии, судья, песочница, шаблоны
    code = [p for p in here.rglob("*") if p.suffix != ".md"]
    package = reference_package()
    found = {"autograde": _digest(here, code), "minirag": _digest(package, list(package.rglob("*"))) if package else "нет",
             "python": ".".join(platform.python_version_tuple()[:2])}
    for name in PACKAGES:
        try:
            found[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            found[name] = "нет"
    return found


def _digest(root: Path, paths: list[Path]) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in paths if p.is_file() and "__pycache__" not in p.parts):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


# ---------- на стороне работника ----------
@dataclass
class _Run:
    """Одна проверка на этом процессе-работнике: её Context и чего ждёт главный процесс."""

    context: Context
    expected: dict[str, str]
    refusal: Refused | None = None
    checked: bool = False


_RUNS: dict[str, _Run] = {}  # id проверки → _Run (кладёт и убирает плагин _Lab)
_SLOT: list = []  # [номер слота, открытый файл блокировки] — один на процесс-работник


class _Lab(WorkerPlugin):
    """Плагин работника Dask: Context проверки и отпечаток окружения главного процесса."""

    def __init__(self, run: str, context: Context, expected: dict[str, str]):
        self.run, self.context, self.expected = run, context, expected

    def setup(self, worker) -> None:
        _RUNS[self.run] = _Run(self.context, self.expected)

    def teardown(self, worker) -> None:
        _RUNS.pop(self.run, None)


def _grade_there(run: str, task: Task) -> tuple[str, Outcome]:
    """Задача Dask: проверить одну работу на этом работнике. Возвращает (имя работника, итог)."""
    worker = get_worker()
    state = _RUNS[run]
    if not state.checked:
        state.refusal, state.checked = _refusal(state, worker), True
    if state.refusal is not None:
        raise state.refusal
    return str(worker.name), grade(task, state.context, _slot())


def _refusal(state: _Run, worker) -> Refused | None:
    """Почему этот работник не может проверять (или None): потоки, окружение, песочница."""
    name = f"работник {worker.name}"
    if worker.state.nthreads != 1:
        return Refused(f"{name}: у него {worker.state.nthreads} потоков, а проверке нужен один поток на процесс — "
                       "запустите dask worker --nthreads 1 (процессов — сколько ядер).", 2)
    here = fingerprint()
    differ = [f"{k} {here.get(k)} вместо {v}" for k, v in state.expected.items() if here.get(k) != v]
    if differ:
        return Refused(f"{name}: окружение не то, что у главного процесса ({'; '.join(differ)}) — нужны тот же "
                       "коммит курса и то же окружение из requirements.txt.", 2)
    state.context = dataclasses.replace(state.context, secrets=state.context.secrets + _local_secrets())
    if state.context.sandboxed:
        problem = check_sandbox(state.context.secrets)
        if problem:
            return Refused(f"{name}: {problem}", 3)
    return None


def _local_secrets() -> list[Path]:
    """Что не монтировать в песочницу на этой машине: решения и папки проверки её копии курса."""
    if CHECKOUT is None:  # пакет установлен не из клона курса: решений на этой машине нет
        return []
    try:
        return Course.load(CHECKOUT).secrets()
    except CourseError:
        return [CHECKOUT]


def _slot() -> int:
    """Свободный на этой машине слот песочницы: блокировку файла держим, пока жив процесс-работник."""
    if not _SLOT:
        _SLOT[:] = [os.getpid() % SLOTS, None]  # запасной: больше 32 работников на узле или папка недоступна
        folder = Path(tempfile.gettempdir()) / f"autograde-slots-{os.getuid()}"
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
            for slot in range(SLOTS):
                handle = open(folder / str(slot), "w")  # noqa: SIM115 — держим открытым до конца процесса
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    handle.close()
                    continue
                _SLOT[:] = [slot, handle]
                break
        except OSError:
            pass
    return _SLOT[0]

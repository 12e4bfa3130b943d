"""Исполнение проверяемого ноутбука: ячейки слушателя — в его ядре, тесты — у судьи.

Доверенный процесс (этот модуль) ведёт ноутбук ячейка за ячейкой по плану (``Plan``):

* ``kernel`` — решения и ячейки слушателя: в ядре слушателя (клиент протокола Jupyter снаружи
  песочницы, выходы пишутся здесь, в памяти проверяющего);
* ``both`` — ячейки преподавателя (подготовка, помощники): в ядре и у судьи;
* ``judge`` — ячейки с тестами: только у судьи. Когда тест читает имя слушателя или зовёт его
  функцию, судья спрашивает нас, мы исполняем запрос канала (``_autograde_bridge``) в ядре и
  отдаём ответ судье как есть — сами мы его не разбираем.

Лимиты — на всё: ячейка не дольше ``cell_timeout`` (вместе с вызовами из тестов), ноутбук не
дольше ``timeout``; весь вывод ноутбука (stdout, stderr, картинки, ошибки с трассировками) — не
больше ``output_kb``, всё переданное судье — не больше ``transfer_mb``; одно сообщение ядра — не
больше бюджета вывода с запасом (больше ZeroMQ не примет), ответ канала — не больше ``MAX_MESSAGE``;
оба не глубже и не больше пределов ``codec.scan`` — иначе ядро останавливается, не разбирая ответа. Сторож следит за памятью и процессами ядра.
Ячейки, до которых дело не дошло, получают ошибку «не выполнялась».
"""

from __future__ import annotations

import math
import select
import time
from dataclasses import dataclass

from nbformat import NotebookNode
from nbformat.v4 import new_output

from autograde.run.channel import INSTALL_BRIDGE, SERVE, FrameReader, JudgeChannel, close, connect, frame
from autograde.run.kernel import MAX_MESSAGE, STARTUP_TIMEOUT, WATCH_EVERY, KernelSession, Request
from autograde.run.record import (
    STOP_ERRORS,
    STOP_REASONS,
    Budget,
    Event,
    Execution,
    Quiet,
    Sink,
    Stop,
    error,
    not_executed,
    size,
)
from autograde.sandbox import Process

MEMORY_HELD = 0.85  # после MemoryError ядро, занявшее больше этой доли RLIMIT_AS, останавливаем
__all__ = ["Event", "Execution", "Plan", "Runner", "not_executed"]


@dataclass
class Plan:
    """Где исполнять каждую ячейку: kernel, both, judge или skip (пустая, не код)."""

    where: list[str]
    owned: list[str]  # имена, которые задаёт решение слушателя: судья всегда берёт их из ядра
    notebook: str | None = None  # путь к ноутбуку под проверкой внутри песочницы судьи


class Runner:
    """Один проход по ноутбуку: ядро, судья, лимиты и события."""

    def __init__(self, nb: NotebookNode, kernel: Process, judge_factory, plan: Plan):
        self.nb, self.kernel, self.plan = nb, kernel, plan
        self.limits = kernel.limits
        self.judge_factory = judge_factory
        self.judge: JudgeChannel | None = None
        self.instructor: list[str] = []  # ячейки преподавателя, уже исполненные у судьи (для перезапуска)
        self.result = Execution()
        self.budget = Budget(self.limits.output_bytes)
        self.transferred = 0
        self.started = time.monotonic()
        self.wall = self.started + self.limits.timeout
        self.session: KernelSession | None = None

    def _kernel_cell(self, index: int) -> None:
        cell = self.nb.cells[index]
        sink = Sink(cell, self.budget)
        content = self.session.execute(cell.source, index, sink, time.monotonic() + self.limits.cell_timeout)
        has_error = any(o.output_type == "error" for o in cell.outputs)
        if content.get("status") == "error" and not has_error:
            # ошибка была, но её вывода нет (подменили показ трассировки) — как в nbgrader
            cell.outputs.append(error(content.get("ename", "Error"), content.get("evalue", "")))
        if content.get("status") == "aborted" and not has_error:
            cell.outputs.append(error("Aborted", "ядро отказалось выполнять ячейку"))
        if content.get("autograde_timeout"):
            if not any(o.output_type == "error" for o in cell.outputs):
                cell.outputs.append(error("KeyboardInterrupt", "ячейка прервана"))
            cell.outputs.append(error("TimeoutError", f"ячейка выполнялась дольше {self.limits.cell_timeout:g} с "
                                                       "и была прервана"))
        if any(o.output_type == "error" and o.get("ename") == "MemoryError" for o in cell.outputs):
            used = self.kernel.address_space()  # память так и держат — дальше ядро упадёт где придётся
            if used > MEMORY_HELD * self.limits.memory_bytes:
                raise self.session.stop("memory", index, f"{used // (1024 * 1024)} МБ")

    # ---------- судья ----------
    def _judge(self) -> JudgeChannel:
        if self.judge is None or not self.judge.process.alive():
            self.judge = JudgeChannel(self.judge_factory())
            self.judge.request({"op": "init", "owned": self.plan.owned, "notebook": self.plan.notebook},
                               time.monotonic() + STARTUP_TIMEOUT)
            for source in self.instructor:
                self.judge.request({"op": "instructor", "source": source}, time.monotonic() + self.limits.cell_timeout)
        return self.judge

    def _wait(self, ready, serve, deadline: float) -> None:
        """Ждать, пока ``ready()`` не станет истиной, — обслуживая ядро (serve), если оно исполняет канал."""
        while not ready():
            now = time.monotonic()
            if now >= min(deadline, self.wall):
                raise TimeoutError
            if serve is not None:
                serve.pump(min(WATCH_EVERY, deadline - now))
            else:
                select.select(self.judge_fds, [], [], min(WATCH_EVERY, deadline - now))
            for reader in self.readers:
                reader()

    def _judge_cell(self, index: int) -> None:
        cell = self.nb.cells[index]
        cell.outputs = []
        deadline = time.monotonic() + self.limits.cell_timeout
        judge = self._judge()
        judge.send({"op": "test", "source": cell.source})
        serve = channel = None
        try:
            while True:
                self.judge_fds, self.readers = [judge.out], [judge.pull]
                if serve is not None:
                    serve.extra = [judge.out] + ([channel.fileno()] if channel else [])
                try:
                    self._wait(judge.has_frame, serve, deadline)
                except TimeoutError:
                    judge.process.kill()
                    late = time.monotonic() >= self.wall
                    self.result.events.append(Event("wall" if late else "timeout", index))
                    cell.outputs.append(error("TimeoutError", f"проверка выполнялась дольше {self.limits.cell_timeout:g} с"))
                    if late:
                        raise self.session.stop("wall", index) from None
                    return
                message = judge.take()
                if message.get("op") == "done":
                    self._test_outputs(cell, message)
                    return
                if message.get("op") in ("get", "call"):
                    if serve is None:
                        serve = Request(self.session, SERVE, index, Quiet(), deadline, history=False)
                        channel = connect(self.kernel.bridge_host, deadline)
                    judge.send(self._relay(channel, serve, message, index))
        except Stop:
            judge.process.kill()
            raise
        finally:
            if channel is not None:
                close(channel)
            if serve is not None and self.kernel.alive():
                serve.extra = []
                while not serve.done:
                    serve.pump(WATCH_EVERY)

    def _relay(self, channel, serve, message: dict, index: int) -> dict:
        """Передать запрос судьи в ядро через сокет канала и вернуть ответ (или ошибку вместо него)."""
        if channel is None:
            return {"refused": "канал проверки в ядре не открылся (код слушателя сломал _autograde_bridge?)"}
        try:
            channel.sendall(frame(message))
        except OSError:
            return {"refused": "канал проверки в ядре закрыт (код слушателя сломал _autograde_bridge?)"}
        reader = FrameReader(channel, MAX_MESSAGE)
        serve.extra = [channel.fileno()]
        self.readers = [reader.pull]
        try:
            self._wait(reader.ready, serve, math.inf)
        except TimeoutError:  # не бывает: срок ячейки держит сам serve (прерывание, затем остановка)
            pass
        if reader.violation is not None:  # ответ сверх пределов канала: вина работы, как поток вывода
            raise self.session.stop("reply", index, str(reader.violation))
        if serve.interrupted_at is not None and reader.message is None:
            return {"raise": {"type": "TimeoutError", "mro": ["TimeoutError", "OSError", "Exception"],
                              "message": f"код слушателя выполнялся дольше {self.limits.cell_timeout:g} с и прерван"}}
        if reader.message is None:
            return {"refused": "ядро не ответило на запрос проверки (канал сломан кодом слушателя?)"}
        self.transferred += reader.size
        if self.transferred > self.limits.transfer_mb * 1024 * 1024:
            raise self.session.stop("transfer", index)
        return reader.message

    def _test_outputs(self, cell, message: dict) -> None:
        for output in message.get("outputs", []):
            try:
                node = new_output(**output)
            except (TypeError, ValueError):
                continue
            if self.budget.take(size(node)):
                cell.outputs.append(node)
            elif node.output_type == "error":
                cell.outputs.append(error("OutputLimitError", "вывод ноутбука превысил лимит"))

    def _both_cell(self, index: int) -> None:
        self._kernel_cell(index)
        source = self.nb.cells[index].source
        self.instructor.append(source)
        if self.judge is not None and self.judge.process.alive():
            try:
                self.judge.request({"op": "instructor", "source": source}, time.monotonic() + self.limits.cell_timeout)
            except (TimeoutError, EOFError):
                self.judge.process.kill()

    # ---------- весь ноутбук ----------
    def run(self) -> Execution:
        try:
            self.session = KernelSession(self.kernel, self.result, self.wall)
            if not self.session.ready(min(self.wall, self.started + STARTUP_TIMEOUT)):
                detail = f"ядро не ответило за {STARTUP_TIMEOUT:g} с" if self.kernel.alive() \
                    else self.kernel.exit_description()
                self.result.events.append(Event("startup", None, detail))
                self.result.completed = False
                not_executed(self.nb, 0, "ядро Python не запустилось")
                return self.result
            install = INSTALL_BRIDGE.replace("{path!r}", repr(self.kernel.bridge_inside)) \
                .replace("{output_cap}", str(self.limits.output_bytes + 1))
            self.session.execute(install, 0, Quiet(), time.monotonic() + STARTUP_TIMEOUT, history=False)
            for index, where in enumerate(self.plan.where):
                cell = self.nb.cells[index]
                if where == "skip":
                    if cell.cell_type == "code":
                        cell.outputs = []
                    continue
                try:
                    {"kernel": self._kernel_cell, "both": self._both_cell, "judge": self._judge_cell}[where](index)
                except EOFError as exc:  # судья упал: это сбой проверки, а не работы
                    self.result.events.append(Event("judge", index, self.judge.failure(exc) if self.judge else str(exc)))
                    cell.outputs.append(error("JudgeError", "проверка этой ячейки упала — это сбой проверки"))
                except Stop as stop:
                    self.result.completed = False
                    if not any(o.output_type == "error" for o in cell.outputs):
                        cell.outputs.append(error(*STOP_ERRORS[stop.kind](self.limits)))
                    not_executed(self.nb, index + 1, STOP_REASONS[stop.kind](self.limits))
                    break
        finally:
            self.result.seconds = time.monotonic() - self.started
            if self.judge is not None:
                self.judge.process.kill()
            if self.session is not None:
                self.session.close()
        return self.result



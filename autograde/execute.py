"""Исполнение ноутбука в ядре песочницы: ячейка за ячейкой, с лимитами времени и вывода.

Клиент ядра работает в доверенном процессе, снаружи песочницы: выходы ячеек приходят
сообщениями протокола Jupyter и записываются здесь, в памяти проверяющего, — файл с
«исполненным ноутбуком» код слушателя подменить не может. Каждую ячейку ждём не дольше
``cell_timeout``: потом прерываем (как Ctrl+C) и идём дальше; весь ноутбук — не дольше
``timeout``; сторож следит за памятью и числом процессов песочницы. Ячейки, до которых дело
не дошло, получают ошибку «не выполнялась» — иначе пустой выход теста засчитался бы как успех.

Чего модуль не делает: не решает, сколько стоит ячейка (scoring.py), и не запускает
песочницу (sandbox.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import zmq
from jupyter_client.blocking import BlockingKernelClient
from nbformat import NotebookNode
from nbformat.v4 import new_output, output_from_msg

from .sandbox import Kernel

MAX_MESSAGE = 8 * 1024 * 1024  # сообщение ядра больше этого ZeroMQ не примет и разорвёт связь: это тоже поток вывода
WATCH_EVERY = 0.25  # как часто сторож смотрит на память и процессы, секунд
INTERRUPT_GRACE = 5.0  # сколько ждать ядро после прерывания, секунд
STARTUP_TIMEOUT = 60.0
MEMORY_HELD = 0.85  # после MemoryError ядро, занявшее больше этой доли RLIMIT_AS, останавливаем
TRACEBACK_LINES = 100
NOT_EXECUTED = "NotExecuted"


@dataclass
class Event:
    """Что случилось при исполнении: ``kind`` — timeout, output, memory, processes, died, wall, startup."""

    kind: str
    cell: int | None  # номер ячейки в ноутбуке (с 0) или None
    detail: str = ""


@dataclass
class Execution:
    """Итог исполнения: события и то, дошло ли исполнение до конца."""

    events: list[Event] = field(default_factory=list)
    completed: bool = True  # все ячейки исполнены (пусть и с ошибками)
    seconds: float = 0.0

    def first(self, *kinds: str) -> Event | None:
        return next((e for e in self.events if e.kind in kinds), None)


def _size(output: dict) -> int:
    if output.get("output_type") == "stream":
        return len(output.get("text", ""))
    data = output.get("data", {})
    return sum(len(v) if isinstance(v, str) else len(str(v)) for v in data.values())


def _error(ename: str, evalue: str) -> NotebookNode:
    return new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


class _Cell:
    """Сборщик выходов одной ячейки с ограничением объёма."""

    def __init__(self, cell: NotebookNode, limit: int):
        self.cell = cell
        self.limit = limit
        self.size = 0
        self.flooded = False
        self.clear_pending = False
        cell.outputs = []

    def flood(self, name: str = "stdout") -> None:
        """Вывода слишком много: дальше не храним, ячейку прервут."""
        if not self.flooded:
            self.flooded = True
            note = f"\n… вывод обрезан: ячейка вывела больше {self.limit // 1024} КБ …\n"
            self.cell.outputs.append(new_output("stream", name=name, text=note))

    def add(self, msg: dict) -> None:
        kind = msg["msg_type"]
        content = msg["content"]
        if kind == "clear_output":
            if content.get("wait"):
                self.clear_pending = True
            else:
                self.cell.outputs = []
            return
        if kind not in ("stream", "display_data", "execute_result", "error"):
            return
        if self.clear_pending:
            self.cell.outputs = []
            self.clear_pending = False
        output = output_from_msg(msg)
        if kind == "error":
            tb = output.get("traceback", [])
            if len(tb) > TRACEBACK_LINES:
                output.traceback = tb[: TRACEBACK_LINES // 2] + ["… трассировка обрезана …"] + tb[-TRACEBACK_LINES // 2:]
            self.cell.outputs.append(output)  # ошибки храним всегда: по ним считаются баллы
            return
        self.size += _size(output)
        if self.size > self.limit:
            if not self.flooded:
                self.flood(output.get("name", "stdout") if kind == "stream" else "stdout")
            elif kind == "stream" and output.name == "stderr" and not any(
                    o.get("output_type") == "stream" and o.get("name") == "stderr" for o in self.cell.outputs):
                # что в тесте был stderr, важно для баллов (так считает nbgrader), даже если текст обрезан
                self.cell.outputs.append(new_output("stream", name="stderr", text="… stderr обрезан …\n"))
            return
        last = self.cell.outputs[-1] if self.cell.outputs else None
        if kind == "stream" and last is not None and last.get("output_type") == "stream" and last.name == output.name:
            last.text += output.text  # склеиваем куски потока: результат не зависит от того, как ядро их нарезало
        else:
            self.cell.outputs.append(output)


def _client(kernel: Kernel) -> BlockingKernelClient:
    context = zmq.Context()
    context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE)
    context.setsockopt(zmq.LINGER, 0)
    kc = BlockingKernelClient(context=context)
    kc.load_connection_info(kernel.connection_info)
    kc.start_channels(shell=True, iopub=True, stdin=False, hb=False, control=True)
    return kc


def _wait_ready(kc: BlockingKernelClient, kernel: Kernel, deadline: float) -> bool:
    """Ждать, пока ядро ответит на kernel_info; False — умерло или не успело."""
    while time.monotonic() < deadline:
        if not kernel.alive():
            return False
        msg_id = kc.kernel_info()
        until = time.monotonic() + 1.0
        while time.monotonic() < until:
            try:
                reply = kc.get_shell_msg(timeout=0.2)
            except Exception:  # queue.Empty
                if not kernel.alive():
                    return False
                continue
            if reply["parent_header"].get("msg_id") == msg_id:
                # дочитать iopub, чтобы старые статусы не путались с ячейками
                while kc.iopub_channel.msg_ready():
                    kc.get_iopub_msg(timeout=0)
                return True
    return False


def _interrupt(kc: BlockingKernelClient) -> None:
    msg = kc.session.msg("interrupt_request", {})
    kc.control_channel.send(msg)


def run(nb: NotebookNode, kernel: Kernel) -> Execution:
    """Исполнить код-ячейки ``nb`` (выходы пишутся в ``nb``) и вернуть события."""
    limits = kernel.limits
    started = time.monotonic()
    wall = started + limits.timeout
    result = Execution()
    kc = _client(kernel)
    try:
        if not _wait_ready(kc, kernel, min(wall, started + STARTUP_TIMEOUT)):
            if kernel.alive():
                result.events.append(Event("startup", None, f"ядро не ответило за {STARTUP_TIMEOUT:g} с"))
            else:
                result.events.append(Event("startup", None, kernel.exit_description()))
            result.completed = False
            _not_executed(nb, 0, "ядро Python не запустилось")
            return result
        poller = zmq.Poller()
        poller.register(kc.iopub_channel.socket, zmq.POLLIN)
        poller.register(kc.shell_channel.socket, zmq.POLLIN)
        # разрыв связи iopub значит: ядро прислало сообщение больше MAX_MESSAGE — поток вывода
        monitor = kc.iopub_channel.socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        poller.register(monitor, zmq.POLLIN)
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            if not cell.source.strip():
                cell.outputs = []
                continue
            stop = _run_cell(kc, poller, monitor, kernel, nb, index, wall, result)
            if stop:
                result.completed = False
                reason = {"wall": f"весь ноутбук выполнялся дольше {limits.timeout:g} с",
                          "memory": "превышен лимит памяти", "processes": "слишком много процессов",
                          "died": "ядро Python завершилось", "timeout": "ядро не ответило на прерывание",
                          "output": "поток вывода"}
                _not_executed(nb, index + 1, reason.get(stop, stop))
                break
    finally:
        result.seconds = time.monotonic() - started
        try:
            kc.iopub_channel.socket.disable_monitor()
        except Exception:
            pass
        kc.stop_channels()
        kc.context.destroy(linger=0)
    return result


def _not_executed(nb: NotebookNode, start: int, why: str) -> None:
    for cell in nb.cells[start:]:
        if cell.cell_type == "code" and cell.source.strip():
            cell.outputs = [_error(NOT_EXECUTED, f"ячейка не выполнялась: {why}")]
            cell.execution_count = None


def _watch(kernel: Kernel, cell, index: int, result: Execution, memory: bool = True) -> str | None:
    """Сторож: ядро живо, процессов и памяти не больше лимита. Иначе — причина остановки."""
    limits = kernel.limits
    if not kernel.alive():
        result.events.append(Event("died", index, kernel.exit_description()))
        cell.outputs.append(_error("DeadKernelError", f"ядро Python завершилось ({kernel.exit_description()})"))
        return "died"
    memory, procs = kernel.usage() if memory else (0, kernel.processes())
    if procs > limits.processes:
        result.events.append(Event("processes", index, str(procs)))
        kernel.kill()
        cell.outputs.append(_error("RuntimeError", f"ячейка запустила больше {limits.processes} процессов"))
        return "processes"
    if memory > limits.memory_bytes:
        result.events.append(Event("memory", index, f"{memory // (1024 * 1024)} МБ"))
        kernel.kill()
        cell.outputs.append(_error("MemoryError", f"процессы ячейки заняли больше {limits.memory_mb} МБ"))
        return "memory"
    return None


def _run_cell(kc, poller, monitor, kernel: Kernel, nb, index: int, wall: float, result: Execution) -> str | None:
    """Исполнить одну ячейку. Вернуть причину остановить весь ноутбук или None."""
    limits = kernel.limits
    cell = nb.cells[index]
    sink = _Cell(cell, limits.output_kb * 1024)
    msg_id = kc.execute(cell.source, store_history=True, allow_stdin=False, stop_on_error=False)
    deadline = time.monotonic() + limits.cell_timeout
    interrupted_at = None
    reply = None
    idle = False
    reply_at = None
    next_watch = 0.0
    while True:
        now = time.monotonic()
        if reply is not None and (idle or now - reply_at > 2.0):
            break
        if now >= wall:
            result.events.append(Event("wall", index))
            kernel.kill()
            cell.outputs.append(_error("TimeoutError", f"ноутбук выполнялся дольше {limits.timeout:g} с и был остановлен"))
            return "wall"
        if sink.flooded:
            # поток вывода забивает память ядра (буферы ZeroMQ): дождаться прерывания нельзя — исход
            # зависел бы от случая (MemoryError, SIGABRT). Останавливаем ядро сразу: результат один и тот же.
            result.events.append(Event("output", index))
            kernel.kill()
            cell.outputs.append(_error("OutputLimitError", f"ячейка вывела больше {limits.output_kb} КБ; "
                                                           "ядро остановлено"))
            return "output"
        if interrupted_at is None and now >= deadline:
            result.events.append(Event("timeout", index))
            _interrupt(kc)
            interrupted_at = now
        if interrupted_at is not None and now - interrupted_at > INTERRUPT_GRACE:
            kernel.kill()
            cell.outputs.append(_error("TimeoutError", f"ячейка выполнялась дольше {limits.cell_timeout:g} с "
                                                       "и не остановилась по прерыванию"))
            return "timeout"
        if now >= next_watch:
            next_watch = now + WATCH_EVERY
            stop = _watch(kernel, cell, index, result)
            if stop:
                return stop
        timeout_ms = max(1, int(min(WATCH_EVERY, max(0.0, min(deadline, wall) - now) + 0.01) * 1000))
        events = dict(poller.poll(timeout_ms))
        if monitor in events:
            while monitor.poll(0):
                monitor.recv_multipart()
            try:  # связь рвётся и когда ядро умерло: тогда это не поток вывода
                kernel.proc.wait(timeout=0.5)
            except Exception:
                sink.flood()
        if kc.iopub_channel.socket in events:
            while kc.iopub_channel.msg_ready():
                msg = kc.get_iopub_msg(timeout=0)
                if msg["parent_header"].get("msg_id") != msg_id:
                    continue
                if msg["msg_type"] == "status":
                    idle = idle or msg["content"].get("execution_state") == "idle"
                elif msg["msg_type"] == "execute_input":
                    cell.execution_count = msg["content"].get("execution_count")
                else:
                    sink.add(msg)
        if kc.shell_channel.socket in events:
            while kc.shell_channel.msg_ready():
                msg = kc.get_shell_msg(timeout=0)
                if msg["parent_header"].get("msg_id") == msg_id:
                    reply = msg
                    reply_at = time.monotonic()
    stop = _watch(kernel, cell, index, result, memory=False)  # fork-бомба, оставшаяся после ячейки, — на счёт этой ячейки
    if stop:
        return stop
    content = reply["content"]
    if content.get("status") == "error" and not any(o.output_type == "error" for o in cell.outputs):
        # ошибка была, но вывода об ошибке нет (например, подменили показ трассировки) — как в nbgrader
        cell.outputs.append(new_output("error", ename=content.get("ename", "Error"), evalue=content.get("evalue", ""),
                                       traceback=content.get("traceback") or [f"{content.get('ename', 'Error')}"]))
    if content.get("status") == "aborted" and not any(o.output_type == "error" for o in cell.outputs):
        cell.outputs.append(_error("Aborted", "ядро отказалось выполнять ячейку"))
    if interrupted_at is not None:
        if not any(o.output_type == "error" for o in cell.outputs):
            cell.outputs.append(_error("KeyboardInterrupt", "ячейка прервана"))
        cell.outputs.append(_error("TimeoutError", f"ячейка выполнялась дольше {limits.cell_timeout:g} с и была прервана"))
    if any(o.output_type == "error" and o.get("ename") == "MemoryError" for o in cell.outputs):
        # память кончилась: если её так и держат, дальше ядро упадёт где придётся — останавливаем здесь;
        # если большой запрос просто не удался и память свободна, работаем дальше
        used = kernel.address_space()
        if used > MEMORY_HELD * limits.memory_bytes:
            result.events.append(Event("memory", index, f"{used // (1024 * 1024)} МБ"))
            kernel.kill()
            return "memory"
    return None

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
больше ``MAX_MESSAGE`` (больше ZeroMQ не примет). Сторож следит за памятью и процессами ядра.
Ячейки, до которых дело не дошло, получают ошибку «не выполнялась».
"""

from __future__ import annotations

import json
import math
import os
import select
import socket
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

import zmq
from jupyter_client.blocking import BlockingKernelClient
from nbformat import NotebookNode
from nbformat.v4 import new_output, output_from_msg

from .sandbox import Process

MAX_MESSAGE = 16 * 1024 * 1024
WATCH_EVERY = 0.25
INTERRUPT_GRACE = 5.0
STARTUP_TIMEOUT = 60.0
MEMORY_HELD = 0.85  # после MemoryError ядро, занявшее больше этой доли RLIMIT_AS, останавливаем
TRACEBACK_LINES = 100
NOT_EXECUTED = "NotExecuted"
INSIDE = Path(__file__).resolve().parent / "inside"
BRIDGE_SOURCE = ((INSIDE / "codec.py").read_text(encoding="utf-8") + "\n"
                 + (INSIDE / "bridge.py").read_text(encoding="utf-8"))
INSTALL_BRIDGE = ("import sys as _s, types as _t\n"
                  "_m = _t.ModuleType('_autograde_bridge')\n"
                  f"exec(compile({BRIDGE_SOURCE!r}, '<autograde>', 'exec'), _m.__dict__)\n"
                  "_m.listen({path!r})\n"
                  "_s.modules['_autograde_bridge'] = _m\n"
                  "del _s, _t, _m")
SERVE = "__import__('_autograde_bridge').serve()"


@dataclass
class Event:
    """Что случилось: timeout, output, memory, processes, died, wall, startup, transfer, judge."""

    kind: str
    cell: int | None
    detail: str = ""


@dataclass
class Execution:
    events: list[Event] = field(default_factory=list)
    completed: bool = True
    seconds: float = 0.0

    def first(self, *kinds: str) -> Event | None:
        return next((e for e in self.events if e.kind in kinds), None)


class Stop(Exception):
    """Дальше ноутбук не исполняем: причина — ``kind`` события."""

    def __init__(self, kind: str):
        super().__init__(kind)
        self.kind = kind


def _error(ename: str, evalue: str) -> NotebookNode:
    return new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def _size(output: dict) -> int:
    if output.get("output_type") == "stream":
        return len(output.get("text", ""))
    if output.get("output_type") == "error":
        return len(output.get("evalue", "")) + sum(len(line) for line in output.get("traceback", []))
    data = output.get("data", {})
    return sum(len(v) if isinstance(v, str) else len(json.dumps(v)) for v in data.values())


class Budget:
    """Сколько байт вывода ещё можно принять от всего ноутбука."""

    def __init__(self, limit: int):
        self.limit, self.used = limit, 0

    def take(self, size: int) -> bool:
        self.used += size
        return self.used <= self.limit


class Sink:
    """Выходы одной ячейки: всё считается в общий бюджет ноутбука."""

    def __init__(self, cell: NotebookNode, budget: Budget):
        self.cell, self.budget = cell, budget
        self.flooded = False
        self.clear_pending = False
        cell.outputs = []

    def add(self, msg: dict) -> None:
        kind, content = msg["msg_type"], msg["content"]
        if kind == "clear_output":
            if content.get("wait"):
                self.clear_pending = True
            else:
                self.cell.outputs = []
            return
        if kind not in ("stream", "display_data", "execute_result", "error") or self.flooded:
            return
        if self.clear_pending:
            self.cell.outputs = []
            self.clear_pending = False
        output = output_from_msg(msg)
        if kind == "error":
            tb = output.get("traceback", [])
            if len(tb) > TRACEBACK_LINES:
                output.traceback = tb[: TRACEBACK_LINES // 2] + ["… трассировка обрезана …"] + tb[-TRACEBACK_LINES // 2:]
            output.traceback = [line[:4000] for line in output.traceback]
            output.evalue = (output.get("evalue") or "")[:20000]
        if not self.budget.take(_size(output)):
            self.flooded = True
            return
        last = self.cell.outputs[-1] if self.cell.outputs else None
        if kind == "stream" and last is not None and last.get("output_type") == "stream" and last.name == output.name:
            last.text += output.text  # результат не зависит от того, как ядро нарезало поток
        else:
            self.cell.outputs.append(output)


class _Quiet:
    """Выходы, которые никому не нужны (установка канала, печать кода слушателя внутри вызовов из тестов)."""

    flooded = False

    def add(self, msg: dict) -> None:
        return None


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
        self.judge: Judge | None = None
        self.instructor: list[str] = []  # ячейки преподавателя, уже исполненные у судьи (для перезапуска)
        self.result = Execution()
        self.budget = Budget(self.limits.output_bytes)
        self.transferred = 0
        self.started = time.monotonic()
        self.wall = self.started + self.limits.timeout

    # ---------- ядро ----------
    def _client(self) -> None:
        context = zmq.Context()
        context.setsockopt(zmq.MAXMSGSIZE, MAX_MESSAGE)
        context.setsockopt(zmq.LINGER, 0)
        self.kc = BlockingKernelClient(context=context)
        self.kc.load_connection_info(self.kernel.connection_info)
        self.kc.start_channels(shell=True, iopub=True, stdin=False, hb=False, control=True)
        self.poller = zmq.Poller()
        self.poller.register(self.kc.iopub_channel.socket, zmq.POLLIN)
        self.poller.register(self.kc.shell_channel.socket, zmq.POLLIN)
        # разрыв связи iopub значит: ядро прислало сообщение больше MAX_MESSAGE — поток вывода
        self.monitor = self.kc.iopub_channel.socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        self.poller.register(self.monitor, zmq.POLLIN)

    def _ready(self, deadline: float) -> bool:
        while time.monotonic() < deadline:
            if not self.kernel.alive():
                return False
            msg_id = self.kc.kernel_info()
            until = time.monotonic() + 1.0
            while time.monotonic() < until:
                try:
                    reply = self.kc.get_shell_msg(timeout=0.2)
                except Exception:  # queue.Empty
                    if not self.kernel.alive():
                        return False
                    continue
                if reply["parent_header"].get("msg_id") == msg_id:
                    while self.kc.iopub_channel.msg_ready():
                        self.kc.get_iopub_msg(timeout=0)
                    return True
        return False

    def _stop(self, kind: str, index: int | None, detail: str = "") -> Stop:
        self.result.events.append(Event(kind, index, detail))
        self.kernel.kill()
        return Stop(kind)

    def _watch(self, index: int, memory: bool = True) -> None:
        if not self.kernel.alive():
            self.result.events.append(Event("died", index, self.kernel.exit_description()))
            raise Stop("died")
        used, procs = self.kernel.usage() if memory else (0, self.kernel.usage()[1])
        if procs > self.limits.processes:
            raise self._stop("processes", index, str(procs))
        if used > self.limits.memory_bytes:
            raise self._stop("memory", index, f"{used // (1024 * 1024)} МБ")

    def _kernel_execute(self, source: str, index: int, sink, deadline: float, history: bool = True) -> dict:
        """Исполнить код в ядре до ответа; вернуть content ответа. Stop — если ядро пришлось остановить."""
        request = _Request(self, source, index, sink, deadline, history)
        while not request.done:
            request.pump(WATCH_EVERY)
        return request.finish()

    def _kernel_cell(self, index: int) -> None:
        cell = self.nb.cells[index]
        sink = Sink(cell, self.budget)
        content = self._kernel_execute(cell.source, index, sink, time.monotonic() + self.limits.cell_timeout)
        has_error = any(o.output_type == "error" for o in cell.outputs)
        if content.get("status") == "error" and not has_error:
            # ошибка была, но её вывода нет (подменили показ трассировки) — как в nbgrader
            cell.outputs.append(_error(content.get("ename", "Error"), content.get("evalue", "")))
        if content.get("status") == "aborted" and not has_error:
            cell.outputs.append(_error("Aborted", "ядро отказалось выполнять ячейку"))
        if content.get("autograde_timeout"):
            if not any(o.output_type == "error" for o in cell.outputs):
                cell.outputs.append(_error("KeyboardInterrupt", "ячейка прервана"))
            cell.outputs.append(_error("TimeoutError", f"ячейка выполнялась дольше {self.limits.cell_timeout:g} с "
                                                       "и была прервана"))
        if any(o.output_type == "error" and o.get("ename") == "MemoryError" for o in cell.outputs):
            used = self.kernel.address_space()  # память так и держат — дальше ядро упадёт где придётся
            if used > MEMORY_HELD * self.limits.memory_bytes:
                raise self._stop("memory", index, f"{used // (1024 * 1024)} МБ")

    # ---------- судья ----------
    def _judge(self) -> Judge:
        if self.judge is None or not self.judge.process.alive():
            self.judge = Judge(self.judge_factory())
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
                    cell.outputs.append(_error("TimeoutError", f"проверка выполнялась дольше {self.limits.cell_timeout:g} с"))
                    if late:
                        raise self._stop("wall", index) from None
                    return
                message = judge.frame()
                if message.get("op") == "done":
                    self._test_outputs(cell, message)
                    return
                if message.get("op") in ("get", "call"):
                    if serve is None:
                        serve = _Request(self, SERVE, index, _Quiet(), deadline, history=False)
                        channel = _connect(self.kernel.bridge_host, deadline)
                    judge.send(self._relay(channel, serve, message, index))
        except Stop:
            judge.process.kill()
            raise
        finally:
            if channel is not None:
                _close(channel)
            if serve is not None and self.kernel.alive():
                serve.extra = []
                while not serve.done:
                    serve.pump(WATCH_EVERY)

    def _relay(self, channel, serve, message: dict, index: int) -> dict:
        """Передать запрос судьи в ядро через сокет канала и вернуть ответ (или ошибку вместо него)."""
        if channel is None:
            return {"refused": "канал проверки в ядре не открылся (код слушателя сломал _autograde_bridge?)"}
        try:
            channel.sendall(_frame(message))
        except OSError:
            return {"refused": "канал проверки в ядре закрыт (код слушателя сломал _autograde_bridge?)"}
        reader = _FrameReader(channel, MAX_MESSAGE)
        serve.extra = [channel.fileno()]
        self.readers = [reader.pull]
        try:
            self._wait(reader.ready, serve, math.inf)
        except TimeoutError:  # не бывает: срок ячейки держит сам serve (прерывание, затем остановка)
            pass
        if serve.interrupted_at is not None and reader.message is None:
            return {"raise": {"type": "TimeoutError", "mro": ["TimeoutError", "OSError", "Exception"],
                              "message": f"код слушателя выполнялся дольше {self.limits.cell_timeout:g} с и прерван"}}
        if reader.message is None:
            return {"refused": "ядро не ответило на запрос проверки (канал сломан кодом слушателя?)"}
        self.transferred += reader.size
        if self.transferred > self.limits.transfer_mb * 1024 * 1024:
            raise self._stop("transfer", index)
        return reader.message

    def _test_outputs(self, cell, message: dict) -> None:
        for output in message.get("outputs", []):
            try:
                node = new_output(**output)
            except (TypeError, ValueError):
                continue
            if self.budget.take(_size(node)):
                cell.outputs.append(node)
            elif node.output_type == "error":
                cell.outputs.append(_error("OutputLimitError", "вывод ноутбука превысил лимит"))

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
            self._client()
            if not self._ready(min(self.wall, self.started + STARTUP_TIMEOUT)):
                detail = f"ядро не ответило за {STARTUP_TIMEOUT:g} с" if self.kernel.alive() \
                    else self.kernel.exit_description()
                self.result.events.append(Event("startup", None, detail))
                self.result.completed = False
                not_executed(self.nb, 0, "ядро Python не запустилось")
                return self.result
            install = INSTALL_BRIDGE.replace("{path!r}", repr(self.kernel.bridge_inside))
            self._kernel_execute(install, 0, _Quiet(), time.monotonic() + STARTUP_TIMEOUT, history=False)
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
                    cell.outputs.append(_error("JudgeError", "проверка этой ячейки упала — это сбой проверки"))
                except Stop as stop:
                    self.result.completed = False
                    if not any(o.output_type == "error" for o in cell.outputs):
                        cell.outputs.append(_error(*STOP_ERRORS[stop.kind](self.limits)))
                    not_executed(self.nb, index + 1, STOP_REASONS[stop.kind](self.limits))
                    break
        finally:
            self.result.seconds = time.monotonic() - self.started
            if self.judge is not None:
                self.judge.process.kill()
            try:
                self.kc.iopub_channel.socket.disable_monitor()
                self.kc.stop_channels()
                self.kc.context.destroy(linger=0)
            except Exception:  # noqa: BLE001 — клиента могло не успеть появиться
                pass
        return self.result


class _Request:
    """Один execute_request в ядре: ответ, статус idle, тайм-аут ячейки, сторож — по кусочку за вызов ``pump``."""

    def __init__(self, runner: Runner, source: str, index: int, sink, deadline: float, history: bool):
        self.runner, self.index, self.sink, self.deadline, self.history = runner, index, sink, deadline, history
        self.msg_id = runner.kc.execute(source, store_history=history, allow_stdin=False, stop_on_error=False)
        self.interrupted_at = self.reply = self.reply_at = None
        self.idle = False
        self.next_watch = 0.0
        self.extra: list[int] = []  # ещё дескрипторы, которых ждём вместе с ядром (судья, сокет канала)

    @property
    def done(self) -> bool:
        return self.reply is not None and (self.idle or time.monotonic() - self.reply_at > 2.0)

    def pump(self, wait: float) -> None:
        runner = self.runner
        now = time.monotonic()
        if self.done:  # ядро ответило: только подождать дескрипторы судьи и канала
            if self.extra:
                select.select(self.extra, [], [], max(0.0, wait))
            return
        if now >= runner.wall:
            raise runner._stop("wall", self.index)
        if getattr(self.sink, "flooded", False):
            raise runner._stop("output", self.index)
        if self.interrupted_at is None and now >= self.deadline:
            runner.result.events.append(Event("timeout", self.index))
            runner.kc.control_channel.send(runner.kc.session.msg("interrupt_request", {}))
            self.interrupted_at = now
        if self.interrupted_at is not None and now - self.interrupted_at > INTERRUPT_GRACE:
            raise runner._stop("hung", self.index)
        if now >= self.next_watch:
            self.next_watch = now + WATCH_EVERY
            runner._watch(self.index)
        limit = min(wait, max(0.0, min(self.deadline, runner.wall) - now) + 0.01)
        for fd in self.extra:
            runner.poller.register(fd, zmq.POLLIN)
        try:
            events = dict(runner.poller.poll(max(1, int(limit * 1000))))
        finally:
            for fd in self.extra:
                runner.poller.unregister(fd)
        kc = runner.kc
        if runner.monitor in events:
            while runner.monitor.poll(0):
                runner.monitor.recv_multipart()
            try:  # связь рвётся и когда ядро умерло: тогда это не поток вывода
                runner.kernel.proc.wait(timeout=0.5)
            except Exception:
                raise runner._stop("output", self.index) from None
        if kc.iopub_channel.socket in events:
            while kc.iopub_channel.msg_ready():
                msg = kc.get_iopub_msg(timeout=0)
                if msg["parent_header"].get("msg_id") != self.msg_id:
                    continue
                if msg["msg_type"] == "status":
                    self.idle = self.idle or msg["content"].get("execution_state") == "idle"
                elif msg["msg_type"] == "execute_input":
                    if isinstance(self.sink, Sink) and self.history:
                        self.sink.cell.execution_count = msg["content"].get("execution_count")
                else:
                    self.sink.add(msg)
        if kc.shell_channel.socket in events:
            while kc.shell_channel.msg_ready():
                msg = kc.get_shell_msg(timeout=0)
                if msg["parent_header"].get("msg_id") == self.msg_id:
                    self.reply, self.reply_at = msg, time.monotonic()

    def finish(self) -> dict:
        self.runner._watch(self.index, memory=False)  # fork-бомба, оставшаяся после ячейки, — на счёт этой ячейки
        content = self.reply["content"]
        if self.interrupted_at is not None:
            content["autograde_timeout"] = True
        return content


def _frame(message: dict) -> bytes:
    data = json.dumps(message, ensure_ascii=False).encode("utf-8")
    return struct.pack(">I", len(data)) + data


class _FrameReader:
    """Собирает один кадр из сокета канала, не больше ``limit`` байт."""

    def __init__(self, sock, limit: int):
        self.sock, self.limit = sock, limit
        self.buffer = b""
        self.message = None
        self.size = 0
        self.closed = False

    def ready(self) -> bool:
        return self.message is not None or self.closed

    def pull(self) -> None:
        while self.message is None and not self.closed:
            try:
                chunk = self.sock.recv(1 << 20, socket.MSG_DONTWAIT)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                self.closed = True
                return
            self.buffer += chunk
            if len(self.buffer) >= 4:
                (size,) = struct.unpack(">I", self.buffer[:4])
                if size > self.limit:
                    self.closed = True
                    return
                if len(self.buffer) >= 4 + size:
                    try:
                        self.message = json.loads(self.buffer[4:4 + size])
                    except ValueError:
                        self.message = {"refused": "повреждённый ответ ядра"}
                    if not isinstance(self.message, dict):
                        self.message = {"refused": "повреждённый ответ ядра"}
                    self.size = size


def _connect(path: str, deadline: float):
    """Соединиться с сокетом канала в ядре (он появляется, когда ядро исполнило установку канала)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    while True:
        try:
            sock.connect(path)
            return sock
        except OSError:
            if time.monotonic() > min(deadline, time.monotonic() + 5):
                sock.close()
                return None
            time.sleep(0.01)


def _close(sock) -> None:
    try:
        sock.sendall(_frame({"op": "end"}))
    except OSError:
        pass
    sock.close()


STOP_ERRORS = {
    "wall": lambda lim: ("TimeoutError", f"ноутбук выполнялся дольше {lim.timeout:g} с и был остановлен"),
    "output": lambda lim: ("OutputLimitError", f"ноутбук вывел больше {lim.output_kb} КБ; ядро остановлено"),
    "memory": lambda lim: ("MemoryError", f"процессы ячейки заняли больше {lim.memory_mb} МБ"),
    "processes": lambda lim: ("RuntimeError", f"ячейка запустила больше {lim.processes} процессов"),
    "died": lambda lim: ("DeadKernelError", "ядро Python завершилось"),
    "hung": lambda lim: ("TimeoutError", f"ячейка выполнялась дольше {lim.cell_timeout:g} с и не остановилась "
                                         "по прерыванию"),
    "transfer": lambda lim: ("OutputLimitError", f"тестам передано больше {lim.transfer_mb} МБ данных"),
}
STOP_REASONS = {
    "wall": lambda lim: f"весь ноутбук выполнялся дольше {lim.timeout:g} с",
    "output": lambda lim: "вывод ноутбука превысил лимит",
    "memory": lambda lim: "превышен лимит памяти",
    "processes": lambda lim: "слишком много процессов",
    "died": lambda lim: "ядро Python завершилось",
    "hung": lambda lim: "ядро не ответило на прерывание",
    "transfer": lambda lim: "тестам передано слишком много данных",
}


def not_executed(nb: NotebookNode, start: int, why: str) -> None:
    for cell in nb.cells[start:]:
        if cell.cell_type == "code" and cell.source.strip():
            cell.outputs = [_error(NOT_EXECUTED, f"ячейка не выполнялась: {why}")]
            cell.execution_count = None


class Judge:
    """Процесс судьи и кадры к нему: 4 байта длины + JSON."""

    def __init__(self, process: Process):
        self.process = process
        self.out = process.stdout.fileno()
        os.set_blocking(self.out, False)
        self.buffer = b""
        self.eof = False

    def send(self, message: dict) -> None:
        try:
            self.process.stdin.write(_frame(message))
            self.process.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            raise EOFError("судья не принимает запросы") from None

    def pull(self) -> None:
        while True:
            try:
                chunk = os.read(self.out, 1 << 20)
            except BlockingIOError:
                return
            except OSError:
                chunk = b""
            if not chunk:
                self.eof = True
                return
            self.buffer += chunk

    def has_frame(self) -> bool:
        if len(self.buffer) >= 4:
            (size,) = struct.unpack(">I", self.buffer[:4])
            if len(self.buffer) >= 4 + size:
                return True
        if self.eof:
            raise EOFError("судья закрыл канал")
        return False

    def frame(self) -> dict:
        (size,) = struct.unpack(">I", self.buffer[:4])
        data, self.buffer = self.buffer[4:4 + size], self.buffer[4 + size:]
        return json.loads(data)

    def receive(self, deadline: float) -> dict:
        while not self.has_frame():
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            select.select([self.out], [], [], min(left, 0.5))
            self.pull()
        return self.frame()

    def request(self, message: dict, deadline: float) -> dict:
        self.send(message)
        return self.receive(deadline)

    def failure(self, exc: Exception) -> str:
        self.process.kill()
        tail = self.process.tail.text()[-600:]
        return f"{exc}; {self.process.exit_description()}" + (f"; {tail}" if tail else "")

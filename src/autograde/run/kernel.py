"""Клиент ядра слушателя в доверенном процессе: запросы execute, тайм-ауты, сторож памяти и процессов.

Выходы ячеек приходят сообщениями протокола Jupyter и записываются здесь, в памяти проверяющего:
файла «исполненного ноутбука», который код мог бы подменить, нет. Запрос (``Request``) двигается
по кусочку за вызов ``pump``: так, пока ядро исполняет функцию слушателя по просьбе судьи, тот
же цикл ждёт и судью, и сокет канала. Одно сообщение ядра — не больше бюджета вывода (``output_kb``)
плюс ``MESSAGE_SLACK`` и не больше ``MAX_MESSAGE``: больше ZeroMQ не примет и разорвёт связь, а это
мы считаем потоком вывода (такое сообщение и так превысило бы бюджет). Каждая часть сообщения (JSON)
до разбора проверяется по сырым байтам (``codec.scan``): не глубже ``MESSAGE_DEPTH`` уровней и не
больше ``MESSAGE_NODES`` значений, иначе ядро останавливается (событие ``reply``, вина работы).
"""

from __future__ import annotations

import select
import time

import zmq
from jupyter_client.blocking import BlockingKernelClient

from autograde.judge.codec import LimitError, loads
from autograde.run.record import Event, Execution, Sink, Stop
from autograde.sandbox import Process

MAX_MESSAGE = 16 * 1024 * 1024
WATCH_EVERY = 0.25  # как часто сторож смотрит на память и процессы, секунд
INTERRUPT_GRACE = 5.0  # сколько ждать ядро после прерывания, секунд
STARTUP_TIMEOUT = 60.0
MESSAGE_DEPTH = 64
MESSAGE_SLACK = 1024 * 1024  # сверх бюджета вывода: заголовки и метаданные сообщения
MESSAGE_NODES = 200_000


def _unpack(data) -> dict:
    """Разбор части сообщения ядра — только в пределах (вместо json.loads из jupyter_client)."""
    return loads(bytes(data), MAX_MESSAGE, MESSAGE_DEPTH, MESSAGE_NODES)


class KernelSession:
    """Связь с одним ядром: клиент ZeroMQ, сторож, события в общий итог исполнения."""

    def __init__(self, kernel: Process, result: Execution, wall: float):
        self.kernel, self.result, self.wall = kernel, result, wall
        self.limits = kernel.limits
        context = zmq.Context()
        # сообщение больше бюджета вывода всё равно его превысит: не принимать его вовсе (память проверяющего)
        context.setsockopt(zmq.MAXMSGSIZE, min(MAX_MESSAGE, self.limits.output_bytes + MESSAGE_SLACK))
        context.setsockopt(zmq.LINGER, 0)
        self.kc = BlockingKernelClient(context=context)
        self.kc.load_connection_info(kernel.connection_info)
        self.kc.session.unpack = _unpack
        self.kc.start_channels(shell=True, iopub=True, stdin=False, hb=False, control=True)
        self.poller = zmq.Poller()
        self.poller.register(self.kc.iopub_channel.socket, zmq.POLLIN)
        self.poller.register(self.kc.shell_channel.socket, zmq.POLLIN)
        # разрыв связи iopub значит: ядро прислало сообщение больше предела — поток вывода
        self.monitor = self.kc.iopub_channel.socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)
        self.poller.register(self.monitor, zmq.POLLIN)

    def ready(self, deadline: float) -> bool:
        """Ждать, пока ядро ответит на kernel_info; False — умерло или не успело."""
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

    def stop(self, kind: str, index: int | None, detail: str = "") -> Stop:
        self.result.events.append(Event(kind, index, detail))
        self.kernel.kill()
        return Stop(kind)

    def watch(self, index: int, memory: bool = True) -> None:
        """Сторож: ядро живо, процессов и памяти не больше лимита — иначе Stop."""
        if not self.kernel.alive():
            self.result.events.append(Event("died", index, self.kernel.exit_description()))
            raise Stop("died")
        used, procs = self.kernel.usage() if memory else (0, self.kernel.usage()[1])
        if procs > self.limits.processes:
            raise self.stop("processes", index, str(procs))
        if used > self.limits.memory_bytes:
            raise self.stop("memory", index, f"{used // (1024 * 1024)} МБ")

    def execute(self, source: str, index: int, sink, deadline: float, history: bool = True) -> dict:
        """Исполнить код в ядре до ответа; вернуть content ответа. Stop — если ядро пришлось остановить."""
        request = Request(self, source, index, sink, deadline, history)
        while not request.done:
            request.pump(WATCH_EVERY)
        if getattr(sink, "flooded", False):  # один print больше лимита — одно сообщение, и ячейка уже кончилась
            raise self.stop("output", index)
        return request.finish()

    def close(self) -> None:
        try:
            self.kc.iopub_channel.socket.disable_monitor()
            self.kc.stop_channels()
            self.kc.context.destroy(linger=0)
        except Exception:  # noqa: BLE001 — закрываем то, что успело открыться
            pass


class Request:
    """Один execute_request: ответ, статус idle, тайм-аут ячейки, сторож — по кусочку за вызов ``pump``."""

    def __init__(self, session: KernelSession, source: str, index: int, sink, deadline: float, history: bool):
        self.session, self.index, self.sink, self.deadline, self.history = session, index, sink, deadline, history
        self.msg_id = session.kc.execute(source, store_history=history, allow_stdin=False, stop_on_error=False)
        self.interrupted_at = self.reply = self.reply_at = None
        self.idle = False
        self.next_watch = 0.0
        self.extra: list[int] = []  # ещё дескрипторы, которых ждём вместе с ядром (судья, сокет канала)

    @property
    def done(self) -> bool:
        return self.reply is not None and (self.idle or time.monotonic() - self.reply_at > 2.0)

    def pump(self, wait: float) -> None:
        session = self.session
        now = time.monotonic()
        if self.done:  # ядро ответило: только подождать дескрипторы судьи и канала
            if self.extra:
                select.select(self.extra, [], [], max(0.0, wait))
            return
        if now >= session.wall:
            raise session.stop("wall", self.index)
        if getattr(self.sink, "flooded", False):
            raise session.stop("output", self.index)
        if self.interrupted_at is None and now >= self.deadline:
            session.result.events.append(Event("timeout", self.index))
            session.kc.control_channel.send(session.kc.session.msg("interrupt_request", {}))
            self.interrupted_at = now
        if self.interrupted_at is not None and now - self.interrupted_at > INTERRUPT_GRACE:
            raise session.stop("hung", self.index)
        if now >= self.next_watch:
            self.next_watch = now + WATCH_EVERY
            session.watch(self.index)
        limit = min(wait, max(0.0, min(self.deadline, session.wall) - now) + 0.01)
        for fd in self.extra:
            session.poller.register(fd, zmq.POLLIN)
        try:
            events = dict(session.poller.poll(max(1, int(limit * 1000))))
        finally:
            for fd in self.extra:
                session.poller.unregister(fd)
        self._receive(events)

    def _receive(self, events: dict) -> None:
        session, kc = self.session, self.session.kc
        if session.monitor in events:
            while session.monitor.poll(0):
                session.monitor.recv_multipart()
            try:  # связь рвётся и когда ядро умерло: тогда это не поток вывода
                session.kernel.proc.wait(timeout=0.5)
            except Exception:
                raise session.stop("output", self.index) from None
        if kc.iopub_channel.socket in events:
            while kc.iopub_channel.msg_ready():
                msg = self._next(kc.get_iopub_msg)
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
                msg = self._next(kc.get_shell_msg)
                if msg["parent_header"].get("msg_id") == self.msg_id:
                    self.reply, self.reply_at = msg, time.monotonic()

    def _next(self, get) -> dict:
        """Следующее сообщение ядра; сверх пределов разбора или не по протоколу — остановить ядро (вина работы:
        сообщения пишет ядро, а в нём — код работы, которому доступны и сокеты, и ключ подписи)."""
        try:
            return get(timeout=0)
        except LimitError as exc:
            raise self.session.stop("reply", self.index, f"(сообщение Jupyter) {exc}") from None
        except (ValueError, TypeError):  # jupyter_client: подпись не сходится или повторена, неполное сообщение
            raise self.session.stop("reply", self.index, "(сообщение Jupyter) не по протоколу: подпись или "
                                    "формат не те") from None

    def finish(self) -> dict:
        self.session.watch(self.index, memory=False)  # fork-бомба, оставшаяся после ячейки, — на счёт этой ячейки
        content = self.reply["content"]
        if self.interrupted_at is not None:
            content["autograde_timeout"] = True
        return content

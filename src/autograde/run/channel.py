"""Каналы доверенного процесса: кадры к судье (его stdin/stdout) и к сокету ``_autograde_bridge`` в ядре.

Кадр — 4 байта длины (big-endian) и JSON (``codec.frame``: одна реализация на проверку, судью и ядро). Ответ ядра — чужие данные: до разбора он проверяется
по сырым байтам (``codec.scan``: размер, вложенность, число значений), и только потом разбирается
и передаётся судье; ответ сверх пределов не разбирается вовсе — это вина работы (``violation``).
Здесь же — код, который ставит канал в ядро слушателя до его первой ячейки (исходники
``judge/codec.py`` и ``judge/bridge.py``), и запрос, которым ядро начинает отвечать.
"""

from __future__ import annotations

import os
import select
import socket
import time

from autograde.judge.codec import FRAME_DEPTH, FRAME_NODES, HEADER, LimitError, frame, frame_size, loads
from autograde.sandbox import Process
from autograde.sandbox.policy import INSIDE_HOST

BRIDGE_SOURCE = ((INSIDE_HOST / "codec.py").read_text(encoding="utf-8") + "\n"
                 + (INSIDE_HOST / "bridge.py").read_text(encoding="utf-8"))
INSTALL_BRIDGE = ("import sys as _s, types as _t\n"
                  "_m = _t.ModuleType('_autograde_bridge')\n"
                  f"exec(compile({BRIDGE_SOURCE!r}, '<autograde>', 'exec'), _m.__dict__)\n"
                  "_m.listen({path!r})\n"
                  "_m.cap_output({output_cap})\n"
                  "_s.modules['_autograde_bridge'] = _m\n"
                  "del _s, _t, _m")
SERVE = "__import__('_autograde_bridge').serve()"


class FrameReader:
    """Собирает один кадр из сокета канала, не больше ``limit`` байт."""

    def __init__(self, sock, limit: int):
        self.sock, self.limit = sock, limit
        self.buffer = b""
        self.message = None
        self.size = 0
        self.closed = False
        self.violation: LimitError | None = None  # ответ сверх пределов канала: его не разбирали

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
            if len(self.buffer) >= HEADER:
                size = frame_size(self.buffer)
                if size > self.limit:
                    self.violation = LimitError("bytes", self.limit, f"больше {self.limit // 2**20} МБ "
                                                                     f"({size // 2**20} МБ)")
                    self.closed = True
                    return
                if len(self.buffer) >= HEADER + size:
                    try:
                        self.message = loads(self.buffer[HEADER:HEADER + size], self.limit, FRAME_DEPTH, FRAME_NODES)
                    except LimitError as exc:
                        self.violation, self.closed = exc, True
                        return
                    except ValueError:
                        self.message = {"refused": "повреждённый ответ ядра"}
                    if not isinstance(self.message, dict):
                        self.message = {"refused": "повреждённый ответ ядра"}
                    self.size = size


def connect(path: str, deadline: float):
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


def close(sock) -> None:
    try:
        sock.sendall(frame({"op": "end"}))
    except OSError:
        pass
    sock.close()



JUDGE_FRAME = 64 * 1024 * 1024


class JudgeChannel:
    """Процесс судьи и кадры к нему: 4 байта длины + JSON."""

    def __init__(self, process: Process):
        self.process = process
        self.out = process.stdout.fileno()
        os.set_blocking(self.out, False)
        self.buffer = b""
        self.eof = False

    def send(self, message: dict) -> None:
        try:
            self.process.stdin.write(frame(message))
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
        if len(self.buffer) >= HEADER and len(self.buffer) >= HEADER + frame_size(self.buffer):
            return True
        if self.eof:
            raise EOFError("судья закрыл канал")
        return False

    def take(self) -> dict:
        size = frame_size(self.buffer)
        data, self.buffer = self.buffer[HEADER:HEADER + size], self.buffer[HEADER + size:]
        try:  # судья доверенный, но в его кадрах — сообщения из кода слушателя: те же пределы
            return loads(data, JUDGE_FRAME, FRAME_DEPTH, FRAME_NODES)
        except ValueError as exc:
            raise EOFError(f"судья прислал кадр, который не разобрать: {exc}") from None

    def receive(self, deadline: float) -> dict:
        while not self.has_frame():
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            select.select([self.out], [], [], min(left, 0.5))
            self.pull()
        return self.take()

    def request(self, message: dict, deadline: float) -> dict:
        self.send(message)
        return self.receive(deadline)

    def failure(self, exc: Exception) -> str:
        self.process.kill()
        tail = self.process.tail.text()[-600:]
        return f"{exc}; {self.process.exit_description()}" + (f"; {tail}" if tail else "")

"""Жизнь процесса в песочнице: надзор за ресурсами и остановка (запуск — в launch.py).

Одна механика для двух программ: ядра слушателя (ipykernel, связь — сокеты ZeroMQ в его
``/run``) и судьи (связь — кадры по stdin/stdout). Вывод процесса на stdout/stderr (журнал)
читает поток-сборщик, который хранит только последние ``TAIL`` байт: ни файла на диске
проверяющего, ни неограниченного буфера. Модуль не решает, что можно внутри (policy.py), и не
исполняет ячейки (execute.py).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from pathlib import Path

from .policy import Limits

TAIL = 4096


class SandboxError(RuntimeError):
    """Песочница не запускается: проверка без неё небезопасна."""


class Tail(threading.Thread):
    """Читает поток до конца, хранит только хвост."""

    def __init__(self, fd: int):
        super().__init__(daemon=True)
        self.fd, self.data = fd, b""

    def run(self) -> None:
        with os.fdopen(self.fd, "rb", buffering=0) as stream:
            while chunk := stream.read(65536):
                self.data = (self.data + chunk)[-TAIL:]

    def text(self) -> str:
        return self.data.decode("utf-8", "replace").strip()


class Process:
    """Запущенная программа одной работы: процесс, надзор за памятью и числом процессов, остановка."""

    def __init__(self, proc: subprocess.Popen, child_pid: int, sandboxed: bool, limits: Limits, lifeline: int,
                 tail: Tail, cleanup: list[Path]):
        self.proc, self.child_pid, self.sandboxed, self.limits = proc, child_pid, sandboxed, limits
        self.lifeline, self.tail, self.cleanup = lifeline, tail, cleanup
        self.connection_info: dict | None = None
        self.bridge_inside = self.bridge_host = ""  # сокет канала судьи: путь внутри песочницы и снаружи
        self.stdin, self.stdout = proc.stdin, proc.stdout
        try:
            self._pidns = os.readlink(f"/proc/{child_pid}/ns/pid") if sandboxed else None
        except OSError:
            self._pidns = None
        self._pgid = os.getpgid(proc.pid) if not sandboxed else None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def exit_description(self) -> str:
        """Как закончился процесс, по-русски: «код выхода 3» или «сигнал SIGSEGV»."""
        code = self.proc.poll()
        if code is None:
            return "ещё работает"
        if code < 0 or code > 128:
            number = -code if code < 0 else code - 128
            try:
                return f"сигнал {signal.Signals(number).name}"
            except ValueError:
                return f"сигнал {number}"
        return f"код выхода {code}"

    def _pids(self) -> list[int]:
        """Процессы песочницы: потомки её первого процесса или, без песочницы, — её группа процессов."""
        if self._pidns is not None and os.path.exists(f"/proc/{self.child_pid}/task/{self.child_pid}/children"):
            found, queue = [], [self.child_pid]
            while queue:
                pid = queue.pop()
                found.append(pid)
                try:
                    for task in os.listdir(f"/proc/{pid}/task"):
                        with open(f"/proc/{pid}/task/{task}/children", "rb") as f:
                            queue.extend(int(child) for child in f.read().split())
                except (OSError, ValueError):
                    continue
            return found
        pids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                if self._pidns is not None:
                    if int(entry) != self.proc.pid and os.readlink(f"/proc/{entry}/ns/pid") == self._pidns:
                        pids.append(int(entry))
                elif self._pgid is not None:
                    with open(f"/proc/{entry}/stat", "rb") as f:
                        fields = f.read().rsplit(b")", 1)[1].split()
                    if int(fields[2]) == self._pgid:
                        pids.append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
        return pids

    def usage(self) -> tuple[int, int]:
        """(память всех процессов в байтах — PSS, число процессов кода без init) — для сторожа."""
        total, count = 0, 0
        for pid in self._pids():
            try:
                total += _pss(pid)
                count += 1
            except (OSError, ValueError, IndexError):
                continue
        if self._pidns is not None:
            count = max(0, count - 1)  # PID 1 — init песочницы, не код слушателя
        return total, count

    def address_space(self) -> int:
        """Наибольшая виртуальная память процесса — то, что ограничивает RLIMIT_AS."""
        largest = 0
        for pid in self._pids():
            try:
                with open(f"/proc/{pid}/statm", "rb") as f:
                    largest = max(largest, int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE"))
            except (OSError, ValueError, IndexError):
                continue
        return largest

    def kill(self) -> None:
        """Убить программу и всё, что она породила, и дождаться конца."""
        if self.lifeline is not None:  # init увидит конец «троса» и убьёт всё сам
            os.close(self.lifeline)
            self.lifeline = None
        if self.proc.poll() is None:
            try:
                if self._pgid is not None:
                    os.killpg(self._pgid, signal.SIGKILL)
                else:
                    self.proc.kill()  # bwrap умирает, --die-with-parent и PID namespace добивают остальное
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        if self._pgid is not None:
            try:
                os.killpg(self._pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        for folder in self.cleanup:
            shutil.rmtree(folder, ignore_errors=True)


def _pss(pid: int) -> int:
    """Пропорциональная память процесса в байтах (smaps_rollup; без него — RSS из statm)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except FileNotFoundError:
        pass
    with open(f"/proc/{pid}/statm", "rb") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

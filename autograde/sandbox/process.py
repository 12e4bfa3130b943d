"""Жизнь процесса в песочнице: запуск через bwrap (или без него), надзор за ресурсами, остановка.

Одна механика для двух программ: ядра слушателя (ipykernel, связь — сокеты ZeroMQ в его
``/run``) и судьи (связь — кадры по stdin/stdout). Вывод процесса на stdout/stderr (журнал)
читает поток-сборщик, который хранит только последние ``TAIL`` байт: ни файла на диске
проверяющего, ни неограниченного буфера. Модуль не решает, что можно внутри (policy.py), и не
исполняет ячейки (execute.py).
"""

from __future__ import annotations

import ctypes
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

from .policy import (
    HOME,
    INSIDE,
    INSIDE_HOST,
    NO_REFERENCE,
    RUN,
    UID_BASE,
    Limits,
    bwrap_argv,
    python_paths,
    rlimits,
    sandbox_env,
    seccomp_program,
)

TAIL = 4096


class SandboxError(RuntimeError):
    """Песочница не запускается: проверка без неё небезопасна."""


class _Tail(threading.Thread):
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
                 tail: _Tail, cleanup: list[Path]):
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


def _die_with(parent: int):
    """preexec_fn: дочерний процесс умрёт вместе с ``parent`` (PR_SET_PDEATHSIG)."""
    libc = ctypes.CDLL(None, use_errno=True)

    def hook() -> None:
        libc.prctl(1, signal.SIGKILL)
        if os.getppid() != parent:
            os._exit(1)

    return hook


def start(*, program: str, files: dict[str, Path], workdir_name: str, limits: Limits, sandboxed: bool, slot: int,
          exclude: list[Path], hide_reference: bool = False, kernel_args: list[str] | None = None,
          extra_env: dict[str, str] | None = None) -> Process:
    """Запустить ``program`` («kernel» или «judge») для одной работы.

    ``files`` — что положить в рабочую папку (имя → файл хозяина), только для чтения.
    """
    if sandboxed:
        return _start_sandboxed(program, files, workdir_name, limits, slot, exclude, hide_reference,
                                kernel_args or [], extra_env or {})
    return _start_plain(program, files, workdir_name, limits, kernel_args or [], extra_env or {})


def _connection(ip: str) -> dict:
    return {"shell_port": 1, "iopub_port": 2, "stdin_port": 3, "control_port": 4, "hb_port": 5, "ip": ip,
            "key": secrets.token_hex(32), "transport": "ipc", "signature_scheme": "hmac-sha256", "kernel_name": ""}


def _command(program: str, inside: str, connection_file: str, kernel_args: list[str]) -> list[str]:
    if program == "kernel":
        return [sys.executable, "-m", "ipykernel_launcher", "-f", connection_file, *kernel_args]
    return [sys.executable, "-E", "-s", f"{inside}/judge.py"]


def _pipe_with(data: bytes) -> int:
    read, write = os.pipe()
    os.write(write, data)  # < размера буфера канала: не блокирует
    os.close(write)
    return read


def _start_sandboxed(program, files, workdir_name, limits, slot, exclude, hide_reference, kernel_args,
                     extra_env) -> Process:
    uid = None
    if os.geteuid() == 0:  # свой uid на каждую песочницу слота: у ядра и судьи — разные
        uid = UID_BASE + ((os.getpid() % 4096) * 64 + (slot % 32) * 2 + (program == "judge")) % 0x0FFFFFFF
    connection = _connection(f"{RUN}/k") if program == "kernel" else None
    fds = {"info": None, "seccomp": _pipe_with(seccomp_program()), "reference_stub": _pipe_with(NO_REFERENCE.encode())}
    info_r, info_w = os.pipe()
    fds["info"] = info_w
    if connection is not None:
        fds["connection"] = _pipe_with(json.dumps(connection).encode())
    life_r, life_w = os.pipe()  # «трос»: второй конец — только у этого процесса (O_CLOEXEC)
    log_r, log_w = os.pipe()
    env = sandbox_env(HOME)
    env.update(extra_env)
    init = {"rlimits": rlimits(limits, True), "uid": uid, "sandboxed": True, "lifeline": life_r,
            "argv": _command(program, INSIDE, f"{RUN}/kernel.json", kernel_args)}
    argv = bwrap_argv(files=files, workdir_name=workdir_name, limits=limits, python_dirs=python_paths(exclude),
                      env=env, fds=fds, hide_reference=hide_reference,
                      command=[sys.executable, "-I", f"{INSIDE}/init.py", json.dumps(init)])
    pipes = subprocess.PIPE if program == "judge" else subprocess.DEVNULL
    passed = tuple(fd for fd in fds.values()) + (life_r,)
    try:
        proc = subprocess.Popen(argv, stdin=pipes, stdout=pipes if program == "judge" else log_w, stderr=log_w,
                                pass_fds=passed, start_new_session=True, preexec_fn=_die_with(os.getpid()))
    except BaseException:
        os.close(life_w)
        os.close(log_r)
        raise
    finally:
        for fd in (*passed, log_w):
            os.close(fd)
    tail = _Tail(log_r)
    tail.start()
    info = b""
    with os.fdopen(info_r, "rb") as f:
        while True:  # bwrap пишет JSON с child-pid, как только процесс внутри создан
            chunk = f.read1(4096)
            if not chunk:
                break
            info += chunk
            if b"child-pid" in info and info.rstrip().endswith(b"}"):
                break
    try:
        child_pid = int(json.loads(info)["child-pid"])
    except (ValueError, KeyError):
        os.close(life_w)
        proc.wait(timeout=10)
        tail.join(timeout=2)
        raise SandboxError("bwrap не запустил песочницу: " + tail.text()[-1000:]) from None
    process = Process(proc, child_pid, True, limits, life_w, tail, [])
    if connection is not None:
        process.connection_info = dict(connection, ip=f"/proc/{child_pid}/root{RUN}/k")
        process.bridge_inside, process.bridge_host = f"{RUN}/bridge", f"/proc/{child_pid}/root{RUN}/bridge"
    return process


def _start_plain(program, files, workdir_name, limits, kernel_args, extra_env) -> Process:
    """Без песочницы (--no-sandbox, check без bwrap): те же лимиты процесса, своя папка и группа процессов."""
    scratch = Path(tempfile.mkdtemp(prefix="ag-"))  # короткий путь: путь unix-сокета ограничен ~107 байтами
    home = scratch / "home"
    cwd = home / workdir_name
    cwd.mkdir(parents=True)
    for name, host_path in files.items():
        target = cwd / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(host_path, target)
    connection = _connection(str(scratch / "k")) if program == "kernel" else None
    if connection is not None:
        (scratch / "kernel.json").write_text(json.dumps(connection))
    env = sandbox_env(str(home))
    env.update(extra_env)
    life_r, life_w = os.pipe()
    log_r, log_w = os.pipe()
    init = {"rlimits": rlimits(limits, False), "uid": None, "sandboxed": False, "lifeline": life_r,
            "argv": _command(program, str(INSIDE_HOST), str(scratch / "kernel.json"), kernel_args)}
    argv = [sys.executable, "-I", str(INSIDE_HOST / "init.py"), json.dumps(init)]
    pipes = subprocess.PIPE if program == "judge" else subprocess.DEVNULL
    try:
        proc = subprocess.Popen(argv, stdin=pipes, stdout=pipes if program == "judge" else log_w, stderr=log_w,
                                cwd=cwd, env=env, pass_fds=(life_r,), start_new_session=True,
                                preexec_fn=_die_with(os.getpid()))
    except BaseException:
        os.close(life_w)
        os.close(log_r)
        raise
    finally:
        os.close(life_r)
        os.close(log_w)
    tail = _Tail(log_r)
    tail.start()
    process = Process(proc, proc.pid, False, limits, life_w, tail, [scratch])
    process.connection_info = connection
    process.bridge_inside = process.bridge_host = str(scratch / "bridge")
    return process


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

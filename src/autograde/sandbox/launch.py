"""Запуск программы проверки (ядро слушателя или судья) в песочнице bwrap или, без неё, обычным процессом.

Внутри всегда один и тот же init (``autograde/judge/sandbox_init.py``): лимиты процесса, «трос», сброс
прав и закрытие лишних дескрипторов. Ядро говорит с проверкой сокетами ZeroMQ в своём ``/run``
(снаружи — через ``/proc/<pid>/root``), судья — кадрами по stdin/stdout. Журнал программы (её
stdout/stderr) — в канал, из которого читается только хвост.
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
import time
from pathlib import Path

from .policy import (
    HOME,
    INSIDE,
    INSIDE_HOST,
    RUN,
    UID_BASE,
    Limits,
    bwrap_argv,
    hidden_libraries,
    no_library,
    python_paths,
    rlimits,
    sandbox_env,
    seccomp_program,
)
from .process import Process, SandboxError, Tail


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
        return [sys.executable, "-m", "ipykernel_launcher", "-f", connection_file,
                f"--IPKernelApp.exec_files={json.dumps([f'{inside}/kernel_start.py'])}", *kernel_args]
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
    if uid is not None:
        reap(uid)
    connection = _connection(f"{RUN}/k") if program == "kernel" else None
    fds = {"info": None, "seccomp": _pipe_with(seccomp_program())}
    if hide_reference:
        for name, _, _ in hidden_libraries():
            fds[f"stub:{name}"] = _pipe_with(no_library(name).encode())
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
                      command=[sys.executable, "-I", f"{INSIDE}/sandbox_init.py", json.dumps(init)])
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
    tail = Tail(log_r)
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


def _processes_of(uid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid:
                    found.append(int(entry))
            except OSError:
                continue
    return found


def reap(uid: int, grace: float = 5.0) -> None:
    """Перед запуском в слоте: дождаться, пока уйдут процессы прошлой песочницы с тем же uid, добить оставшиеся.

    Убитая песочница (поток вывода, fork-бомба, память) исчезает не мгновенно: её процессы ещё
    умирают, а RLIMIT_NPROC считает их на uid слота — и следующей работе в слоте досталось бы
    меньше процессов и потоков, тем меньше, чем сильнее загружена машина. Так итог зависел бы
    от нагрузки; после ``reap`` каждая работа начинает с пустого uid. Договор слота: в одном процессе
    проверки одновременно живёт не больше одной песочницы каждой программы (ядро, судья) на слот —
    потоки, которые проверяют параллельно, берут разные слоты (иначе ``reap`` одного убьёт песочницу другого).
    """
    deadline = time.monotonic() + grace
    while (left := _processes_of(uid)) and time.monotonic() < deadline:
        time.sleep(0.02)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    deadline = time.monotonic() + grace
    while _processes_of(uid) and time.monotonic() < deadline:
        time.sleep(0.02)


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
    argv = [sys.executable, "-I", str(INSIDE_HOST / "sandbox_init.py"), json.dumps(init)]
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
    tail = Tail(log_r)
    tail.start()
    process = Process(proc, proc.pid, False, limits, life_w, tail, [scratch])
    process.connection_info = connection
    process.bridge_inside = process.bridge_host = str(scratch / "bridge")
    return process



"""Песочница проверки: ядро слушателя и судья — каждый в своём bubblewrap, без сети, с лимитами.

``policy`` решает, что видно и можно внутри; ``launch`` запускает программу, ``process`` следит за ней;
программы, которые исполняются внутри (init, судья, канал), лежат в ``autograde/judge/``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .launch import start
from .policy import (
    HOME,
    INSTALL_HINT,
    Limits,
    bwrap_argv,
    closed_to_sandbox,
    python_paths,
    sandbox_env,
    seccomp_program,
)
from .process import Process, SandboxError

__all__ = ["INSTALL_HINT", "Limits", "Process", "SandboxError", "check_sandbox", "start"]

PROBE = ("import socket, sys\n"
         "assert open('probe.txt').read() == 'ok'\n"
         "import ipykernel\n"
         "try:\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\n    sys.exit('сеть доступна')\n"
         "except OSError:\n    pass\n"
         "import ctypes, platform\n"
         "libc = ctypes.CDLL(None, use_errno=True)\n"
         "keyctl = {'x86_64': 250, 'aarch64': 219}.get(platform.machine())\n"
         "if keyctl is not None and (libc.syscall(keyctl, 0, 0, 0, 0) != -1 or ctypes.get_errno() != 1):\n"
         "    sys.exit('фильтр seccomp не действует: keyctl не запрещён')\n"
         "print('ok')")


def check_sandbox(exclude: list[Path] | None = None) -> str | None:
    """None, если песочница здесь работает; иначе — причина по-русски и как это исправить."""
    if sys.platform != "linux":
        return f"Песочница bubblewrap есть только в Linux, а здесь {sys.platform}. " + INSTALL_HINT
    if shutil.which("bwrap") is None:
        return "Не найден bubblewrap (bwrap): без него код слушателей не изолировать. " + INSTALL_HINT
    try:
        seccomp = seccomp_program()
    except (ImportError, OSError, AttributeError) as exc:
        return f"Не собрать фильтр системных вызовов (libseccomp): {exc}. " + INSTALL_HINT
    python_dirs = python_paths(exclude or [])
    closed = closed_to_sandbox(python_dirs)
    if closed:
        shown = ", ".join(closed[:3]) + (f" и ещё {len(closed) - 3}" if len(closed) > 3 else "")
        return (f"Python не виден из песочницы: под root код слушателей запускается от отдельного пользователя, "
                f"а эти папки закрыты для «прочих» (нет прав r и x): {shown}. Откройте их вместе с содержимым: "
                f"chmod -R o+rX {closed[0]}")
    with tempfile.TemporaryDirectory(prefix="autograde-probe-") as tmp:
        marker = Path(tmp) / "probe.txt"
        marker.write_text("ok")
        pipes = [os.pipe() for _ in range(2)]
        (info_r, info_w), (sec_r, sec_w) = pipes
        os.write(sec_w, seccomp)
        os.close(sec_w)
        argv = bwrap_argv(files={"probe.txt": marker}, workdir_name="probe", limits=Limits(),
                          python_dirs=python_dirs, env=sandbox_env(HOME), hide_reference=False,
                          fds={"info": info_w, "seccomp": sec_r},
                          command=[sys.executable, "-I", "-c", PROBE])
        try:
            result = subprocess.run(argv, pass_fds=(info_w, sec_r), capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bwrap не запускается ({exc}). " + INSTALL_HINT
        finally:
            for fd in (info_w, info_r, sec_r):
                os.close(fd)
        if result.returncode != 0 or result.stdout.strip() != "ok":
            detail = (result.stderr or result.stdout).strip()[-500:]
            return f"bwrap установлен, но песочница не работает: {detail or 'код ' + str(result.returncode)}. " + INSTALL_HINT
    return None

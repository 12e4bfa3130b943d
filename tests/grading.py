"""Общее для тестов проверки группы: команда autograde, CSV, снимки папок, процессы песочницы, formgrader."""

from __future__ import annotations

import contextlib
import csv
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Лимиты с запасом: честная ячейка на загруженной 2-ядерной машине не должна упираться в тайм-аут
CELL_TIMEOUT = 20
LIMITS = ["--cell-timeout", str(CELL_TIMEOUT), "--timeout", "180", "--memory", "512"]
PLAIN_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin"}  # как у новичка: окружение не активировано


def sandbox_problem() -> str | None:
    from autograde.sandbox import check_sandbox

    problem = check_sandbox()
    # Установленный, но сломанный bwrap — падение, а не пропуск: иначе сломанная песочница прячется
    if problem is not None and (shutil.which("bwrap") is not None or os.environ.get("CI")):
        raise RuntimeError(f"Песочница проверки не работает: {problem}")
    return problem


def cli(*args, timeout: int = 900, env: dict | None = None, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    """``python -m autograde ...`` без активированного окружения (PATH без venv), как у преподавателя."""
    environment = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    environment.update(PLAIN_ENV)
    environment.update(env or {})
    return subprocess.run([sys.executable, "-m", "autograde", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, env=environment)


def read_csv(path: Path) -> dict[str, dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return {row["student_id"]: row for row in csv.DictReader(f)}


def snapshot(folder: Path) -> dict[str, tuple[str, int]]:
    """Содержимое и время изменения каждого файла: по ним видно, что сдачи не тронуты."""
    return {str(p.relative_to(folder)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def sandbox_processes(course: Path | None = None) -> list[str]:
    """Песочницы (bwrap с ядром или судьёй), если какие-то пережили проверку; с ``course`` — только этого курса
    (файлы задания монтируются из его labs/, так что путь курса есть в командной строке bwrap)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            ours = course is None or str(course).encode() in cmdline
            if ours and (b"/run/autograde/kernel.json" in cmdline or b"/opt/autograde/judge.py" in cmdline):
                found.append(entry + ": " + cmdline.replace(b"\0", b" ").decode(errors="replace")[:300])
    return found


def wait_no_sandbox(seconds: float = 10, course: Path | None = None) -> list[str]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and sandbox_processes(course):
        time.sleep(0.2)
    return sandbox_processes(course)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def formgrader(course: Path, tmp: Path, browser):
    """Jupyter-сервер с formgrader в каталоге курса и вкладка Chromium, уже вошедшая по токену."""
    port, token = free_port(), "autograde-test"
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env.update(PLAIN_ENV, JUPYTER_CONFIG_DIR=str(tmp / "jupyter-config"), JUPYTER_RUNTIME_DIR=str(tmp / "rt"))
    server = subprocess.Popen([sys.executable, "-m", "jupyter", "server", "--no-browser", "--allow-root",
                               f"--port={port}", "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}"],
                              cwd=course, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    page = browser.new_page()
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                page.goto(f"{base}/formgrader?token={token}")
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        yield base, page
    finally:
        page.close()
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)

"""Отдельно запущенные ``dask scheduler`` и ``dask worker`` на 127.0.0.1 — для tests/test_cluster.py и бенчмарка.

Так их запускает преподаватель на кластере (src/autograde/README.md), только на одной машине: планировщик
и работники — отдельные процессы, работники видят autograde только из окружения курса (без PYTHONPATH и
не из корня репозитория: их рабочая папка — папка журнала), по одному потоку на процесс. Они ограничены сами: планировщик выключается после простоя
(``--idle-timeout``), работники — без планировщика (``--death-timeout``); на выходе из
``scheduler_with_workers`` их группы процессов останавливаются.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from grading import free_port


def _dask(*args: str, env: dict | None, log: Path) -> subprocess.Popen:
    """``python -m dask ...`` в своей группе процессов (её и остановим)."""
    environment = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    environment.update({"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "1"}, **(env or {}))
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", "dask", *args], cwd=log.parent, env=environment, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)


@contextlib.contextmanager
def scheduler_with_workers(logs: Path, workers: int, env: dict | None = None, idle: int = 600):
    """Адрес планировщика (tcp://127.0.0.1:ПОРТ), к которому подключились ``workers`` процессов-работников.

    ``env`` — окружение работников поверх нашего (например, PATH без bwrap).
    """
    from distributed import Client

    port = str(free_port())
    address = f"tcp://127.0.0.1:{port}"
    processes = [_dask("scheduler", "--host", "127.0.0.1", "--port", port, "--no-dashboard", "--idle-timeout",
                       str(idle), env=None, log=logs / "scheduler.log")]
    try:
        processes.append(_dask("worker", address, "--nworkers", str(workers), "--nthreads", "1", "--no-dashboard",
                               "--host", "127.0.0.1", "--death-timeout", "60", env=env, log=logs / "workers.log"))
        with Client(address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=120)
        yield address
    finally:
        for process in reversed(processes):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        for process in reversed(processes):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()

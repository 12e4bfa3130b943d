"""Проверка группы на кластере Dask: ``grade --cluster local:2`` и отдельно запущенный планировщик.

Смешанная группа (честные, пустые, враждебные работы из tests/autograde_class.py) проверяется
локальным пулом — это эталон, — затем на кластере: CSV должен совпасть байт в байт. Отдельно:
работник, убитый посреди работы, ничего не меняет; работа, на которой работники умирают раз за
разом, становится строкой с ошибкой; мёртвый адрес планировщика — код 2 и одна строка по-русски;
работник без bubblewrap отказывается проверять (код 3), ничего не записав.

Планировщик и работники (tests/dask_processes.py) слушают только 127.0.0.1 и ограничены сами:
планировщик выключается после простоя, работники — без планировщика; в конце их группы процессов
останавливаются.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import autograde_class as ac
import pytest
from dask_processes import scheduler_with_workers
from grading import LIMITS, ROOT, cli, free_port, read_csv, sandbox_problem, sandbox_processes

LAB = ac.LAB
SANDBOX_PROBLEM = sandbox_problem()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(SANDBOX_PROBLEM is not None, reason=f"нет песочницы: {SANDBOX_PROBLEM}"),
]
MIXED = ("full", "partial", "untouched", "empty", "crash", "fork_bomb", "meta_script")


@pytest.fixture(scope="module")
def lab():
    return ac.Lab()


@pytest.fixture(scope="module")
def mixed(lab, tmp_path_factory):
    """Смешанная группа и её CSV от локального пула (эталон для кластера)."""
    tmp = tmp_path_factory.mktemp("mixed")
    everyone = ac.cases(lab, memory_mb=512, cell_timeout=int(LIMITS[1])) + ac.hostile_cases(lab)
    cases = [c for c in everyone if c.student_id in MIXED]
    assert len(cases) == len(MIXED)
    submissions = ac.write_class(tmp / "class", cases)
    course = ac.course_copy(tmp / "pool")
    result = cli("grade", LAB, "--submissions", submissions, "--course", course, "--workers", "2", *LIMITS)
    assert result.returncode == 0, result.stderr[-3000:]
    csv = (course / "autograde" / "grades" / f"{LAB}.csv").read_bytes()
    rows = read_csv(course / "autograde" / "grades" / f"{LAB}.csv")
    assert {sid: row["status"] for sid, row in rows.items()} == {c.student_id: c.status for c in cases}
    assert rows["full"]["score"] == "33" and rows["untouched"]["score"] == "0"
    return {"tmp": tmp, "submissions": submissions, "csv": csv, "cases": cases}


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory):
    with scheduler_with_workers(tmp_path_factory.mktemp("dask"), 2) as address:
        yield address


def grade_on(cluster: str, submissions: Path, course: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return cli("grade", LAB, "--submissions", submissions, "--course", course, "--cluster", cluster, *LIMITS, env=env)


def worker_counts(stdout: str) -> int:
    line = next(line for line in stdout.splitlines() if line.startswith("По работникам кластера"))
    return sum(int(part.split(" — ")[1].split()[0]) for part in line.split(": ", 1)[1].rstrip(".").split(", "))


def test_local_cluster_grades_exactly_like_the_pool(mixed):
    course = ac.course_copy(mixed["tmp"] / "local")
    scratch = mixed["tmp"] / "local-tmp"  # временные папки работ этой проверки: по ним видно её песочницы
    scratch.mkdir()
    result = grade_on("local:2", mixed["submissions"], course, env={"TMPDIR": str(scratch)})
    assert result.returncode == 0, result.stderr[-3000:]
    assert (course / "autograde" / "grades" / f"{LAB}.csv").read_bytes() == mixed["csv"]
    assert f"{LAB}: в таблице {len(MIXED)} работ" in result.stdout
    assert "По работникам кластера local:2: 0 — " in result.stdout and worker_counts(result.stdout) == len(MIXED)
    assert own_sandboxes(scratch) == [], "после проверки остались процессы песочницы"


def test_separate_scheduler_grades_exactly_like_the_pool(mixed, scheduler):
    course = ac.course_copy(mixed["tmp"] / "separate")
    result = grade_on(scheduler, mixed["submissions"], course)
    assert result.returncode == 0, result.stderr[-3000:]
    assert (course / "autograde" / "grades" / f"{LAB}.csv").read_bytes() == mixed["csv"]
    assert worker_counts(result.stdout) == len(MIXED)


def own_sandboxes(scratch: Path, seconds: float = 10) -> list[str]:
    """Песочницы одной проверки, если пережили её: временные папки её работ (``scratch``) есть в командной строке
    их bwrap. На машине могут идти и чужие проверки, в том числе из этого же каталога."""
    deadline = time.monotonic() + seconds
    while True:
        found = sandbox_processes(scratch)
        if not found or time.monotonic() > deadline:
            return found
        time.sleep(0.2)


def worker_pids(address: str) -> dict[str, int]:
    from distributed import Client

    with Client(address, timeout=30) as client:
        return client.run(os.getpid)


def ancestors(pid: int) -> set[int]:
    found = set()
    while pid > 1:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            break
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        found.add(pid)
    return found


def sandboxing() -> set[int]:
    """Предки всех процессов bwrap: среди них — работники, которые сейчас проверяют."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                if Path(f"/proc/{entry}/comm").read_text().strip() == "bwrap":
                    found |= ancestors(int(entry))
    return found


def descendants(pid: int) -> set[int]:
    return {int(e) for e in os.listdir("/proc") if e.isdigit() and pid in ancestors(int(e))}


def busy_worker(address: str, deadline: float) -> tuple[int, set[int]]:
    """pid работника, у которого сейчас запущена песочница, и его потомки в этот миг — его и убьём посреди
    работы. Песочница может закончиться между двумя взглядами в /proc: тогда ищем дальше."""
    while time.monotonic() < deadline:
        for pid in sandboxing() & set(worker_pids(address).values()):
            below = descendants(pid)
            if below:
                return pid, below
        time.sleep(0.1)
    raise AssertionError("ни один работник не запустил песочницу")


def test_worker_killed_mid_submission_changes_nothing(mixed, scheduler):
    course = ac.course_copy(mixed["tmp"] / "killed")
    environment = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    proc = subprocess.Popen([sys.executable, "-m", "autograde", "grade", LAB, "--submissions", str(mixed["submissions"]),
                             "--course", str(course), "--cluster", scheduler, *LIMITS], cwd=ROOT, env=environment,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    victim, its_sandboxes = busy_worker(scheduler, time.monotonic() + 120)
    os.kill(victim, signal.SIGKILL)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-3000:]
    assert (course / "autograde" / "grades" / f"{LAB}.csv").read_bytes() == mixed["csv"]
    assert worker_counts(stdout) == len(MIXED)
    assert its_sandboxes and not any(Path(f"/proc/{pid}").exists() for pid in its_sandboxes), \
        "песочницы убитого работника пережили его"
    from distributed import Client

    with Client(scheduler, timeout=30) as client:  # няня подняла работника заново: кластер снова полный
        client.wait_for_workers(2, timeout=120)


def test_submission_that_kills_every_worker_is_one_error_row(lab, mixed, scheduler, tmp_path):
    """Работника, который проверяет «slow», убиваем дважды: Dask сдаётся (KilledWorker), группа идёт дальше."""
    slow = lab.add_cell(lab.notebook(), None, "import time\ntime.sleep(60)")
    works = [ac.Case("slow", {f"{LAB}.ipynb": ac.dumps(slow)}, "error", 0, "", "убивает работников"),
             ac.Case("anna", {f"{LAB}.ipynb": ac.dumps(lab.notebook())}, "ok", 33, "", "полное решение")]
    submissions = ac.write_class(tmp_path / "class", works)
    course = ac.course_copy(tmp_path / "course")
    environment = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    proc = subprocess.Popen([sys.executable, "-m", "autograde", "grade", LAB, "--submissions", str(submissions),
                             "--course", str(course), "--cluster", scheduler, "--cell-timeout", "90", "--timeout",
                             "180", "--memory", "512"], cwd=ROOT, env=environment, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    from distributed import Client

    with Client(scheduler, timeout=30) as client:
        for _ in range(2):  # allowed-failures = 1: второе падение — KilledWorker
            deadline = time.monotonic() + 180
            while True:
                assert time.monotonic() < deadline, "работа slow так и не дошла до песочницы"
                holder = next((w for w, keys in client.processing().items()
                               if any(str(k).startswith("grade-slow-") for k in keys)), None)
                pid = client.run(os.getpid).get(holder) if holder else None
                if pid is not None and pid in sandboxing():
                    os.kill(pid, signal.SIGKILL)
                    break
                time.sleep(0.2)
            while holder in client.nthreads():  # планировщик заметил смерть: работа снова в очереди
                time.sleep(0.2)
    stdout, stderr = proc.communicate(timeout=600)
    assert proc.returncode == 0, stderr[-3000:]
    rows = read_csv(course / "autograde" / "grades" / f"{LAB}.csv")
    assert rows["anna"]["status"] == "ok" and rows["anna"]["score"] == "33"
    assert rows["slow"]["status"] == "error" and rows["slow"]["score"] == "0"
    assert "процесс проверки падал на этой работе 2 раза подряд" in rows["slow"]["message"], rows["slow"]
    with Client(scheduler, timeout=30) as client:
        client.wait_for_workers(2, timeout=120)


def test_dead_scheduler_address_exits_2_with_one_russian_line(mixed, tmp_path):
    course = ac.course_copy(tmp_path / "course")
    address = f"tcp://127.0.0.1:{free_port()}"  # порт свободен: там никто не слушает
    result = grade_on(address, mixed["submissions"], course)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("Ошибка: планировщик Dask") and address in lines[0] and "недоступен" in lines[0]
    assert not (course / "autograde" / "work" / LAB / "results").exists()


def test_worker_without_bubblewrap_refuses_and_writes_nothing(mixed, tmp_path):
    course = ac.course_copy(tmp_path / "course")
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    with scheduler_with_workers(tmp_path, 1, env={"PATH": str(fake_bin)}) as address:
        result = grade_on(address, mixed["submissions"], course)
    assert result.returncode == 3, result.stderr[-3000:]
    assert "Проверка остановлена" in result.stderr and "Не найден bubblewrap" in result.stderr
    assert "apt-get install bubblewrap" in result.stderr and "--no-sandbox" in result.stderr
    assert list((course / "autograde" / "work" / LAB / "results").glob("*.json")) == []

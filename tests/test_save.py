"""Запись итогов пачками (``autograde/store/save.py: Recorder``): ``kill -9`` главного процесса между итогами
пачки и её записью не теряет ничего — записанные пачки целы, прерванная проверится снова, база оценок и
файлы итогов не расходятся. Главный процесс здесь настоящий (отдельный Python), работы — без ядер."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from autograde_class import LAB, course_copy

pytestmark = pytest.mark.slow  # настоящие процессы главного и база nbgrader: в быстрый цикл не входит

# главный процесс: 5 работ, пачки по 2; «kill» — SIGKILL себе после пятой работы, до записи третьей пачки
MAIN = """
import os, signal, sys
from nbgrader.api import Gradebook
from autograde.course import Course
from autograde.lab.master import build_master
from autograde.lab.task import Context, Task
from autograde.run.worker import unexecuted
from autograde.sandbox import Limits
from autograde.store import save

course = Course.load(sys.argv[1])
lab = course.lab(sys.argv[2])
master = build_master(lab.source_notebook, lab.name, course.config)
ctx = Context(master, Limits(), True, (), {}, [], False)
with Gradebook(course.db_url, course.course_id) as gb:
    recorder = save.Recorder(lab, gb, size=2, seconds=1e9)
    for i in range(5):
        recorder.add(unexecuted(Task(f"s{i}", f"Слушатель {i}", "k", None), ctx, "error", f"файл {i} не JSON"))
    if sys.argv[3] == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    recorder.commit()
"""


def main_process(course: Path, mode: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", MAIN, str(course), LAB, mode], capture_output=True, text=True,
                          timeout=300)


def recorded(course: Path) -> tuple[set[str], set[str]]:
    """(чьи итоги лежат в results/, чьи сдачи есть в базе оценок)."""
    from nbgrader.api import Gradebook

    from autograde.course import Course

    loaded = Course.load(course)
    lab = loaded.lab(LAB)
    files = {p.stem for p in lab.results.glob("*.json")}
    with Gradebook(loaded.db_url, loaded.course_id) as gb:
        rows = {s.student.id for s in gb.assignment_submissions(LAB)}
    return files, rows


@pytest.fixture
def course(tmp_path):
    from autograde.course import Course
    from autograde.lab.master import build_master
    from autograde.store.gradebook import register

    root = course_copy(tmp_path / "course")
    loaded = Course.load(root)
    register(build_master(loaded.lab(LAB).source_notebook, LAB, loaded.config), loaded.db_url, loaded.course_id)
    return root


def test_kill_9_between_a_batchs_results_and_its_commit_loses_nothing_and_resumes(course):
    killed = main_process(course, "kill")
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    files, rows = recorded(course)
    # две полные пачки записаны целиком; пятая работа — ни итога, ни строки базы: её проверят снова
    assert files == rows == {"s0", "s1", "s2", "s3"}
    lab = course / "autograde"
    for student in sorted(files):
        result = json.loads((lab / "work" / LAB / "results" / f"{student}.json").read_text(encoding="utf-8"))
        assert result["status"] == "error" and result["message"].endswith("не JSON")
        assert (lab / "autograded" / student / LAB / f"{LAB}.ipynb").is_file()
        assert (lab / "feedback" / student / LAB / f"{LAB}.html").is_file()

    finished = main_process(course, "commit")
    assert finished.returncode == 0, finished.stderr
    files, rows = recorded(course)
    assert files == rows == {f"s{i}" for i in range(5)}


def test_a_failure_inside_a_batch_rolls_the_batch_back_and_keeps_the_ones_before(course, monkeypatch):
    """Сбой записи посреди пачки (например, диск полон): её работы не записаны вовсе, прежние пачки целы."""
    from nbgrader.api import Gradebook

    from autograde.course import Course
    from autograde.lab.master import build_master
    from autograde.lab.task import Context, Task
    from autograde.run.worker import unexecuted
    from autograde.sandbox import Limits
    from autograde.store import save

    loaded = Course.load(course)
    lab = loaded.lab(LAB)
    ctx = Context(build_master(lab.source_notebook, LAB, loaded.config), Limits(), True, (), {}, [], False)
    outcomes = [unexecuted(Task(f"s{i}", f"s{i}", "k", None), ctx, "error", "битый") for i in range(3)]
    real = save._write_files

    def full_disk(lab_, outcome):
        if outcome.result.student == "s2":
            raise OSError(28, "No space left on device")
        real(lab_, outcome)

    monkeypatch.setattr(save, "_write_files", full_disk)
    with pytest.raises(OSError), Gradebook(loaded.db_url, loaded.course_id) as gb, \
            save.Recorder(lab, gb, size=2) as recorder:
        for outcome in outcomes:
            recorder.add(outcome)
    files, rows = recorded(course)
    assert files == rows == {"s0", "s1"}

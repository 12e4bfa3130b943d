"""План проверки (``autograde/intake/plan.py``) напрямую, в tmp_path, без ядер и песочниц.

Обещания: слушатель из списка группы без сдачи — строка «не сдано» без исполнения; работа, чей ключ итога
не изменился, берётся готовой (``--force`` — проверяется снова); изменилось что-то, от чего зависит
итог (здесь — срок сдачи), — проверяется; ``--student`` сужает план и называет незнакомых.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

from unit_lab import master

from autograde.course import DEFAULT_ID_PATTERN
from autograde.intake.plan import plan
from autograde.intake.roster import Roster
from autograde.lab.result import Result
from autograde.lab.task import Context
from autograde.run.worker import unexecuted
from autograde.sandbox import Limits

LAB = "lab_unit"
NB = json.dumps({"cells": [{"cell_type": "code", "source": "x = 1", "metadata": {}}], "metadata": {},
                 "nbformat": 4, "nbformat_minor": 5}).encode()
WHEN = datetime(2026, 10, 1, 20, 30, tzinfo=timezone.utc)


def setup(tmp_path: Path, due: dict | None = None):
    """Курс из двух слушателей в списке (petrov сдал, sidorov — нет) и сдача petrov в папке ``in``."""
    roster = Roster(tmp_path / "roster.json")
    roster.students = [{"id": "petrov", "name": "Пётр Петров", "email": "", "aliases": []},
                       {"id": "sidorov", "name": "", "email": "", "aliases": []}]
    roster.save()
    notebook = tmp_path / "in" / "petrov" / LAB / f"{LAB}.ipynb"
    notebook.parent.mkdir(parents=True)
    notebook.write_bytes(NB)
    os.utime(notebook, (WHEN.timestamp(), WHEN.timestamp()))
    due = due or {}
    settings = SimpleNamespace(id_pattern=DEFAULT_ID_PATTERN, deadline=lambda student, lab: due.get(lab))
    course = SimpleNamespace(settings=settings, roster=tmp_path / "roster.json")
    lab = SimpleNamespace(name=LAB, history=tmp_path / "history", results=tmp_path / "results",
                          release_files=lambda: {}, result_file=lambda key: tmp_path / "results" / f"{key}.json")
    ctx = Context(master(), Limits(), True, (), {}, [], False)
    return course, lab, ctx, tmp_path / "in"


def graded(lab, ctx, todo) -> None:
    """Записать итог каждой работы плана, как это делает запись ``grade`` (ключ итога — ключ задачи)."""
    lab.results.mkdir(exist_ok=True)
    for task in todo.tasks:
        result = unexecuted(task, ctx, "ok", "").result
        (lab.results / f"{task.student}.json").write_text(result.to_json(), encoding="utf-8")


def test_a_listed_student_without_a_submission_is_a_quiet_row_and_the_submission_a_task(tmp_path):
    course, lab, ctx, source = setup(tmp_path)
    todo = plan(course, lab, ctx, source, [], force=False)
    assert [(t.student, t.display_id) for t in todo.tasks] == [("petrov", "Пётр Петров")]
    assert [(t.student, t.data, t.source) for t in todo.quiet] == [("sidorov", None, None)]
    assert todo.reused == 0 and todo.warnings == []
    assert todo.tasks[0].submitted_at == WHEN.isoformat() and todo.tasks[0].key


def test_an_unchanged_work_is_reused_and_force_grades_it_again(tmp_path):
    course, lab, ctx, source = setup(tmp_path)
    graded(lab, ctx, plan(course, lab, ctx, source, [], force=False))
    again = plan(course, lab, ctx, None, [], force=False)  # без --submissions: перепроверка принятого
    assert again.tasks == [] and again.reused == 1 and [t.student for t in again.quiet] == ["sidorov"]
    forced = plan(course, lab, ctx, None, [], force=True)
    assert [t.student for t in forced.tasks] == ["petrov"] and forced.reused == 0


def test_a_new_deadline_changes_the_key_so_the_work_is_graded_again(tmp_path):
    course, lab, ctx, source = setup(tmp_path)
    first = plan(course, lab, ctx, source, [], force=False)
    graded(lab, ctx, first)
    course.settings.deadline = lambda student, lab_name: datetime(2026, 9, 30, tzinfo=timezone.utc)
    later = plan(course, lab, ctx, None, [], force=False)
    assert [t.student for t in later.tasks] == ["petrov"] and later.tasks[0].deadline == "2026-09-30T00:00:00+00:00"
    assert later.tasks[0].key != first.tasks[0].key


def test_student_narrows_the_plan_by_name_and_names_the_unknown(tmp_path):
    course, lab, ctx, source = setup(tmp_path)
    todo = plan(course, lab, ctx, source, ["Пётр Петров", "ivanov"], force=False)
    assert [t.student for t in todo.tasks] == ["petrov"] and todo.quiet == []
    assert todo.warnings == ["ivanov: нет такого слушателя"]


def test_a_stored_result_from_someone_else_does_not_count_as_this_work(tmp_path):
    """Файл итога с чужим ключом (другая версия работы или подложенный) не делает работу «готовой»."""
    course, lab, ctx, source = setup(tmp_path)
    todo = plan(course, lab, ctx, source, [], force=False)
    lab.results.mkdir()
    stale = unexecuted(todo.tasks[0], ctx, "ok", "").result
    stale.key = "0" * 64
    (lab.results / "petrov.json").write_text(stale.to_json(), encoding="utf-8")
    assert [t.student for t in plan(course, lab, ctx, None, [], force=False).tasks] == ["petrov"]
    assert Result.from_json((lab.results / "petrov.json").read_text(encoding="utf-8")).key == "0" * 64


def test_an_unreadable_stored_result_means_grade_again_not_a_crash(tmp_path):
    """Итог прошлого запуска, который не читается (обрезан, чужой формат, не JSON), — не повод остановить группу."""
    course, lab, ctx, source = setup(tmp_path)
    graded(lab, ctx, plan(course, lab, ctx, source, [], force=False))
    for broken in (b"{not json", b"[1, 2]", b'{"key": 1, "surprise": true}', b"\xff\xfe"):
        (lab.results / "petrov.json").write_bytes(broken)
        assert [t.student for t in plan(course, lab, ctx, None, [], force=False).tasks] == ["petrov"], broken

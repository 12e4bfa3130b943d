"""Баллы, итоги и опоздание напрямую: ``autograde/lab/scoring.py`` (и ``late``), ``worker.unexecuted``, ``task.task_key``, сроки в ``course.Settings``.

Исполненный ноутбук здесь собирается руками (выходы ячеек — как их записал бы проверяющий), так
что ни ядро, ни судья, ни песочница не нужны. Эталон — крошечная лабораторная из tests/unit_lab.py:
тест ``test_f`` на 2 балла, письменный ответ ``essay`` на 3, задание ``task_review`` на 1.
"""

from __future__ import annotations

import copy
import dataclasses
from datetime import datetime, timedelta, timezone
from types import SimpleNamespace

import pytest
from conftest import ROOT
from nbformat.v4 import new_output
from traitlets.config import Config
from unit_lab import master, submitted

from autograde.course import CourseError, Settings
from autograde.lab.notebook import merge
from autograde.lab.scoring import MESSAGE_LIMIT, cut, first_error, late, score
from autograde.lab.task import Context, Task, task_key
from autograde.run.record import not_executed
from autograde.run.worker import unexecuted
from autograde.sandbox import Limits

TEST = 3  # номер ячейки test_f в собранном ноутбуке


def executed(lab, *outputs, **answers):
    """Собранный ноутбук, у теста которого — ``outputs`` (как после исполнения)."""
    nb = merge(submitted(lab, **answers), lab).notebook
    nb.cells[TEST].outputs = list(outputs)
    return nb


def error(ename, evalue=""):
    return new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def by_id(scores):
    return {s.grade_id: (s.kind, s.score, s.max_score, s.message) for s in scores}


# ---------- баллы за тесты ----------
def test_a_passing_test_earns_its_points_and_written_answers_wait_for_the_instructor():
    lab = master()
    scores = by_id(score(executed(lab, new_output("stream", name="stdout", text="ok\n"), essay="Ответ"), lab))
    assert scores == {"test_f": ("test", 2.0, 2.0, ""), "essay": ("manual", None, 3.0, ""),
                      "task_review": ("manual", None, 1.0, "")}


def test_an_unanswered_written_answer_scores_zero_with_no_answer():
    lab = master()
    assert by_id(score(executed(lab), lab))["essay"] == ("manual", 0, 3.0, "нет ответа")


@pytest.mark.parametrize("outputs, message", [
    ([error("AssertionError", "f(1): ожидали 2, получили 3")], "f(1): ожидали 2, получили 3"),
    ([error("AssertionError")], "AssertionError"),
    ([error("NameError", "name 'f' is not defined")], "NameError: name 'f' is not defined"),
    ([error("KeyboardInterrupt"), error("TimeoutError", "ячейка выполнялась дольше 60 с и была прервана")],
     "TimeoutError: ячейка выполнялась дольше 60 с и была прервана"),
    ([new_output("stream", name="stderr", text="  DeprecationWarning: x\n")],
     "вывод в stderr (nbgrader считает его ошибкой): DeprecationWarning: x"),
])
def test_a_failing_test_scores_zero_and_says_why(outputs, message):
    """Сообщение — суть ошибки теста; после прерывания — последнее объяснение проверки (а не KeyboardInterrupt)."""
    lab = master()
    assert by_id(score(executed(lab, *outputs), lab))["test_f"] == ("test", 0.0, 2.0, message)


def test_stderr_matching_the_courses_ignore_pattern_does_not_fail_a_test():
    warning = new_output("stream", name="stderr", text="FutureWarning: будет удалено\n")
    assert by_id(score(executed(master(), warning), master("FutureWarning")))["test_f"][1] == 2.0
    assert by_id(score(executed(master(), warning), master("OtherWarning")))["test_f"][1] == 0.0


def test_points_come_from_the_master_even_if_the_executed_notebook_claims_more():
    lab = master()
    nb = executed(lab)
    nb.cells[TEST].metadata.nbgrader["points"] = 100
    nb.cells[4].metadata.nbgrader.update(points=50, solution=False)
    scores = by_id(score(nb, lab))
    assert scores["test_f"][1:3] == (2.0, 2.0) and scores["essay"][2] == 3.0


def test_a_test_given_a_number_as_its_last_value_gets_that_partial_credit():
    """Частичный балл — правило nbgrader: последнее значение ячейки теста от 0 до максимума."""
    lab = master()
    result = new_output("execute_result", data={"text/plain": "0.5"}, execution_count=1)
    assert by_id(score(executed(lab, result), lab))["test_f"][:3] == ("test", 0.5, 2.0)


def test_tests_that_never_ran_score_zero_with_the_reason():
    """После остановки ядра ячейки дальше получают ошибку «не выполнялась» — пустой выход теста не засчитывается."""
    lab = master()
    nb = executed(lab)
    not_executed(nb, 2, "превышен лимит памяти")
    assert by_id(score(nb, lab))["test_f"] == ("test", 0.0, 2.0,
                                               "NotExecuted: ячейка не выполнялась: превышен лимит памяти")


def test_long_failure_messages_are_cut_at_the_limit_with_an_ellipsis():
    assert cut("коротко") == "коротко"
    long = "суть в начале; " + "x" * 10_000
    assert len(cut(long)) == MESSAGE_LIMIT and cut(long).endswith("…") and cut(long).startswith("суть в начале")
    cell = {"outputs": [error("AssertionError", long)]}
    assert first_error(cell) == cut(long)
    assert first_error({"outputs": [new_output("stream", name="stdout", text="печать")]}) == ""


# ---------- итог работы, которую не исполняли ----------
def context(policy="none", per_day=0.0, lab=None):
    return Context(lab or master(), Limits(), True, (), {}, [], False, policy, per_day)


def test_an_unreadable_work_scores_zero_of_the_test_points_and_says_why():
    lab = master()
    task = Task("petrov", "Пётр Петров", "k", None, "файл не JSON")
    outcome = unexecuted(task, context(lab=lab), "error", "файл не JSON (строка 1, позиция 1)")
    result = outcome.result
    assert (result.status, result.score, result.max_score) == ("error", 0.0, 2.0)  # максимум — только автотесты
    assert {(c["grade_id"], c["kind"], c["score"], c["max_score"]) for c in result.cells} == {
        ("test_f", "test", 0.0, 2.0), ("essay", "manual", 0.0, 3.0), ("task_review", "manual", 0.0, 1.0)}
    assert "Работа не проверена: баллы автопроверки 0 из 2" in outcome.feedback
    assert "файл не JSON (строка 1, позиция 1)" in outcome.feedback
    assert "Работа не проверена автоматически:** файл не JSON" in outcome.notebook


@pytest.mark.parametrize("status", ["error", "not_submitted"])
def test_the_notebook_of_an_unexecuted_work_shows_no_hidden_test_code(status):
    """Этот ноутбук ложится в autograded/ (его видит formgrader и слушатель в отзыве nbgrader): без скрытых тестов."""
    outcome = unexecuted(Task("petrov", "petrov", "k", None, "битый"), context(), status, "файл не JSON")
    assert "assert f(1) == 2" in outcome.notebook  # видимый тест на месте
    assert "f(2) == 4" not in outcome.notebook and "HIDDEN TESTS" not in outcome.notebook


def test_a_work_not_submitted_gets_a_row_but_no_feedback_page():
    outcome = unexecuted(Task("ivanova", "ivanova", "", None), context(), "not_submitted", "не сдано")
    assert (outcome.result.status, outcome.result.score, outcome.feedback) == ("not_submitted", 0.0, "")


# ---------- опоздание ----------
DEADLINE = "2026-10-01T23:59:00+03:00"


def at(delta: timedelta) -> str:
    """Время сдачи, как его хранит история (UTC), — на ``delta`` позже срока."""
    return (datetime.fromisoformat(DEADLINE) + delta).astimezone(timezone.utc).isoformat()


@pytest.mark.parametrize("policy, per_day, delta, hours, penalty", [
    ("zero", 0.0, timedelta(0), 0.0, 0.0),  # ровно в срок (в другом часовом поясе) — не опоздание
    ("zero", 0.0, -timedelta(days=3), 0.0, 0.0),  # раньше срока
    ("zero", 0.0, timedelta(seconds=1), 1 / 3600, 20.0),  # секунда после срока — уже опоздание
    ("none", 0.0, timedelta(days=2), 48.0, 0.0),  # none — только отметить часы
    ("per_day", 0.1, timedelta(seconds=1), 1 / 3600, 2.0),  # начатые сутки — целые сутки
    ("per_day", 0.1, timedelta(hours=24), 24.0, 2.0),
    ("per_day", 0.1, timedelta(hours=24, seconds=1), 24 + 1 / 3600, 4.0),
    ("per_day", 0.1, timedelta(days=3, hours=1), 73.0, 8.0),
    ("per_day", 0.1, timedelta(days=30), 720.0, 20.0),  # штраф не больше самих баллов
    ("per_day", 0.3, timedelta(days=1, hours=1), 25.0, 12.0),
])
def test_late_penalty_at_and_around_the_deadline(policy, per_day, delta, hours, penalty):
    task = Task("petrov", "petrov", "", b"{}", submitted_at=at(delta), deadline=DEADLINE)
    got_hours, got_penalty = late(task, context(policy, per_day), 20.0)
    assert got_hours == pytest.approx(hours) and got_penalty == pytest.approx(penalty)


@pytest.mark.parametrize("submitted_at, deadline", [(at(timedelta(days=5)), ""), ("", DEADLINE), ("", "")])
def test_no_deadline_or_no_submission_time_means_not_late(submitted_at, deadline):
    task = Task("petrov", "petrov", "", b"{}", submitted_at=submitted_at, deadline=deadline)
    assert late(task, context("zero"), 20.0) == (0.0, 0.0)


def test_a_late_work_with_zero_points_loses_nothing_more():
    task = Task("petrov", "petrov", "", b"{}", submitted_at=at(timedelta(days=2)), deadline=DEADLINE)
    assert late(task, context("per_day", 0.5), 0.0) == (48.0, 0.0)


def test_a_new_deadline_or_late_policy_regrades_the_work_and_nothing_else_does():
    """Итог кэшируется по ключу: срок, продление и политика — часть ключа, повторный запуск без изменений — нет."""
    ctx = context("per_day", 0.1, SimpleNamespace(digest="d"))
    task = Task("petrov", "petrov", "", b"{}", submitted_at=at(timedelta(hours=5)), deadline=DEADLINE)
    key = task_key(ctx, task)
    assert task_key(ctx, copy.deepcopy(task)) == key
    assert task_key(ctx, dataclasses.replace(task, deadline="2026-10-05T23:59:00+03:00")) != key
    assert task_key(dataclasses.replace(ctx, late_penalty="zero"), task) != key
    assert task_key(dataclasses.replace(ctx, late_penalty_per_day=0.2), task) != key
    assert task_key(ctx, dataclasses.replace(task, data=b"{ }")) != key


def grading(**values) -> Config:
    config = Config()
    for name, value in values.items():
        setattr(config.Grading, name, value)
    return config


def test_the_commented_late_policy_example_in_the_course_config_works_as_its_comments_say():
    """Преподаватель раскомментирует пример из nbgrader_config.py — срок, продление и штраф работают как написано."""
    lines = [line.lstrip("# ") for line in (ROOT / "nbgrader_config.py").read_text(encoding="utf-8").splitlines()
             if line.startswith("# c.Grading.")]
    c = Config()
    exec("\n".join(lines), {"c": c})  # noqa: S102 — строки конфигурации курса
    settings = Settings.from_config(c)
    assert (settings.late_penalty, settings.late_penalty_per_day) == ("per_day", 0.1)
    due, extended = settings.deadline("ivanova", "lab01_mini_rag"), settings.deadline("petrov", "lab01_mini_rag")
    assert due.isoformat() == "2026-10-01T23:59:00+03:00" and extended.isoformat() == "2026-10-05T23:59:00+03:00"
    assert settings.deadline("petrov", "lab02_own_docs") is None  # у другой лабораторной срока нет
    ctx = context(settings.late_penalty, settings.late_penalty_per_day)
    two_days_late = (due + timedelta(days=1, hours=1)).astimezone(timezone.utc).isoformat()
    for student, deadline, penalty in (("ivanova", due, 6.6), ("petrov", extended, 0.0)):
        task = Task(student, student, "", b"{}", submitted_at=two_days_late, deadline=deadline.isoformat())
        assert late(task, ctx, 33.0)[1] == pytest.approx(penalty)


def test_a_deadline_without_a_time_zone_takes_the_machines_offset_on_that_date(monkeypatch):
    """Срок зимой, проверка летом: смещение — то, что действует в день срока (DST), а не сегодняшнее."""
    import time
    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    try:
        winter = Settings.from_config(grading(due={"lab01": "2026-01-15 23:59"})).deadline("x", "lab01")
        summer = Settings.from_config(grading(due={"lab01": "2026-07-15 23:59"})).deadline("x", "lab01")
    finally:
        monkeypatch.undo()
        time.tzset()
    assert (winter.utcoffset(), summer.utcoffset()) == (timedelta(hours=1), timedelta(hours=2))


def test_a_deadline_without_a_time_zone_is_taken_in_the_machines_zone():
    settings = Settings.from_config(grading(due={"lab01": "2026-10-01 23:59"}))
    due = settings.deadline("x", "lab01")
    assert due.tzinfo is not None and due.replace(tzinfo=None) == datetime(2026, 10, 1, 23, 59)
    hour_late = (due + timedelta(hours=1)).astimezone(timezone.utc).isoformat()  # история хранит UTC
    assert late(Task("x", "x", "", b"{}", submitted_at=hour_late, deadline=due.isoformat()), context(), 1.0) == (1.0, 0.0)


@pytest.mark.parametrize("config, message", [
    (grading(late_penalty="half"), "Grading.late_penalty = 'half': бывает none, zero или per_day."),
    (grading(due={"lab01": "1 октября"}), "Grading.due['lab01']: '1 октября' — не дата. Пишите так: "
                                          "\"2026-10-01 23:59\" (ISO 8601)."),
    (grading(extensions={"lab01": {"petrov": "завтра"}}), "Grading.extensions['lab01']['petrov']: 'завтра' — не дата"),
    (grading(late_penalty="per_day", late_penalty_per_day="10%"), "Grading.late_penalty_per_day = '10%': нужна доля"),
    (grading(late_penalty="per_day", late_penalty_per_day=10), "Grading.late_penalty_per_day = 10: нужна доля"),
    (grading(late_penalty="per_day", late_penalty_per_day=-0.1), "Grading.late_penalty_per_day = -0.1: нужна доля"),
    (grading(late_penalty="per_day"), "late_penalty_per_day не задан"),
])
def test_a_wrong_late_setting_stops_with_the_fix_not_a_traceback(config, message):
    with pytest.raises(CourseError) as info:
        Settings.from_config(config)
    assert message in str(info.value)

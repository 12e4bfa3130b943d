"""Класс независимых слушателей: честная работа получает все баллы, ошибка — теряет их, с понятной причиной.

Каждый слушатель — файл ``tests/learners/<lab>/<имя>.cells``, написанный только по выданной версии
лабораторной и книге (не по solutions/ и не по коду minirag): разные стили (циклы и numpy, каждое
допустимое прочтение правил, числа, посчитанные иначе), и варианты с одной настоящей ошибкой.
Формат файла — в tests/learners/README.md. Вся группа лабораторной проверяется одной командой
``grade`` (как у преподавателя); потом каждую работу проверяет ``check`` (как у слушателя), и
вердикты видимых тестов обязаны совпасть. Validate (``nbgrader autograde``) честных работ проверяет
``test_labs_release.py`` — в одном запуске nbgrader с решениями.
"""

from __future__ import annotations

import json
import queue
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import autograde_class as ac
import pytest
from grading import LIMITS, cli, read_csv, sandbox_problem
from learner_class import ALL, LABS, learners, notebook

SANDBOX_PROBLEM = sandbox_problem()
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(SANDBOX_PROBLEM is not None, reason=f"нет песочницы: {SANDBOX_PROBLEM}")]


class Graded:
    """Каждая лабораторная — одним запуском grade на всех её слушателях, при первом обращении к ней
    (``pytest -k lab05`` проверяет только группу lab05); результаты по ячейкам."""

    def __init__(self, tmp: Path):
        self.tmp = tmp
        self.course = ac.course_copy(tmp / "course")
        self._labs: dict[str, dict] = {}

    def __getitem__(self, lab: str) -> dict:
        if lab not in self._labs:
            for learner in learners(lab):
                folder = self.tmp / "class" / lab / learner.name / lab
                folder.mkdir(parents=True)
                (folder / f"{lab}.ipynb").write_bytes(notebook(learner))
            result = cli("grade", lab, "--submissions", self.tmp / "class" / lab, "--course", self.course,
                         "--workers", "2", *LIMITS)
            assert result.returncode == 0, result.stderr[-3000:]
            results = {p.stem: json.loads(p.read_text(encoding="utf-8"))
                       for p in (self.course / "autograde" / "work" / lab / "results").glob("*.json")}
            self._labs[lab] = {"rows": read_csv(self.course / "autograde" / "grades" / f"{lab}.csv"),
                               "results": results}
        return self._labs[lab]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return Graded(tmp_path_factory.mktemp("learners"))


@pytest.mark.parametrize("lab", LABS)
def test_every_lab_has_a_class_of_independent_learners(lab):
    group = learners(lab)
    assert sum(learner.expect_full for learner in group) >= 3, f"{lab}: нужно не меньше трёх честных решений"


@pytest.mark.parametrize("learner", ALL, ids=lambda learner: f"{learner.lab}:{learner.name}")
def test_learner_gets_exactly_the_points_their_work_deserves(graded, learner):
    from autograde.course import safe_key

    result = graded[learner.lab]["results"][safe_key(learner.name)]
    assert result["status"] == "ok", (result["status"], result["message"])
    tests = {c["grade_id"]: c for c in result["cells"] if c["kind"] == "test"}
    lost = {gid for gid, c in tests.items() if c["score"] < c["max_score"]}
    if learner.expect_full:
        assert lost == set(), {gid: tests[gid]["message"][:300] for gid in lost}
    else:
        assert lost == learner.lose, {gid: tests[gid]["message"][:300] for gid in lost ^ learner.lose if gid in tests}
    for grade_id, substring in learner.messages.items():
        assert substring in tests[grade_id]["message"], (grade_id, tests[grade_id]["message"][:500])


def test_check_gives_the_learner_the_same_verdict_as_grade(graded):
    """Что слушатель видит в ``check`` (видимые тесты), то и получает у преподавателя."""
    from autograde.commands.check import check, render
    from autograde.course import safe_key
    from minirag import plural

    slots = queue.Queue()
    for slot in (1, 2):
        slots.put(slot)

    def one(learner):
        folder = graded.tmp / "check" / learner.name / learner.lab
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{learner.lab}.ipynb"
        path.write_bytes(notebook(learner))
        slot = slots.get()  # слот занят, пока идёт проверка: у двух потоков одновременно — разные uid песочницы
        try:
            return learner, check(path, graded.course, slot=slot)
        finally:
            slots.put(slot)

    with ThreadPoolExecutor(max_workers=2) as pool:
        reports = list(pool.map(one, ALL))
    differ, endings = [], []
    for learner, report in reports:
        cells = {c["grade_id"]: c for c in
                 graded[learner.lab]["results"][safe_key(learner.name)]["cells"]}
        # последние строки check: видимые баллы — те же, что у преподавателя, и сколько ещё не проверено
        seen = {r.grade_id for r in report.results if r.status in ("passed", "failed", "todo")}
        tests = {gid: c for gid, c in cells.items() if c["kind"] == "test"}
        got, most = (sum(tests[g][key] for g in seen if g in tests) for key in ("score", "max_score"))
        hidden = sum(c["max_score"] for g, c in tests.items() if g not in seen)
        *_, summary, verdict = render(report).splitlines()
        want = (f"Видимые тесты: {got:g} из {plural(int(most), 'балла', 'баллов', 'баллов')}."
                + (f" Ещё {plural(int(hidden), 'балл', 'балла', 'баллов')} проверят скрытые тесты преподавателя"
                   if hidden else ""))
        fails_visibly = bool(learner.lose & seen)
        if not summary.startswith(want) or verdict.startswith("Есть ошибки") != fails_visibly:
            endings.append((learner.lab, learner.name, summary, verdict[:40], want, fails_visibly))
        for r in report.results:
            if r.status in ("hidden", "manual") or cells.get(r.grade_id, {}).get("kind") != "test":
                continue
            graded_pass = cells[r.grade_id]["score"] >= cells[r.grade_id]["max_score"]
            if (r.status == "passed") != graded_pass:
                differ.append((learner.lab, learner.name, r.grade_id, r.status, cells[r.grade_id]["message"][:200]))
    assert differ == []
    assert endings == []

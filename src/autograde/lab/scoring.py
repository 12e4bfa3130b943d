"""Баллы по исполненному ноутбуку — как у ``nbgrader autograde``, снаружи песочницы.

``nbgrader.utils.determine_grade``: ошибка или stderr в тесте — 0, иначе полный балл; stderr,
подходящий под ``IgnorePattern`` курса, не считается. Баллы и тип ячейки — из эталона, не из сдачи.
Сообщение провала — сообщение теста целиком (до ``MESSAGE_LIMIT`` символов, дальше «…»): тесты
курса ставят суть в начало, ожидаемое и полученное — сразу за ней. Здесь же — всё остальное, что
работник считает по исполненному ноутбуку: пояснение к тестам, упавшим из-за несделанного задания выше
(``explain_upstream``), письменные ответы (``written_answers``) и штраф за опоздание (``late``).
Модуль не исполняет код.
"""

from __future__ import annotations

import copy
import hashlib
import math
import re
from dataclasses import asdict, dataclass
from datetime import datetime

from nbformat import NotebookNode
from nbgrader import utils as nbutils

from autograde.lab.master import Master
from autograde.lab.master import gid as _gid
from autograde.lab.task import Context, Task

MESSAGE_LIMIT = 3000


# ---------- баллы ----------
@dataclass
class CellScore:
    grade_id: str
    kind: str  # test — автотест; manual — оценивает преподаватель
    score: float | None
    max_score: float
    message: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def cut(text: str, limit: int = MESSAGE_LIMIT) -> str:
    """Обрезать длинное сообщение с «…» в конце: сообщения тестов ставят суть в начало."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def first_error(cell) -> str:
    """Почему тест не прошёл: сообщение последней ошибки (после прерывания это объяснение проверки) или stderr."""
    errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    if errors:
        ename, evalue = errors[-1].get("ename", "Error"), (errors[-1].get("evalue") or "").strip()
        if ename == "AssertionError" and evalue:
            return cut(evalue)
        return cut(f"{ename}: {evalue}") if evalue else ename
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream" and output.get("name") == "stderr":
            return cut("вывод в stderr (nbgrader считает его ошибкой): " + output.get("text", "").strip())
    return ""


def score(executed: NotebookNode, master: Master) -> list[CellScore]:
    """Баллы по ячейкам, как их считает nbgrader autograde; точки и тип ячейки — из эталона."""
    nb = copy.deepcopy(executed)
    if master.ignore_pattern:
        for cell in nb.cells:  # то же, что nbgrader.preprocessors.IgnorePattern
            if cell.cell_type == "code":
                cell.outputs = [o for o in cell.outputs if not (
                    o.output_type == "stream" and o.name == "stderr" and re.search(master.ignore_pattern, o.text))]
    scores = []
    for cell in nb.cells:
        gid = _gid(cell)
        if not gid or not (nbutils.is_grade(cell) or nbutils.is_task(cell)):
            continue
        reference = master.by_id[gid]
        cell.metadata["nbgrader"] = copy.deepcopy(reference.metadata["nbgrader"])
        points = float(reference.metadata["nbgrader"].get("points", 0))
        if nbutils.is_task(cell):
            scores.append(CellScore(gid, "manual", None, points))
            continue
        auto, max_points = nbutils.determine_grade(cell)
        if nbutils.is_solution(cell) or cell.cell_type != "code":
            scores.append(CellScore(gid, "manual", auto, max_points, "нет ответа" if auto == 0 else ""))
        else:
            scores.append(CellScore(gid, "test", float(auto), max_points, "" if auto == max_points else first_error(cell)))
    return scores


def explain_upstream(nb, scores: list[CellScore]) -> None:
    """Тест упал с NameError, потому что задание выше ещё не сделано (NotImplementedError): так и сказать."""
    by_id = {s.grade_id: s for s in scores}
    unfinished = False
    for cell in nb.cells:
        errors = [o.get("ename") for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        unfinished = unfinished or "NotImplementedError" in errors
        score = by_id.get(_gid(cell))
        if unfinished and score is not None and score.kind == "test" and score.message.startswith("NameError"):
            score.message = f"не сделано: этой проверке нужны результаты заданий выше ({score.message})"


def written_answers(nb, master: Master) -> tuple[dict[str, bool], dict[str, str]]:
    """Письменные ответы работы: (grade_id → написан ли, grade_id → хеш текста) — по ним ``finish`` видит,
    что ответ изменился после ручной проверки."""
    cells = [c for c in nb.cells if _gid(c) and nbutils.is_solution(c) and master.by_id.get(_gid(c)) is not None
             and not master.is_test(_gid(c))]
    answered = {_gid(c): c.metadata["nbgrader"].get("checksum") != nbutils.compute_checksum(c) for c in cells}
    answers = {_gid(c): hashlib.sha256(c.source.encode("utf-8")).hexdigest()[:16] for c in cells}
    return answered, answers


# ---------- опоздание ----------
def late(task: Task, ctx: Context, score: float) -> tuple[float, float]:
    """(часы опоздания, штраф в баллах) по времени сдачи LMS, сроку и политике курса."""
    if not task.submitted_at or not task.deadline:
        return 0.0, 0.0
    hours = (datetime.fromisoformat(task.submitted_at) - datetime.fromisoformat(task.deadline)).total_seconds() / 3600
    if hours <= 0:
        return 0.0, 0.0
    if ctx.late_penalty == "zero":
        return hours, score
    if ctx.late_penalty == "per_day":
        return hours, round(min(score, score * ctx.late_penalty_per_day * math.ceil(hours / 24)), 4)
    return hours, 0.0

"""Баллы по исполненному ноутбуку — как у ``nbgrader autograde``, снаружи песочницы.

``nbgrader.utils.determine_grade``: ошибка или stderr в тесте — 0, иначе полный балл; stderr,
подходящий под ``IgnorePattern`` курса, не считается. Баллы и тип ячейки — из эталона, не из сдачи.
Сообщение провала — сообщение теста целиком (до ``MESSAGE_LIMIT`` символов, дальше «…»): тесты
курса ставят суть в начало, ожидаемое и полученное — сразу за ней. Модуль не исполняет код.
"""

from __future__ import annotations

import copy
import re
from dataclasses import asdict, dataclass

from nbformat import NotebookNode
from nbgrader import utils as nbutils

from autograde.lab.master import Master
from autograde.lab.master import gid as _gid

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

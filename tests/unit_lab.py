"""Крошечная лабораторная для прямых тестов autograde (tests/test_unit_*.py): эталон без nbgrader CLI и без ядер.

``master()`` — эталон из шести ячеек с метаданными, как их оставляет ``nbgrader generate_assignment``:
заголовок (markdown только для чтения), подготовка (код только для чтения), решение ``answer``,
тест ``test_f`` на 2 балла со скрытой частью, письменный ответ ``essay`` на 3 балла и задание
``task_review`` на 1 балл, которое оценивает преподаватель. Выданная версия — без скрытых тестов.
"""

from __future__ import annotations

import copy

from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook
from nbgrader import utils as nbutils

from autograde.lab.master import Master, hide_tests

TEST_SOURCE = "assert f(1) == 2\n### BEGIN HIDDEN TESTS\nassert f(2) == 4\n### END HIDDEN TESTS"
STUB = "def f(x):\n    # ТВОЙ ОТВЕТ ЗДЕСЬ\n    raise NotImplementedError()"


def cell(kind: str, source: str, grade_id: str | None = None, **flags):
    """Ячейка эталона; с ``grade_id`` — с метаданными nbgrader (флаги — как в nbgrader) и контрольной суммой."""
    cell = (new_code_cell if kind == "code" else new_markdown_cell)(source)
    if grade_id:
        meta = {"grade": False, "solution": False, "locked": False, "task": False, "grade_id": grade_id,
                "schema_version": 3}
        meta.update(flags)
        cell.metadata["nbgrader"] = meta
        cell.metadata.nbgrader["checksum"] = nbutils.compute_checksum(cell)
    return cell


def master(ignore_pattern: str = "") -> Master:
    cells = [
        cell("markdown", "# Лабораторная", "header", locked=True),
        cell("code", "import math", "setup", locked=True),
        cell("code", STUB, "answer", solution=True),
        cell("code", TEST_SOURCE, "test_f", grade=True, locked=True, points=2),
        cell("markdown", "ТВОЙ ОТВЕТ ЗДЕСЬ", "essay", solution=True, grade=True, points=3),
        cell("markdown", "Опишите подход", "task_review", task=True, points=1),
    ]
    notebook = new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}})
    release = copy.deepcopy(notebook)
    for released in release.cells:
        released.source = hide_tests(released.source, "# скрытые тесты")
    return Master("lab_unit", notebook, release, "digest", "tests-digest", ("f",), ignore_pattern)


def submitted(master: Master, **answers: str) -> list[dict]:
    """Ячейки сдачи, как их возвращает ``read_submission``: выданная версия с ответами ``grade_id=текст``."""
    cells = []
    for released in master.release.cells:
        grade_id = released.metadata.get("nbgrader", {}).get("grade_id")
        source = answers.get(grade_id, released.source)
        cells.append({"cell_type": released.cell_type, "source": source,
                      "metadata": copy.deepcopy(dict(released.metadata))})
    return cells


def own(source: str, cell_type: str = "code", **nbgrader) -> dict:
    """Своя ячейка слушателя (с метаданными nbgrader, если он их туда вписал)."""
    return {"cell_type": cell_type, "source": source, "metadata": {"nbgrader": nbgrader} if nbgrader else {}}

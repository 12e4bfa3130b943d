"""Сдача → проверяемый ноутбук (``autograde/lab/notebook.py``) напрямую: разбор файла и сборка с эталоном.

Эталон — крошечная лабораторная из tests/unit_lab.py; ядра, песочница и nbgrader CLI не нужны.
Пределы размера файла, ячеек и числа значений JSON проверяет tests/test_limits.py — здесь всё
остальное, что обещает модуль: какой файл не ноутбук и почему, что из сдачи берётся, а что
отбрасывается, и правила сборки (тесты — из эталона, удалённое — на место, повторы, чужие
grade_id, потерянные метаданные).
"""

from __future__ import annotations

import json

import pytest
from nbgrader import utils as nbutils
from unit_lab import STUB, TEST_SOURCE, master, own, submitted

from autograde.lab.master import gid
from autograde.lab.notebook import SubmissionError, merge, read_submission, suspicious


def notebook_bytes(cells, **top) -> bytes:
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5, **top},
                      ensure_ascii=False).encode("utf-8")


def layout(merged):
    """(тип, grade_id, начало текста) каждой ячейки собранного ноутбука."""
    return [(c.cell_type, gid(c), c.source.split("\n")[0]) for c in merged.notebook.cells]


# ---------- разбор файла: что не ноутбук и почему ----------
@pytest.mark.parametrize("data, reason", [
    (b"", "файл пустой (0 байт): сдайте ноутбук заново, сохранив его (Ctrl+S)"),
    (b" \n\t ", "файл пустой (одни пробелы)"),
    (b'{"cells": [], "x": "\xff\xfe"}', "файл не в UTF-8 (байт 20): это не ноутбук Jupyter или он повреждён"),
    (b'{"cells": [{"cell_type": "code", "source": "x = 1', "файл обрезан: JSON кончается раньше времени"),
    (b'{"cells": [{"cell_type": "code"', "файл обрезан: JSON кончается раньше времени"),
    (b"<html>not a notebook</html>", "файл не JSON (строка 1, позиция 1"),
    (b'{"cells": [] oops}', "файл не JSON"),
    (b"[1, 2, 3]", "это JSON, но не ноутбук Jupyter (нет списка ячеек)"),
    (b'{"name": "lab01"}', "это JSON, но не ноутбук Jupyter (нет списка ячеек)"),
    (b'{"cells": {"a": 1}, "nbformat": 4}', "в ноутбуке нет списка ячеек"),
    (b'{"cells": [], "nbformat": 4}', "в ноутбуке нет ни одной ячейки"),
    (b'{"cells": [1, "x", {"cell_type": "widget"}], "nbformat": 4}', "в ноутбуке нет ни одной ячейки"),
    (b'{"cells": [' + b"[" * 70 + b"]" * 70 + b"]}", "файл вложен глубже 64 уровней: это не ноутбук Jupyter"),
    (b'{"cells": [], "nbformat": 99}', "ноутбук формата nbformat 99 не читается"),
])
def test_a_file_that_is_not_a_notebook_is_one_clear_reason(data, reason):
    with pytest.raises(SubmissionError) as info:
        read_submission(data)
    assert reason in str(info.value)


def test_only_cell_text_type_and_nbgrader_fields_are_taken_from_the_file():
    """Выходы, вложения и прочие метаданные слушателя отбрасываются сразу: их никто не исполняет и не показывает."""
    cells = [
        {"cell_type": "code", "source": ["def f(x):\n", "    return 2 * x\n", 42], "execution_count": 3,
         "outputs": [{"output_type": "display_data", "data": {"text/html": "<script>alert(1)</script>"}}],
         "metadata": {"nbgrader": {"grade_id": "answer", "solution": True, "points": 100, "grade": "yes",
                                   "checksum": "forged", "locked": 1},
                      "tags": ["raises-exception"], "autograde": {"kernel": True}}},
        {"cell_type": "markdown", "source": "ответ", "attachments": {"x.png": {"image/png": "AAAA"}},
         "metadata": {"nbgrader": {"grade_id": "g" * 201, "solution": True}}},
        {"cell_type": "raw", "source": "raw text", "metadata": {"nbgrader": "not a dict"}},
    ]
    parsed, notes = read_submission(notebook_bytes(cells))
    assert notes == []
    assert parsed == [
        {"cell_type": "code", "source": "def f(x):\n    return 2 * x\n",
         "metadata": {"nbgrader": {"grade_id": "answer", "solution": True}}},
        {"cell_type": "markdown", "source": "ответ", "metadata": {"nbgrader": {"solution": True}}},
        {"cell_type": "raw", "source": "raw text", "metadata": {}},
    ]


def test_damaged_cells_are_skipped_and_counted_and_the_rest_is_kept():
    cells = [{"cell_type": "code", "source": "x = 1", "metadata": {}}, "мусор", {"cell_type": "heading"}, None]
    parsed, notes = read_submission(notebook_bytes(cells))
    assert [c["source"] for c in parsed] == ["x = 1"] and notes == ["пропущено повреждённых ячеек: 3"]


def test_a_utf8_bom_is_accepted():
    parsed, _ = read_submission(b"\xef\xbb\xbf" + notebook_bytes([{"cell_type": "code", "source": "ё", "metadata": {}}]))
    assert parsed[0]["source"] == "ё"


def test_an_old_nbformat_3_notebook_is_upgraded_with_a_note():
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {"name": ""}, "worksheets": [{"metadata": {}, "cells": [
        {"cell_type": "code", "input": "x = 1", "language": "python", "outputs": [], "metadata": {}, "collapsed": False},
        {"cell_type": "markdown", "source": "текст", "metadata": {}}]}]}
    parsed, notes = read_submission(json.dumps(v3).encode())
    assert [(c["cell_type"], c["source"]) for c in parsed] == [("code", "x = 1"), ("markdown", "текст")]
    assert notes == ["старый формат nbformat 3: ноутбук переведён в nbformat 4"]


# ---------- сборка: решения — из сдачи, всё оцениваемое — из эталона ----------
def test_an_untouched_release_merges_into_the_master_cell_for_cell_with_hidden_tests_back():
    lab = master()
    merged = merge(submitted(lab), lab)
    assert merged.notes == []
    assert [gid(c) for c in merged.notebook.cells] == lab.order
    assert merged.notebook.cells[3].source == TEST_SOURCE  # выдан без скрытых тестов — проверяется с ними
    assert [c.id for c in merged.notebook.cells] == [f"cell-{n}" for n in range(6)]  # повторная проверка — тот же файл
    assert merged.notebook.metadata == lab.notebook.metadata


def test_the_learners_answer_is_kept_but_its_metadata_and_points_come_from_the_master():
    lab = master()
    cells = submitted(lab, answer="def f(x):\n    return 2 * x", essay="Потому что косинус.")
    cells[2]["metadata"]["nbgrader"].update(grade=True, points=100)  # «сам себе поставил» балл за решение
    merged = merge(cells, lab)
    answer, essay = merged.notebook.cells[2], merged.notebook.cells[4]
    assert answer.source == "def f(x):\n    return 2 * x" and essay.source == "Потому что косинус."
    assert answer.metadata == lab.by_id["answer"].metadata and "points" not in answer.metadata.nbgrader
    assert essay.metadata.nbgrader["points"] == 3


def test_a_learners_edit_of_a_test_or_read_only_code_cell_is_ignored_and_reported():
    lab = master()
    cells = submitted(lab, test_f="assert True  # тест «исправлен»", setup="import math\nf = lambda x: 2 * x",
                      header="# Мой заголовок")
    cells[3]["metadata"]["nbgrader"]["points"] = 50
    merged = merge(cells, lab)
    assert merged.notebook.cells[3].source == TEST_SOURCE and merged.notebook.cells[3].metadata.nbgrader["points"] == 2
    assert merged.notebook.cells[1].source == "import math"
    assert merged.notebook.cells[0].source == "# Лабораторная"  # инструкции — тоже из эталона (без замечания)
    assert merged.notes == ["изменены ячейки с тестами или только для чтения: setup, test_f — восстановлены из "
                            "задания и проверены исходными тестами"]


def test_a_test_cell_from_an_earlier_release_is_not_counted_as_an_edit():
    """После исправления теста слушатель, сдавший ноутбук прошлого выпуска, ни в чём не виноват."""
    lab = master()
    old = "assert f(1) == 2  # выпуск 1"
    merged = merge(submitted(lab, test_f=old), lab, released={"test_f": [old]})
    assert merged.notes == [] and merged.notebook.cells[3].source == TEST_SOURCE
    assert "test_f" in merge(submitted(lab, test_f=old), lab).notes[0]  # без истории выпусков — правка


def test_a_deleted_test_returns_as_late_and_a_deleted_answer_as_early_as_possible():
    """Тест встаёт после всего, что слушатель написал до следующей ячейки эталона; пустое решение — сразу за предыдущей."""
    lab = master()
    cells = submitted(lab)
    del cells[2:4]  # удалены и решение, и тест
    cells[2:2] = [own("def f(x):\n    return 2 * x"), own("print(f(3))")]
    merged = merge(cells, lab)
    assert layout(merged) == [
        ("markdown", "header", "# Лабораторная"), ("code", "setup", "import math"),
        ("code", "answer", "def f(x):"),  # заготовка — раньше кода слушателя: его f не затёрта
        ("code", None, "def f(x):"), ("code", None, "print(f(3))"),
        ("code", "test_f", "assert f(1) == 2"),  # тест — после кода слушателя: проверяет его f
        ("markdown", "essay", "ТВОЙ ОТВЕТ ЗДЕСЬ"), ("markdown", "task_review", "Опишите подход")]
    assert merged.notebook.cells[2].source == STUB
    assert merged.notes == ["удалены ячейки задания: answer, test_f — возвращены из задания (тесты проверяют как "
                            "обычно, пустое решение — заготовка)"]


def test_a_notebook_with_only_one_graded_cell_left_still_gets_every_master_cell():
    lab = master()
    merged = merge([own("def f(x):\n    return 2 * x", grade_id="answer", solution=True)], lab)
    assert [gid(c) for c in merged.notebook.cells] == lab.order
    assert "удалены ячейки задания: essay, test_f" in merged.notes[0]


def test_of_a_repeated_cell_the_last_copy_is_graded_and_earlier_ones_run_as_plain_cells():
    lab = master()
    cells = submitted(lab, answer="def f(x):\n    return 0  # черновик")
    answer, test = cells[2], cells[3]
    cells.insert(3, {**answer, "source": "def f(x):\n    return 2 * x"})
    cells.insert(0, {**test, "source": "assert True"})  # копия теста в начале: исполняется как обычная ячейка
    merged = merge(cells, lab)
    graded = [c for c in merged.notebook.cells if gid(c) == "answer"]
    assert len(graded) == 1 and graded[0].source == "def f(x):\n    return 2 * x"
    assert [gid(c) for c in merged.notebook.cells].count("test_f") == 1
    assert [(c.source, c.metadata) for c in merged.notebook.cells[:1] + merged.notebook.cells[3:4]] == [
        ("assert True", {}), ("def f(x):\n    return 0  # черновик", {})]
    assert merged.notebook.cells[5].source == TEST_SOURCE  # оценивается последняя копия — с текстом эталона
    assert merged.notes[0] == "ячейки повторены: answer, test_f — оценивается последняя копия"


def test_a_cell_with_an_unknown_grade_id_runs_as_an_ordinary_cell_without_points():
    lab = master()
    cells = submitted(lab)
    cells.insert(3, own("bonus = 1", grade_id="bonus_test", grade=True, points=10))
    cells.insert(3, own("x = 1", grade_id="no_flags"))  # grade_id без флагов — не ячейка nbgrader вовсе
    merged = merge(cells, lab)
    extra = [c for c in merged.notebook.cells if c.source in ("bonus = 1", "x = 1")]
    assert [c.metadata for c in extra] == [{}, {}]
    assert merged.notes == ["ячейки с чужими grade_id (переименованы?): bonus_test — исполнены как обычные, без баллов"]


def test_a_solution_cell_turned_into_markdown_gets_its_type_back():
    lab = master()
    cells = submitted(lab, answer="def f(x):\n    return 2 * x")
    cells[2]["cell_type"] = "markdown"
    merged = merge(cells, lab)
    assert merged.notebook.cells[2].cell_type == "code" and merged.notebook.cells[2].source.startswith("def f")
    assert merged.notes == ["у ячеек-решений изменён тип: answer — тип возвращён"]


def test_a_notebook_resaved_without_nbgrader_metadata_is_matched_by_text():
    """Ноутбук пересохранили в другом редакторе: ячейки находятся по тексту выданной версии, решение — по месту."""
    lab = master()
    cells = submitted(lab, answer="def f(x):\n    return 2 * x", essay="Мой ответ", test_f="assert True")
    for c in cells:
        c["metadata"] = {}
    merged = merge(cells, lab)
    assert [gid(c) for c in merged.notebook.cells] == lab.order
    assert merged.notebook.cells[2].source == "def f(x):\n    return 2 * x"
    assert merged.notebook.cells[3].source == TEST_SOURCE and merged.notebook.cells[4].source == "Мой ответ"
    assert merged.notes[0] == ("метаданные nbgrader потеряны (ноутбук пересохранён не в Jupyter?): ячейки сопоставлены "
                               "с заданием по тексту, найдено 6 из 6")


def test_an_unanswered_written_answer_keeps_the_masters_checksum_so_it_scores_no_answer():
    lab = master()
    essay = merge(submitted(lab), lab).notebook.cells[4]
    assert nbutils.determine_grade(essay) == (0, 3.0)
    answered = merge(submitted(lab, essay="Потому что косинус."), lab).notebook.cells[4]
    assert nbutils.determine_grade(answered) == (None, 3.0)  # ждёт преподавателя


# ---------- что показать преподавателю ----------
def test_suspicious_constructs_are_looked_for_in_the_learners_code_only():
    lab = master()
    clean = submitted(lab, answer="def f(x):\n    return 2 * x", test_f="import sys\nsys.modules['x'] = 1")
    assert suspicious(clean, lab) == []  # текст теста — не код слушателя (и всё равно заменяется эталоном)
    hostile = submitted(lab, answer="import builtins\ndef f(x):\n    return 2 * x")
    hostile += [own("get_ipython().input_transformers_post.append(lambda lines: lines)"),
                own("np.allclose = lambda *a, **k: True"), own("sys.modules['numpy'] = None", cell_type="markdown")]
    assert suspicious(hostile, lab) == ["builtins", "get_ipython", "input_transformers", "подмена функций библиотек"]

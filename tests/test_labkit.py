"""labkit: письменный ответ читается только из ноутбука под проверкой, не из соседнего файла; число слов
названо с согласованием.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lab_notebooks import nbgrader, solution_nb


# ---------- labkit: письменный ответ — только из ноутбука под проверкой ----------
def _answered(tmp_path: Path, name: str, text: str) -> Path:
    notebook = solution_nb("lab01_mini_rag")
    for cell in notebook["cells"]:
        if nbgrader(cell).get("grade_id") == "why_cosine":
            cell["source"] = text
    path = tmp_path / name
    path.write_text(json.dumps(notebook, ensure_ascii=False), encoding="utf-8")
    return path


def test_labkit_reads_the_notebook_under_check_never_a_neighbour(tmp_path, monkeypatch):
    import labkit

    monkeypatch.delenv("AUTOGRADE_NOTEBOOK", raising=False)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.chdir(tmp_path)
    _answered(tmp_path, "lab01_mini_rag.ipynb", "ТВОЙ ОТВЕТ ЗДЕСЬ: замени этот текст своим ответом.")
    assert labkit.written_answer("why_cosine").startswith("ТВОЙ ОТВЕТ ЗДЕСЬ")  # единственный ноутбук папки
    _answered(tmp_path, "lab01_mini_rag-Copy1.ipynb", "Готовый ответ из копии.")
    with pytest.raises(AssertionError, match="несколько ноутбуков"):  # гадать нельзя
        labkit.written_answer("why_cosine")
    monkeypatch.setenv("AUTOGRADE_NOTEBOOK", "lab01_mini_rag-Copy1.ipynb")  # так говорит проверка
    assert labkit.written_answer("why_cosine") == "Готовый ответ из копии."
    monkeypatch.setenv("AUTOGRADE_NOTEBOOK", str(tmp_path / "lab01_mini_rag.ipynb"))
    assert labkit.written_answer("why_cosine").startswith("ТВОЙ ОТВЕТ ЗДЕСЬ")
    monkeypatch.delenv("AUTOGRADE_NOTEBOOK")
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "lab01_mini_rag-Copy1.ipynb"))  # так говорит JupyterLab
    assert labkit.written_answer("why_cosine") == "Готовый ответ из копии."
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    monkeypatch.setenv("JPY_SESSION_NAME", str(_answered(elsewhere, "lab01_mini_rag.ipynb", "Чужой ответ.")))
    with pytest.raises(AssertionError, match="несколько ноутбуков"):  # ноутбук из другой папки — не наш
        labkit.written_answer("why_cosine")


def test_labkit_counts_words_with_agreement(tmp_path, monkeypatch, capsys):
    import labkit

    monkeypatch.delenv("AUTOGRADE_NOTEBOOK", raising=False)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.chdir(tmp_path)
    _answered(tmp_path, "lab01_mini_rag.ipynb", "слово " * 21)
    with pytest.raises(AssertionError, match="21 слово, нужно хотя бы 40"):
        labkit.check_written("why_cosine", "Почему косинус")
    _answered(tmp_path, "lab01_mini_rag.ipynb", "слово " * 42)
    assert labkit.check_written("why_cosine", "Почему косинус") is None  # число nbgrader принял бы за частичный балл
    assert "42 слова" in capsys.readouterr().out

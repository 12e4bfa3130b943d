"""Самопроверка слушателя ``python -m autograde check``: пропускает решения, валит выданные версии понятными
сообщениями, показывает сообщение проверки, без песочницы говорит почему и всё равно проверяет.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import ROOT
from lab_notebooks import LABS, nbgrader, release_nb, run


# ---------- самопроверка: python -m autograde check ----------
def check(path: Path) -> subprocess.CompletedProcess:
    return run([sys.executable, "-m", "autograde", "check", str(path)], cwd=ROOT)


@pytest.fixture(scope="session")
def checks():
    """Самопроверка каждого решения и каждой выданной версии — параллельно по две."""
    paths = [ROOT / kind / lab / f"{lab}.ipynb" for lab in LABS for kind in ("solutions", "labs")]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(check, paths))
    return {(path.parts[-3], path.parts[-2]): result for path, result in zip(paths, results)}


@pytest.mark.slow
@pytest.mark.parametrize("lab", LABS)
def test_checker_passes_the_solution(checks, lab):
    result = checks["solutions", lab]
    assert result.returncode == 0, f"{lab}: самопроверка решения не прошла:\n{result.stdout}\n{result.stderr}"
    assert "[пройдено]" in result.stdout and "[ошибка]" not in result.stdout and "[не сделано]" not in result.stdout
    assert "Всё видимое пройдено" in result.stdout and "проверят скрытые тесты преподавателя" in result.stdout


@pytest.mark.slow
@pytest.mark.parametrize("lab", LABS)
def test_checker_fails_the_untouched_release_with_readable_messages(checks, lab):
    result = checks["labs", lab]
    assert result.returncode == 1, f"{lab}: самопроверка нетронутой версии должна выйти с кодом 1:\n{result.stdout}\n{result.stderr}"
    out = result.stdout
    assert "[не сделано]" in out and "удали raise NotImplementedError()" in out
    assert "[скрыто]" in out, "скрытые тесты должны быть названы, а не засчитаны"
    assert "ТВОЙ ОТВЕТ ЗДЕСЬ" in out, "несделанный письменный ответ должен быть виден"
    assert "[ошибка]" not in out, f"{lab}: в нетронутой версии всё — «не сделано», а не ошибка:\n{out}"
    assert "Traceback" not in out and "Внимание" not in out, out
    assert "Итог:" in out and "[пройдено]" not in out


@pytest.mark.slow
def test_checker_shows_the_assertion_message_of_a_wrong_solution(tmp_path):
    lab = "lab01_mini_rag"
    notebook = release_nb(lab)
    for cell in notebook["cells"]:
        if nbgrader(cell).get("grade_id") == "l2_normalize":
            cell["source"] = "def l2_normalize(x):\n    x = np.asarray(x, dtype=float)\n    return x / np.linalg.norm(x, axis=-1, keepdims=True)\n"
    path = tmp_path / f"{lab}.ipynb"
    path.write_text(json.dumps(notebook, ensure_ascii=False), encoding="utf-8")
    result = check(path)
    assert result.returncode == 1
    line = next(line for line in result.stdout.splitlines() if "l2_normalize — видимые" in line)
    assert line.startswith("[ошибка]"), result.stdout
    assert "дала nan" in result.stdout and "Нулевой вектор должен остаться нулевым" in result.stdout


def test_checker_without_a_sandbox_says_why_and_still_checks(tmp_path):
    """Без bwrap (или с закрытой папкой Python под root) самопроверка идёт обычными процессами и называет
    причину, а не гадает «bubblewrap не найден»."""
    lab = "lab01_mini_rag"
    (tmp_path / "bin").mkdir()  # PATH без bwrap
    result = run([sys.executable, "-m", "autograde", "check", str(ROOT / "solutions" / lab / f"{lab}.ipynb")],
                 cwd=ROOT, path=str(tmp_path / "bin"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "без песочницы, обычными процессами" in result.stdout
    assert "Почему без песочницы: Не найден bubblewrap (bwrap)" in result.stdout
    assert "Всё видимое пройдено" in result.stdout and "проверят скрытые тесты преподавателя" in result.stdout


def test_checker_reports_a_missing_notebook_with_exit_code_2(tmp_path):
    result = check(tmp_path / "нет.ipynb")
    assert result.returncode == 2 and "Нет ноутбука" in result.stderr

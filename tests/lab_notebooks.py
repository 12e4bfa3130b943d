"""Общее для тестов лабораторных: список лабораторных, чтение ноутбуков и команда «как у преподавателя»."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from conftest import ROOT

LABS = ["lab01_mini_rag", "lab02_own_docs", "lab03_k3_vs_k5", "lab04_hash_failures", "lab05_bm25_hybrid",
        "lab06_grounded_answers"]
SECRET_MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
WORK_DIRS = ("submitted", "autograded", "feedback", "grades", "work", "solution", "source_with_tests")


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def nbgrader(cell: dict) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def solution_nb(lab: str) -> dict:
    return load(ROOT / "solutions" / lab / f"{lab}.ipynb")


def release_nb(lab: str) -> dict:
    return load(ROOT / "labs" / lab / f"{lab}.ipynb")


def run(args: list[str], cwd: Path, timeout: int = 600, path: str = "/usr/local/bin:/usr/bin:/bin") -> subprocess.CompletedProcess:
    """Команда как у преподавателя: окружение не активировано. nbgrader autograde здесь — то же, что делает
    Validate в JupyterLab (тесты в ядре слушателя), поэтому запрет курса на него снят (AUTOGRADE_ALLOW_NBGRADER)."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV",)}
    env.update(PATH=path, AUTOGRADE_ALLOW_NBGRADER="1")
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)

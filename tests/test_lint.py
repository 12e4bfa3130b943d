"""Код курса читают ученики: он проходит ruff с настройками из pyproject.toml — и библиотека, и главы книги."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    # book/ и solutions/ — ноутбуки: ruff проверяет и .ipynb (код ячеек); labs/ генерирует из solutions/ nbgrader
    targets = [p for p in ("src", "tests", "benchmarks", "book", "solutions") if (ROOT / p).exists()]
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *targets], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr

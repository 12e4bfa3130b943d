"""Код курса читают ученики: он проходит ruff с настройками из pyproject.toml."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    targets = [p for p in ("src", "tests", "benchmarks", "autograde") if (ROOT / p).exists()]
    result = subprocess.run([sys.executable, "-m", "ruff", "check", *targets], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr

"""Общие фикстуры тестов."""

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def reference():
    """Эталонные векторы hash-эмбеддера и случаи чанкинга (копия shared/reference)."""
    return json.loads((ROOT / "tests" / "reference" / "hash_embedder_vectors.json").read_text(encoding="utf-8"))

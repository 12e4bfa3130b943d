"""Общие фикстуры тестов."""

import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]  # корень репозитория: один на все тесты (``from conftest import ROOT``)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def reference():
    """Эталонные векторы hash-эмбеддера и случаи чанкинга (копия shared/reference)."""
    return json.loads((ROOT / "tests" / "reference" / "hash_embedder_vectors.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def browser():
    """Один headless Chromium (Debian) на все браузерные тесты: Playwright не скачивает свой браузер."""
    if CHROMIUM is None:
        pytest.skip("Нет Chromium: поставь его (apt-get install chromium) — .ci/run делает это сам")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=[
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"])
        yield browser
        browser.close()

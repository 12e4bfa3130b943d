"""Общие фикстуры тестов."""

import json
import shutil
import subprocess
import sys
import sysconfig
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


def _readme_build_is_current(html: Path) -> bool:
    """Сборка первой команды README (``_build/html``) годится тестам, если она закончена (``.buildinfo``
    Sphinx пишет последним), без отчётов об упавших ячейках и моложе каждого файла репозитория под git и
    установленных пакетов. Правка главы, библиотеки, теста или pip install после сборки — собираем заново.
    Чего так не узнать: дала ли та сборка предупреждения -W; это видно в выводе самой первой команды (и CI
    падает на ней)."""
    info = html / ".buildinfo"
    if not info.is_file() or any((html / "reports").rglob("*.log")):
        return False
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True)
    if listed.returncode != 0:
        return False
    built = info.stat().st_mtime
    sources = [ROOT / name for name in listed.stdout.decode("utf-8", "replace").split("\0") if name]
    sources.append(Path(sysconfig.get_paths()["purelib"]))  # папка пакетов меняется при каждой установке
    return all(p.stat().st_mtime < built for p in sources if p.exists())


@pytest.fixture(scope="session")
def built_book(tmp_path_factory):
    """Книга, собранная с -W. Если первая команда README уже собрала её и с тех пор ничего не менялось
    (так в CI и у новичка: команды идут подряд), проверяется её ``_build/html`` — то, что публикуется;
    иначе книга собирается заново в пустую папку (главы исполняются заново: кэша у сборки нет)."""
    html = ROOT / "_build" / "html"
    if _readme_build_is_current(html):
        return html
    out = tmp_path_factory.mktemp("book")
    result = subprocess.run(
        [str(Path(sys.executable).parent / "jupyter-book"), "build", str(ROOT), "--path-output", str(out),
         "-W", "-n", "--keep-going"],
        capture_output=True, text=True, cwd=ROOT, timeout=900,
    )
    log = result.stdout[-6000:] + result.stderr[-6000:]
    assert result.returncode == 0, f"сборка книги упала или дала предупреждения:\n{log}"
    return out / "_build" / "html"

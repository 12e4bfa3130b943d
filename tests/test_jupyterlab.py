"""Ученик нажимает Validate в JupyterLab: расширение nbgrader загружается и проверяет лабораторную.

JupyterLab запускается на 127.0.0.1 во временной копии курса, headless Chromium открывает
лабораторную 1, жмёт кнопку Validate на панели ноутбука и читает окно результатов:
у нетронутой версии — провал с сообщением, у решения — успех.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAB = "lab01_mini_rag"
TOKEN = "minirag-test"
SCREENSHOTS = ROOT / "_build" / "screenshots"

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def jupyterlab(tmp_path_factory):
    course = tmp_path_factory.mktemp("course")
    shutil.copy(ROOT / "nbgrader_config.py", course)
    shutil.copytree(ROOT / "labs" / LAB, course / "labs" / LAB)
    solved = course / "solved"
    solved.mkdir()
    shutil.copy(ROOT / "solutions" / LAB / f"{LAB}.ipynb", solved / f"{LAB}.ipynb")
    shutil.copy(ROOT / "labs" / LAB / "labkit.py", solved / "labkit.py")  # помощники проверок лежат рядом с ноутбуком
    home = tmp_path_factory.mktemp("home")
    port = free_port()
    env = {**os.environ, "HOME": str(home), "JUPYTER_CONFIG_DIR": str(home / ".jupyter")}
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", f"--port={port}", "--ip=127.0.0.1",
         f"--ServerApp.token={TOKEN}", f"--ServerApp.root_dir={course}"],
        cwd=course, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.time() + 90
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2)
            break
        except OSError:
            if server.poll() is not None:
                pytest.fail(f"JupyterLab не запустился:\n{server.stderr.read()[-3000:]}")
            time.sleep(0.5)
    else:
        server.kill()
        pytest.fail("JupyterLab не ответил за 90 секунд")
    yield base
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()




def validate(browser, base: str, path: str, screenshot: str) -> str:
    """Открыть ноутбук, нажать Validate на панели и вернуть текст окна результатов."""
    tab = browser.new_page(viewport={"width": 1400, "height": 900})
    tab.goto(f"{base}/lab/tree/{path}?reset&token={TOKEN}")
    toolbar = tab.locator(".jp-NotebookPanel:visible .jp-NotebookPanel-toolbar")
    toolbar.wait_for(timeout=90_000)
    button = toolbar.get_by_text("Validate", exact=True)
    button.wait_for(timeout=60_000)  # кнопку добавляет расширение nbgrader
    button.click()
    dialog = tab.locator(".jp-Dialog")
    dialog.wait_for(timeout=60_000)
    deadline = time.time() + 180
    text = dialog.inner_text()
    while ("Validating" in text or len(text) < 40) and time.time() < deadline:
        tab.wait_for_timeout(500)
        text = dialog.inner_text()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    tab.screenshot(path=str(SCREENSHOTS / screenshot))
    tab.close()
    return text


def test_validate_shows_what_is_still_to_do_in_the_untouched_lab(browser, jupyterlab):
    text = validate(browser, jupyterlab, f"labs/{LAB}/{LAB}.ipynb", "jupyterlab-validate-untouched.png")
    assert "NotImplementedError" in text or "failed" in text.lower(), text[:1000]
    assert "Success" not in text


def test_validate_passes_a_solved_lab(browser, jupyterlab):
    text = validate(browser, jupyterlab, f"solved/{LAB}.ipynb", "jupyterlab-validate-solved.png")
    assert "Success" in text and "passes all the tests" in text, text[:1000]

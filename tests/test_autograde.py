"""Проверка группы целиком: ``python -m autograde grade`` на синтетической группе.

Группа (tests/autograde_class.py) — честные работы (полное решение, нетронутая выданная
версия, частичное решение) и по работе на каждый вид плохой сдачи из задачи: не JSON,
обрезанный и пустой файл, неверное имя, нет ноутбука, лишние файлы, старый nbformat, нет
метаданных, удалённые, повторённые, переименованные и изменённые ячейки, бесконечный цикл,
бомба памяти, поток вывода, sys.exit, os._exit, падение ядра, fork-бомба, запись вне рабочей
папки, сеть, объект с ``__eq__`` → True, подмена функции библиотеки.

Группа проверяется один раз на модуль (2 работника, короткие лимиты) в копии каталога курса
во временной папке; дальше тесты читают CSV, отзывы, базу оценок и саму группу. Эталон баллов
честных работ — обычный ``nbgrader autograde`` на тех же ноутбуках. Отдельно: повторный
запуск, перепроверка одного слушателя, kill -9 посреди группы (сдачи из zip LMS) и formgrader
в headless Chromium.
"""

from __future__ import annotations

import csv
import hashlib
import html
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import autograde_class as ac
import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
LAB = ac.LAB
# Лимиты с запасом: честная ячейка на загруженной 2-ядерной машине не должна упираться в тайм-аут,
# иначе повторная проверка даст другой результат не по вине кода.
CELL_TIMEOUT = 15
LIMITS = ["--cell-timeout", str(CELL_TIMEOUT), "--timeout", "120", "--memory", "512"]


def _sandbox_problem() -> str | None:
    from autograde.sandbox import check_sandbox

    return check_sandbox()


SANDBOX_PROBLEM = _sandbox_problem()
# Пропуск — только когда bubblewrap просто не поставлен и это не CI (.ci/run его ставит).
# Установленный, но сломанный bwrap — падение, а не пропуск: иначе сломанная песочница прячется.
if SANDBOX_PROBLEM is not None and (shutil.which("bwrap") is not None or os.environ.get("CI")):
    raise RuntimeError(f"Песочница проверки не работает: {SANDBOX_PROBLEM}")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(SANDBOX_PROBLEM is not None, reason=f"нет песочницы: {SANDBOX_PROBLEM}"),
]


def cli(*args, timeout: int = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    """``python -m autograde ...`` из корня репозитория (пакет не установлен, он лежит в корне)."""
    environment = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    environment.update(env or {})
    return subprocess.run([sys.executable, "-m", "autograde", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env=environment)


def read_csv(path: Path) -> dict[str, dict]:
    with open(path, newline="", encoding="utf-8") as f:
        return {row["student_id"]: row for row in csv.DictReader(f)}


def snapshot(folder: Path) -> dict[str, tuple[str, int]]:
    """Содержимое и время изменения каждого файла: по ним видно, что сдачи не тронуты."""
    return {str(p.relative_to(folder)): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
            for p in sorted(folder.rglob("*")) if p.is_file()}


def sandbox_processes() -> list[str]:
    """Процессы ядер песочницы, если какие-то пережили проверку."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            if b"/run/autograde/kernel.json" in cmdline:
                found.append(entry + ": " + cmdline.replace(b"\0", b" ").decode(errors="replace"))
    return found


def wait_no_sandbox(seconds: float = 10) -> list[str]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and sandbox_processes():
        time.sleep(0.2)
    return sandbox_processes()


@pytest.fixture(scope="module")
def lab():
    return ac.Lab()


@pytest.fixture(scope="module")
def graded(tmp_path_factory, lab):
    """Вся группа, проверенная один раз: каталог курса, работы, CSV и вывод команды."""
    tmp = tmp_path_factory.mktemp("autograde")
    course = ac.course_copy(tmp / "course")
    home_target = Path.home() / f"autograde_pwned_{os.getpid()}"
    host_targets = (str(course / "solutions" / "pwned.txt"), str(tmp / "class" / "pwned.txt"), str(home_target))
    cases = ac.cases(lab, memory_mb=512, cell_timeout=CELL_TIMEOUT, host_targets=host_targets)
    submissions = ac.write_class(tmp / "class", cases)
    before = snapshot(submissions)
    result = cli("grade", LAB, "--submissions", submissions, "--course", course, "--workers", "2", *LIMITS)
    return {"tmp": tmp, "course": course, "cases": {c.student_id: c for c in cases}, "submissions": submissions,
            "before": before, "result": result, "host_targets": host_targets,
            "csv": course / "autograde" / "grades" / f"{LAB}.csv"}


@pytest.fixture(scope="module")
def rows(graded):
    assert graded["result"].returncode == 0, graded["result"].stderr[-3000:]
    return read_csv(graded["csv"])


@pytest.fixture(scope="module")
def reference(graded, tmp_path_factory):
    """Баллы обычного ``nbgrader autograde`` на честных работах и работе с подменой библиотеки."""
    tmp = tmp_path_factory.mktemp("nbgrader")
    course = ac.course_copy(tmp / "course")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", LAB, "--force", "--log-level=ERROR"],
                   cwd=course, check=True, capture_output=True, env=env)
    students = [sid for sid, case in graded["cases"].items() if case.honest] + ["patched_library"]
    for sid in students:
        shutil.copytree(graded["submissions"] / sid, course / "autograde" / "submitted" / sid)
    subprocess.run([sys.executable, "-m", "nbgrader", "autograde", LAB, "--log-level=ERROR"], cwd=course, check=True,
                   capture_output=True, env=env, timeout=600)
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'autograde' / 'gradebook.db'}") as gb:
        return {s.student.id: s.code_score for s in gb.assignment_submissions(LAB)}


# ---------- CSV: строка за строкой ----------
def test_batch_completes_and_names_every_bad_submission(graded, rows):
    out = graded["result"].stdout
    assert f"{LAB}: {len(graded['cases'])} работ" in out
    for sid, case in graded["cases"].items():
        if case.message:
            assert re.search(rf"^\s+{re.escape(sid)}\s", out, re.M), f"{sid} не назван в сводке:\n{out}"


def test_csv_has_exactly_the_promised_columns(graded, rows):
    header = graded["csv"].read_text(encoding="utf-8").splitlines()[0]
    assert header == "student_id,lab,score,max_score,manual_pending,status,message"
    assert set(rows) == set(graded["cases"])


@pytest.mark.parametrize("student", [c.student_id for c in ac.cases(ac.Lab())])
def test_each_submission_gets_its_status_reason_and_score(graded, rows, reference, student):
    case, row = graded["cases"][student], rows[student]
    assert row["lab"] == LAB
    assert row["max_score"] == "33"
    assert row["status"] == case.status, row
    if case.message:
        assert case.message in row["message"], row
    else:
        assert row["message"] == "", row
    expected = reference[student] if case.score is None else case.score
    assert float(row["score"]) == expected, row
    assert float(row["manual_pending"]) in (0.0, 3.0)


def test_honest_scores_equal_plain_nbgrader(graded, rows, reference):
    """Эталон, который писали не мы: баллы nbgrader autograde на тех же ноутбуках."""
    for sid, score in reference.items():
        assert float(rows[sid]["score"]) == score, (sid, rows[sid], score)
    assert reference["full"] == 33 and reference["untouched"] == 0 and 0 < reference["partial"] < 33


def test_manual_answers_wait_for_the_instructor(rows):
    assert rows["full"]["manual_pending"] == "3"  # письменный ответ есть — ждёт преподавателя
    assert rows["untouched"]["manual_pending"] == "0"  # ответа нет — 0 без ручной проверки, как в nbgrader
    assert rows["empty"]["manual_pending"] == "0"


# ---------- отзывы, оригиналы, песочница, база ----------
def hidden_lines(course: Path) -> list[str]:
    nb = json.loads((course / "solutions" / LAB / f"{LAB}.ipynb").read_text(encoding="utf-8"))
    lines, inside = [], False
    for cell in nb["cells"]:
        for line in "".join(cell["source"]).split("\n"):
            if "BEGIN HIDDEN TESTS" in line:
                inside = True
            elif "END HIDDEN TESTS" in line:
                inside = False
            elif inside and len(line.strip()) > 25:
                lines.append(line.strip())
    return lines


def test_feedback_shows_results_but_never_hidden_test_source(graded, rows):
    course = graded["course"]
    secret = hidden_lines(course)
    assert len(secret) > 20
    for sid in graded["cases"]:
        page = course / "autograde" / "feedback" / sid / LAB / f"{LAB}.html"
        text = html.unescape(page.read_text(encoding="utf-8"))
        leaked = [line for line in secret if line in text]
        assert not leaked, f"{sid}: в отзыве код скрытого теста: {leaked[:2]}"
        assert "BEGIN HIDDEN TESTS" not in text
    # провал скрытого теста виден: и что не прошёл, и его сообщение (у always_equal cosine возвращает не float)
    text = html.unescape((course / "autograde" / "feedback" / "always_equal" / LAB / f"{LAB}.html")
                         .read_text(encoding="utf-8"))
    assert "cosine — скрытые тесты (крайние случаи и сравнение с эталоном): не пройден, 0 из 2" in text
    assert "здесь скрытые тесты: их код не показывается" in text
    assert "cosine — видимые тесты: не пройден" in text and "cosine должна вернуть float" in text
    assert "подозрительные конструкции" not in text  # пометка для преподавателя, не для слушателя


def test_original_submissions_are_not_modified(graded, rows):
    assert snapshot(graded["submissions"]) == graded["before"]


def test_student_code_reached_nothing_outside_its_sandbox(graded, rows):
    for target in graded["host_targets"]:
        assert not Path(target).exists(), f"работа записала {target} на диск проверяющего"
    for target in ("/etc/autograde_pwned", "/usr/autograde_pwned", "/tmp/autograde_pwned"):
        assert not Path(target).exists()
    assert wait_no_sandbox() == []


def test_gradebook_holds_the_same_scores_for_formgrader(graded, rows):
    from nbgrader.api import Gradebook

    db = graded["course"] / "autograde" / "gradebook.db"
    with Gradebook(f"sqlite:///{db}", "mini-rag-rukami") as gb:
        stored = {s.student.id: s for s in gb.assignment_submissions(LAB)}
        assert set(stored) == set(rows)
        for sid, submission in stored.items():
            assert submission.code_score == float(rows[sid]["score"]), sid
        assert stored["full"].needs_manual_grade
    autograded = graded["course"] / "autograde" / "autograded"
    assert all((autograded / sid / LAB / f"{LAB}.ipynb").is_file() for sid in rows)


# ---------- повтор, перепроверка, параллельно = последовательно ----------
def test_rerun_skips_everything_and_gives_the_identical_csv(graded, rows):
    before = graded["csv"].read_bytes()
    result = cli("grade", LAB, "--submissions", graded["submissions"], "--course", graded["course"], *LIMITS)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Проверено сейчас: 0" in result.stdout
    assert graded["csv"].read_bytes() == before


def test_serial_forced_regrade_gives_the_same_rows(graded, rows):
    """Те же работы заново, одним работником: тот же результат, что у двух (и у первого прогона)."""
    chosen = ["full", "partial", "infinite_loop", "output_flood", "fork_bomb"]
    result = cli("grade", LAB, "--submissions", graded["submissions"], "--course", graded["course"], "--workers", "1",
                 "--force", *sum((["--student", s] for s in chosen), []), *LIMITS)
    assert result.returncode == 0, result.stderr[-2000:]
    again = read_csv(graded["csv"])
    assert again == rows


def test_regrading_one_student_changes_no_one_else(graded, rows, lab, tmp_path):
    from nbgrader.api import Gradebook

    db = f"sqlite:///{graded['course'] / 'autograde' / 'gradebook.db'}"
    with Gradebook(db, "mini-rag-rukami") as gb:
        before = {s.student.id: s.code_score for s in gb.assignment_submissions(LAB)}
    resubmitted = tmp_path / "late" / "partial" / LAB
    resubmitted.mkdir(parents=True)
    answers = {k: v for k, v in lab.solutions.items() if k != "search"}
    (resubmitted / f"{LAB}.ipynb").write_bytes(ac.dumps(lab.notebook(answers)))
    result = cli("grade", LAB, "--submissions", tmp_path / "late", "--course", graded["course"], *LIMITS)
    assert result.returncode == 0, result.stderr[-2000:]
    after = read_csv(graded["csv"])
    assert float(after["partial"]["score"]) == lab.total(["search"])
    assert {k: v for k, v in after.items() if k != "partial"} == {k: v for k, v in rows.items() if k != "partial"}
    with Gradebook(db, "mini-rag-rukami") as gb:
        now = {s.student.id: s.code_score for s in gb.assignment_submissions(LAB)}
    assert now["partial"] == lab.total(["search"])
    assert {k: v for k, v in now.items() if k != "partial"} == {k: v for k, v in before.items() if k != "partial"}


# ---------- отчёт ----------
def test_report_prints_the_table_and_saves_a_histogram(graded, rows):
    result = cli("report", LAB, "--course", graded["course"])
    assert result.returncode == 0, result.stderr[-2000:]
    for sid in rows:
        assert sid in result.stdout
    assert "средний" in result.stdout
    png = graded["course"] / "autograde" / "grades" / f"{LAB}.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---------- kill -9 посреди группы, сдачи из zip LMS ----------
def test_killed_run_loses_nothing_and_the_next_run_finishes(lab, tmp_path):
    course = ac.course_copy(tmp_path / "course")
    slow = lambda nb: lab.add_cell(nb, None, "import time\ntime.sleep(1.5)")  # noqa: E731 — чтобы было что прервать
    names = {  # как в выгрузке Moodle: папка на слушателя, id — до первого «_»
        "anna": slow(lab.notebook()), "boris": slow(lab.notebook({})), "vera": slow(lab.notebook()),
        "gleb": slow(lab.notebook({k: v for k, v in lab.solutions.items() if k in ("cosine", "top_k")})),
        "dina": slow(lab.notebook()),
    }
    archive = tmp_path / "moodle.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for sid, nb in names.items():
            z.writestr(f"{sid}_1234_assignsubmission_file_/{LAB}.ipynb", ac.dumps(nb))
        z.writestr("readme.txt", "выгрузка")
    results = course / "autograde" / "work" / LAB / "results"
    cmd = [sys.executable, "-m", "autograde", "grade", LAB, "--submissions", str(archive), "--course", str(course),
           "--workers", "1", *LIMITS]
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(list(results.glob("*.json"))) < 2 and proc.poll() is None:
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = {p.stem: (p.read_bytes(), p.stat().st_mtime_ns) for p in results.glob("*.json")}
    assert 2 <= len(finished) < len(names), "нужно убить посреди группы: поднимите sleep в работах"
    assert wait_no_sandbox() == [], "после kill -9 остались процессы песочницы"
    result = cli("grade", LAB, "--submissions", archive, "--course", course, "--workers", "1", *LIMITS)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"без изменений с прошлого раза: {len(finished)}" in result.stdout
    for sid, (data, mtime) in finished.items():  # готовые итоги не перепроверялись и не потерялись
        path = results / f"{sid}.json"
        assert path.read_bytes() == data and path.stat().st_mtime_ns == mtime
    rows = read_csv(course / "autograde" / "grades" / f"{LAB}.csv")
    assert set(rows) == set(names)
    assert all(row["status"] == "ok" for row in rows.values())
    assert float(rows["anna"]["score"]) == 33 and float(rows["boris"]["score"]) == 0
    assert float(rows["gleb"]["score"]) == 4 + 5


def test_lms_zip_pattern_finds_student_ids(tmp_path):
    from autograde.submissions import collect

    archive = tmp_path / "lms.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr(f"Иван Петров_123_assignsubmission_file_/{LAB}.ipynb", b"{}")
        z.writestr(f"sidorov_77_901_{LAB}-1.ipynb", b"{}")
        z.writestr("kuznetsova_5_6_мой_ноутбук.ipynb", b"{}")
        z.writestr("kuznetsova_5_7_заметки.txt", b"x")
        z.writestr("__MACOSX/._junk", b"x")
    subs, warnings = collect(archive, LAB)
    by_id = {s.student_id: s for s in subs}
    assert set(by_id) == {"Иван Петров", "sidorov", "kuznetsova"}
    assert by_id["sidorov"].notes == []  # LMS дописала -1 к имени: это всё ещё тот ноутбук
    assert any("мой_ноутбук.ipynb" in n for n in by_id["kuznetsova"].notes)
    assert any("лишние файлы" in n for n in by_id["kuznetsova"].notes)
    subs, _ = collect(archive, LAB, pattern=r"_(?P<student_id>\d+)_")
    assert {s.student_id for s in subs} == {"123", "77", "5"}


# ---------- команда отказывается работать, когда не может ----------
def test_grade_refuses_without_a_sandbox_and_says_how_to_install(graded, tmp_path):
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    result = cli("grade", LAB, "--submissions", graded["submissions"], "--course", graded["course"],
                 env={"PATH": str(fake_bin)})
    assert result.returncode == 3
    assert "bubblewrap" in result.stderr and "apt-get install bubblewrap" in result.stderr
    assert "--no-sandbox" in result.stderr


def test_no_sandbox_works_only_when_asked_and_is_reported(lab, tmp_path):
    course = ac.course_copy(tmp_path / "course")
    works = [ac.Case("anna", {f"{LAB}.ipynb": ac.dumps(lab.notebook())}, "ok", 33, "", "полное решение"),
             ac.Case("boris", {f"{LAB}.ipynb": ac.dumps(lab.notebook({}))}, "ok", 0, "", "нетронутая")]
    submissions = ac.write_class(tmp_path / "class", works)
    result = cli("grade", LAB, "--submissions", submissions, "--course", course, "--no-sandbox", *LIMITS)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "--no-sandbox" in result.stderr and "без песочницы" in result.stdout
    rows = read_csv(course / "autograde" / "grades" / f"{LAB}.csv")
    assert (rows["anna"]["score"], rows["boris"]["score"]) == ("33", "0")
    report = cli("report", LAB, "--course", course)
    assert "без песочницы (--no-sandbox) проверены: anna, boris" in report.stdout


def test_grade_fails_loudly_on_unknown_lab_or_missing_config(graded, tmp_path):
    result = cli("grade", "lab99_nope", "--submissions", graded["submissions"], "--course", graded["course"])
    assert result.returncode == 2 and "lab99_nope" in result.stderr and "lab01_mini_rag" in result.stderr
    result = cli("grade", LAB, "--submissions", graded["submissions"], "--course", tmp_path)
    assert result.returncode == 2 and "nbgrader_config.py" in result.stderr


# ---------- formgrader в headless Chromium ----------
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.browser
def test_formgrader_lists_graded_work_and_manual_grades_reach_the_csv(graded, rows, browser):
    course, port, token = graded["course"], _free_port(), "autograde-test"
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               JUPYTER_CONFIG_DIR=str(graded["tmp"] / "jupyter-config"), JUPYTER_RUNTIME_DIR=str(graded["tmp"] / "rt"))
    server = subprocess.Popen([sys.executable, "-m", "jupyter", "server", "--no-browser", "--allow-root",
                               f"--port={port}", "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}"],
                              cwd=course, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    page = browser.new_page()
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                page.goto(f"{base}/formgrader?token={token}")
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        page.goto(f"{base}/formgrader/gradebook/{LAB}/{LAB}")
        page.wait_for_selector("a.name-shown >> text=full", state="attached", timeout=60000)
        listed = set(page.locator("a.name-shown").all_text_contents())
        assert listed == set(rows), listed ^ set(rows)
        href = page.locator("a.name-shown", has_text="full").first.get_attribute("href")
        page.goto(base + href)
        page.wait_for_selector("input#why_cosine", timeout=60000)
        assert page.locator("text=Лабораторная 1").count() > 0
        page.fill("input#why_cosine", "2")
        page.press("input#why_cosine", "Tab")  # formgrader сохраняет балл, когда поле теряет фокус
        page.wait_for_timeout(2000)
    finally:
        page.close()
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    result = cli("grade", LAB, "--submissions", graded["submissions"], "--course", course, *LIMITS)
    assert result.returncode == 0, result.stderr[-2000:]
    after = read_csv(graded["csv"])
    assert after["full"]["manual_pending"] == "0"
    assert {k: v for k, v in after.items() if k != "full"} == {k: v for k, v in rows.items() if k != "full"}
    page = html.unescape((course / "autograde" / "feedback" / "full" / LAB / f"{LAB}.html").read_text(encoding="utf-8"))
    assert "проверено преподавателем, 2 из 3" in page


def test_student_markup_in_feedback_is_made_safe():
    """Текст слушателя в отзыве — без скриптов: отзыв открывают в браузере и слушатель, и преподаватель."""
    from autograde.feedback import clean_markdown

    out = clean_markdown("**жирно** <script>alert(1)</script> <img src=x onerror=alert(2)> [ссылка](javascript:alert(3))")
    assert "<strong>жирно</strong>" in out
    assert "<script" not in out and "onerror" not in out and "javascript:" not in out

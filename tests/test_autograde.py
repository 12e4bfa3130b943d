"""Проверка группы целиком: ``python -m autograde grade`` на синтетической группе.

Группа (tests/autograde_class.py) — честные работы, по работе на каждый вид плохой сдачи,
враждебные работы (скрипты в метаданных, выводах и markdown, поток вывода и ошибок, диск,
связка ключей ядра, дескрипторы, длинные и управляющие символы в именах, JSON глубиной 600 и
100 000, ответ ядра глубиной 200 000 и из миллиона пустых списков, ответ в 12 МБ, ноутбук в 29 МБ) и попытки поднять себе балл изнутри ядра (AST-трансформер, подмена np.allclose и
builtins, подсматривание в стек, JPY_SESSION_NAME, перехват кода ячеек, объект с ``__eq__``).
Группа проверяется один раз на модуль (2 работника) в копии каталога курса; дальше тесты читают
CSV, отзывы, проверенные ноутбуки и базу оценок. Отдельно: повтор, перепроверка одного, kill -9,
zip LMS с битыми записями, память проверяющего под потоком вывода и на сдачах сверх пределов, те же
итоги под нагрузкой процессора, режим без root, formgrader и отзывы в headless Chromium.
"""

from __future__ import annotations

import base64
import html
import json
import os
import re
import shutil
import signal
import struct
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import autograde_class as ac
import pytest
from grading import CELL_TIMEOUT, LIMITS, ROOT, cli, formgrader, read_csv, sandbox_problem, snapshot, wait_no_sandbox

LAB = ac.LAB
SANDBOX_PROBLEM = sandbox_problem()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(SANDBOX_PROBLEM is not None, reason=f"нет песочницы: {SANDBOX_PROBLEM}"),
]
HOSTILE_PAGES = ["meta_script", "image_onerror", "html_outputs", "markdown_xss"]
GRADER_MEMORY_MB = 400  # бюджет памяти проверяющего (главный процесс и работник) на любую работу — README


@pytest.fixture(scope="module")
def lab():
    return ac.Lab()


def class_cases(lab, host_targets=(), secret_paths=()):
    return (ac.cases(lab, memory_mb=512, cell_timeout=int(LIMITS[1]), host_targets=host_targets)
            + ac.hostile_cases(lab) + ac.judge_attacks(lab) + [ac.reads_secrets(lab, secret_paths)])


@pytest.fixture(scope="module")
def graded(tmp_path_factory, lab):
    """Вся группа, проверенная один раз: каталог курса, работы, CSV и вывод команды."""
    tmp = tmp_path_factory.mktemp("autograde")
    course = ac.course_copy(tmp / "course")
    home_target = Path.home() / f"autograde_pwned_{os.getpid()}"
    host_targets = (str(course / "solutions" / "pwned.txt"), str(tmp / "class" / "pwned.txt"), str(home_target))
    secret_paths = tuple(str(root / "solutions" / LAB / f"{LAB}.ipynb") for root in (course, ROOT))
    cases = class_cases(lab, host_targets, secret_paths)
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


def key(student_id: str) -> str:
    from autograde.course import safe_key

    return safe_key(student_id)


def feedback_page(graded, student_id: str) -> Path:
    return graded["course"] / "autograde" / "feedback" / key(student_id) / LAB / f"{LAB}.html"


def graded_notebook(graded, student_id: str) -> dict:
    path = graded["course"] / "autograde" / "autograded" / key(student_id) / LAB / f"{LAB}.ipynb"
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def reference(graded, tmp_path_factory):
    """Баллы обычного ``nbgrader autograde`` на честных работах (тесты в ядре — у честных это всё равно)."""
    tmp = tmp_path_factory.mktemp("nbgrader")
    course = ac.course_copy(tmp / "course")
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    env["AUTOGRADE_ALLOW_NBGRADER"] = "1"  # курс запрещает nbgrader autograde; здесь он нужен как эталон
    subprocess.run([sys.executable, "-m", "nbgrader", "generate_assignment", LAB, "--force", "--log-level=ERROR"],
                   cwd=course, check=True, capture_output=True, env=env)
    students = [sid for sid, case in graded["cases"].items() if case.honest] + ["wrong_base"]
    for sid in students:
        shutil.copytree(graded["submissions"] / sid, course / "autograde" / "submitted" / sid)
    subprocess.run([sys.executable, "-m", "nbgrader", "autograde", LAB, "--log-level=ERROR"], cwd=course, check=True,
                   capture_output=True, env=env, timeout=900)
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'autograde' / 'gradebook.db'}") as gb:
        return {s.student.id: s.code_score for s in gb.assignment_submissions(LAB)}


# ---------- CSV: строка за строкой ----------
def test_batch_completes_and_names_every_bad_submission(graded, rows):
    out = graded["result"].stdout
    assert f"{LAB}: в таблице {len(graded['cases'])} работ" in out
    for sid, case in graded["cases"].items():
        if case.message:
            assert re.search(rf"^\s+{re.escape(sid)}\s", out, re.M), f"{sid} не назван в сводке:\n{out}"


def test_csv_has_exactly_the_promised_columns(graded, rows):
    header = graded["csv"].read_text(encoding="utf-8").splitlines()[0]
    assert header == "student_id,lab,score,max_score,manual_pending,status,late,message"
    printable = {sid.replace("\x1b", "\\x1b") for sid in graded["cases"]}
    assert set(rows) == printable


@pytest.mark.parametrize("case", [c for c in class_cases(ac.Lab()) if c.message is not None], ids=lambda c: c.kind)
def test_each_submission_gets_its_status_reason_and_score(graded, rows, reference, case):
    row = rows[case.student_id.replace("\x1b", "\\x1b")]
    assert row["lab"] == LAB and row["max_score"] == "33"
    assert row["status"] == case.status, row
    if case.message:
        assert case.message in row["message"], row
    else:
        assert row["message"] == "", row
    expected = reference[case.student_id] if case.score is None else case.score
    assert float(row["score"]) == expected, row


def test_honest_scores_equal_plain_nbgrader(rows, reference):
    """Эталон, который писали не мы: баллы nbgrader autograde на тех же честных ноутбуках."""
    for sid, score in reference.items():
        assert float(rows[sid]["score"]) == score, (sid, rows[sid], score)
    assert reference["full"] == 33 and reference["untouched"] == 0 and 0 < reference["partial"] < 33


def test_no_attack_from_inside_the_kernel_raises_the_score(rows):
    honest = float(rows["wrong_base"]["score"])
    assert 0 < honest < 33
    attacks = {sid: float(row["score"]) for sid, row in rows.items() if sid.startswith("attack_")}
    assert len(attacks) == len(ac.ATTACKS)
    assert {sid: score for sid, score in attacks.items() if score > honest} == {}


def test_manual_answers_wait_for_the_instructor(rows):
    assert rows["full"]["manual_pending"] == "3"  # письменный ответ есть — ждёт преподавателя
    assert rows["untouched"]["manual_pending"] == "0"  # ответа нет — 0 без ручной проверки, как в nbgrader
    assert rows["attack_session_name"]["manual_pending"] == "0"  # подложенный чужой ноутбук не читается


# ---------- отзывы, проверенные ноутбуки, песочница ----------
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


def test_feedback_never_shows_hidden_test_source_in_any_encoding(graded, rows):
    secret = hidden_lines(graded["course"])
    assert len(secret) > 20
    encodings = {
        "как есть": lambda s: s, "с неразрывными пробелами": lambda s: s.replace(" ", "\u00a0"),
        "repr": lambda s: repr(s)[1:-1], "base64": lambda s: base64.b64encode(s.encode()).decode()[:40],
    }
    for sid, case in graded["cases"].items():
        page = feedback_page(graded, sid)
        if not page.is_file():
            continue
        text = html.unescape(page.read_text(encoding="utf-8"))
        own = "\n".join(data.decode("utf-8", "replace") for data in case.files.values())
        for how, encode in encodings.items():  # строку, которую слушатель написал сам, он вправе напечатать
            leaked = [line for line in secret if encode(line) in text and line not in own and json.dumps(line)[1:-1]
                      not in own]
            assert not leaked, f"{sid}: в отзыве код скрытого теста ({how}): {leaked[:2]}"
        assert "BEGIN HIDDEN TESTS" not in text
    text = html.unescape(feedback_page(graded, "always_equal").read_text(encoding="utf-8"))
    assert "cosine — скрытые тесты (крайние случаи и сравнение с эталоном): не пройден, 0 из 2" in text
    assert "здесь скрытые тесты: их код не показывается" in text
    assert "подозрительные конструкции" not in text  # пометка для преподавателя, не для слушателя


def test_graded_notebooks_hold_only_safe_content(graded, rows):
    """То, что открывает formgrader: ни HTML, ни JavaScript, ни SVG в выходах, markdown — очищенный HTML."""
    for sid in HOSTILE_PAGES:
        nb = graded_notebook(graded, sid)
        for cell in nb["cells"]:
            assert set(cell["metadata"]) <= {"nbgrader"}, (sid, cell["metadata"])
            source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
            if cell["cell_type"] == "markdown":
                assert not re.search(r"<script|onerror|onmouseover|javascript:", source, re.I), (sid, source[:200])
            for output in cell.get("outputs", []):
                assert set(output.get("data", {})) <= {"text/plain", "image/png", "image/jpeg"}, (sid, output)
                for meta in output.get("metadata", {}).values():
                    assert all(isinstance(v, int) for v in meta.values()), (sid, meta)


def test_original_submissions_are_not_modified(graded, rows):
    assert snapshot(graded["submissions"]) == graded["before"]


def test_student_code_reached_nothing_outside_its_sandbox(graded, rows):
    for target in graded["host_targets"]:
        assert not Path(target).exists(), f"работа записала {target} на диск проверяющего"
    for target in ("/etc/autograde_pwned", "/usr/autograde_pwned", "/tmp/autograde_pwned", "/tmp/fake.ipynb"):
        assert not Path(target).exists()
    assert wait_no_sandbox(course=graded["course"]) == []


def _printed(graded, sid: str) -> str:
    return "".join("".join(o.get("text", "")) for c in graded_notebook(graded, sid)["cells"] for o in c.get("outputs", [])
                   if o.get("output_type") == "stream")


def test_disk_keyring_and_descriptors_are_bounded_and_private(graded, rows):
    disk = _printed(graded, "disk_hog")
    assert "записано" not in disk and disk.count("не вышло") == 4, disk  # ни 3 ГБ в /dev/shm, ни в корень, ни в HOME
    for sid in ("keyring_a", "keyring_b"):
        out = _printed(graded, sid)
        assert "add_key -1 1" in out and "keyctl -1 1" in out, out  # EPERM от seccomp
        assert "s3cret" not in out
    fds = [line.split(" ", 2)[2] for line in _printed(graded, "fd_leak").splitlines() if line.startswith("fd ")]
    assert fds and all(t == "/dev/null" or t.split(":")[0] in ("pipe", "socket", "anon_inode") for t in fds), fds


def test_hostile_names_cost_nothing_and_print_safely(graded, rows):
    out = graded["result"].stdout
    assert "\x1b" not in out and "\x1b" not in graded["csv"].read_text(encoding="utf-8")
    assert "evil\\x1b[2Jname" in rows and float(rows["evil\\x1b[2Jname"]["score"]) == 33
    assert float(rows["Я" * 120]["score"]) == 33
    assert "Похожие на подделку id" in out and "'h\u043enest'" in out
    report = cli("report", LAB, "--course", graded["course"])
    assert report.returncode == 0 and "\x1b" not in report.stdout and "Похожие на подделку id" in report.stdout


def test_gradebook_holds_the_same_scores_for_formgrader(graded, rows):
    from nbgrader.api import Gradebook

    db = graded["course"] / "autograde" / "gradebook.db"
    with Gradebook(f"sqlite:///{db}", "mini-rag-rukami") as gb:
        stored = {s.student.first_name: s for s in gb.assignment_submissions(LAB)}
        assert set(stored) == set(graded["cases"])
        for sid, submission in stored.items():
            assert submission.code_score == float(rows[sid.replace("\x1b", "\\x1b")]["score"]), sid
        assert stored["full"].needs_manual_grade


# ---------- повтор, перепроверка, параллельно = последовательно ----------
def test_rerun_skips_everything_and_gives_the_identical_csv(graded, rows):
    before = graded["csv"].read_bytes()
    result = cli("grade", LAB, "--submissions", graded["submissions"], "--course", graded["course"], *LIMITS)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "В этом запуске проверено: 0" in result.stdout  # и битые JSON не перепроверяются: это вина работы
    assert graded["csv"].read_bytes() == before


def test_serial_forced_regrade_gives_the_same_rows(graded, rows):
    """Те же работы заново, одним работником: тот же результат, что у двух (и у первого прогона).

    Без infinite_loop: тайм-аут ячейки одинаков при любом числе работников, а один работник ждал бы его 20 с."""
    chosen = ["full", "partial", "output_flood", "fork_bomb", "attack_ast_strip_asserts"]
    result = cli("grade", LAB, "--submissions", graded["submissions"], "--course", graded["course"], "--workers", "1",
                 "--force", *sum((["--student", s] for s in chosen), []), *LIMITS)
    assert result.returncode == 0, result.stderr[-2000:]
    assert read_csv(graded["csv"]) == rows


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


def test_report_prints_the_table_and_saves_a_histogram(graded, rows):
    result = cli("report", LAB, "--course", graded["course"])
    assert result.returncode == 0, result.stderr[-2000:]
    for sid in ("full", "partial", "wrong_base"):
        assert sid in result.stdout
    assert "средний" in result.stdout
    png = graded["course"] / "autograde" / "grades" / f"{LAB}.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---------- в браузере: ни один скрипт слушателя не исполняется ----------
@pytest.mark.browser
def test_feedback_pages_run_no_student_script(graded, rows, browser):
    page = browser.new_page()
    try:
        for sid in HOSTILE_PAGES:
            page.goto(feedback_page(graded, sid).as_uri())
            page.wait_for_timeout(500)
            assert page.title() != ac.MARK, sid
            handlers = page.evaluate("document.querySelectorAll('[onerror],[onmouseover],[onload],script[src^=data]')"
                                     ".length")
            assert handlers == 0, sid
            assert "1000 из 1000" not in page.content()
    finally:
        page.close()


@pytest.mark.browser
def test_formgrader_shows_hostile_work_without_running_it_and_manual_grades_reach_the_csv(graded, rows, browser):
    course = graded["course"]
    with formgrader(course, graded["tmp"], browser) as (base, page):
        page.goto(f"{base}/formgrader/gradebook/{LAB}/{LAB}")
        page.wait_for_selector("a.name-shown >> text=full", state="attached", timeout=60000)
        listed = set(page.locator("a.name-shown").all_text_contents())
        assert {"full", *HOSTILE_PAGES} <= listed
        for sid in HOSTILE_PAGES:
            href = page.locator("a.name-shown", has_text=sid).first.get_attribute("href")
            page.goto(base + href)
            page.wait_for_selector("#notebook-container, .cell", timeout=60000)
            page.wait_for_timeout(800)
            assert page.title() != ac.MARK, sid
            page.goto(f"{base}/formgrader/gradebook/{LAB}/{LAB}")
            page.wait_for_selector("a.name-shown >> text=full", state="attached", timeout=60000)
        href = page.locator("a.name-shown", has_text="full").first.get_attribute("href")
        page.goto(base + href)
        page.wait_for_selector("input#why_cosine", timeout=60000)
        page.fill("input#why_cosine", "2")
        # formgrader сохраняет балл запросом PUT, когда поле теряет фокус: ждём ответа, а не секунды
        with page.expect_response(lambda r: "/api/grade/" in r.url and r.request.method == "PUT" and r.ok,
                                  timeout=60000):
            page.press("input#why_cosine", "Tab")
    result = cli("grade", LAB, "--submissions", graded["submissions"], "--course", course, *LIMITS)
    assert result.returncode == 0, result.stderr[-2000:]
    after = read_csv(graded["csv"])
    assert after["full"]["manual_pending"] == "0"
    assert {k: v for k, v in after.items() if k != "full"} == {k: v for k, v in read_csv(graded["csv"]).items()
                                                              if k != "full"}
    text = html.unescape(feedback_page(graded, "full").read_text(encoding="utf-8"))
    assert "проверено преподавателем, 2 из 3" in text and "Итого: 35 из 36." in text


# ---------- kill -9 посреди группы, сдачи из zip LMS ----------
def test_killed_run_loses_nothing_and_the_next_run_finishes(lab, tmp_path):
    course = ac.course_copy(tmp_path / "course")
    slow = lambda nb: lab.add_cell(nb, None, "import time\ntime.sleep(1.5)")  # noqa: E731 — чтобы было что прервать
    names = {"anna": slow(lab.notebook()), "boris": slow(lab.notebook({})), "vera": slow(lab.notebook()),
             "gleb": slow(lab.notebook({k: v for k, v in lab.solutions.items() if k in ("cosine", "top_k")})),
             "dina": slow(lab.notebook())}
    archive = tmp_path / "moodle.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for sid, nb in names.items():
            z.writestr(f"{sid}_assignsubmission_file_/{LAB}.ipynb", ac.dumps(nb))
        z.writestr("readme.txt", "выгрузка")
    results = course / "autograde" / "work" / LAB / "results"
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    proc = subprocess.Popen([sys.executable, "-m", "autograde", "grade", LAB, "--submissions", str(archive), "--course",
                             str(course), "--workers", "1", *LIMITS], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=env)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and len(list(results.glob("*.json"))) < 2 and proc.poll() is None:
        time.sleep(0.1)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    finished = {p.stem: (p.read_bytes(), p.stat().st_mtime_ns) for p in results.glob("*.json")}
    assert 2 <= len(finished) < len(names), "нужно убить посреди группы: поднимите sleep в работах"
    assert wait_no_sandbox(course=course) == [], "после kill -9 остались процессы песочницы"
    result = cli("grade", LAB, "--submissions", archive, "--course", course, "--workers", "1", *LIMITS)
    assert result.returncode == 0, result.stderr[-2000:]
    assert f"взято готовым: {len(finished)}" in result.stdout
    for sid, (data, mtime) in finished.items():  # готовые итоги не перепроверялись и не потерялись
        path = results / f"{sid}.json"
        assert path.read_bytes() == data and path.stat().st_mtime_ns == mtime
    rows = read_csv(course / "autograde" / "grades" / f"{LAB}.csv")
    assert set(rows) == set(names) and all(row["status"] == "ok" for row in rows.values())
    assert float(rows["anna"]["score"]) == 33 and float(rows["boris"]["score"]) == 0
    assert float(rows["gleb"]["score"]) == 4 + 5


def _corrupt(archive: Path, entry: str, *, crc: bool = False, date: bool = False) -> None:
    """Испортить запись архива как это бывает в жизни: данные (CRC не сходится) или дату (нули DOS)."""
    data = bytearray(archive.read_bytes())
    with zipfile.ZipFile(archive) as z:
        info = z.getinfo(entry)
    if crc:
        start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
        data[start + 10] ^= 0xFF
    if date:
        for signature, offset in ((b"PK\x01\x02", 12), (b"PK\x03\x04", 10)):
            at = 0
            while (at := data.find(signature, at)) >= 0:
                name_len = struct.unpack("<H", data[at + (28 if signature == b"PK\x01\x02" else 26):][:2])[0]
                name_at = at + (46 if signature == b"PK\x01\x02" else 30)
                if data[name_at:name_at + name_len].decode() == entry:
                    data[at + offset:at + offset + 4] = b"\0\0\0\0"
                at += 4
    archive.write_bytes(bytes(data))


def test_hostile_lms_zip_costs_one_row_per_bad_entry(lab, tmp_path):
    course = ac.course_copy(tmp_path / "course")
    full = ac.dumps(lab.notebook())
    archive = tmp_path / "moodle.zip"
    long_name = "Ж" * 128
    when = (2024, 5, 1, 12, 0, 0)
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_STORED) as z:
        def put(path, data):
            z.writestr(zipfile.ZipInfo(path, date_time=when), data)
        put(f"{long_name}_1_assignsubmission_file_/{LAB}.ipynb", full)
        put(f"Иван Петров_100_assignsubmission_file_/{LAB}.ipynb", full)
        put(f"Иван Петров_200_assignsubmission_file_/{LAB}.ipynb", ac.dumps(lab.notebook({})))
        put(f"Битый_3_assignsubmission_file_/{LAB}.ipynb", full)
        put(f"Бездатный_4_assignsubmission_file_/{LAB}.ipynb", full)
        put(f"Время_5_assignsubmission_file_/{LAB}.ipynb", full)
        put("Время_5_assignsubmission_file_/timestamp.txt", "2020-01-01 00:00:00.000000 UTC")
        put(f"Двойной_6_assignsubmission_file_/{LAB}.ipynb", ac.dumps(lab.notebook({})))
        with pytest.warns(UserWarning):
            put(f"Двойной_6_assignsubmission_file_/{LAB}.ipynb", full)
        put(f"Esc\x1b]0;x\x07_7_assignsubmission_file_/{LAB}.ipynb", full)
    _corrupt(archive, f"Битый_3_assignsubmission_file_/{LAB}.ipynb", crc=True)
    _corrupt(archive, f"Бездатный_4_assignsubmission_file_/{LAB}.ipynb", date=True)
    result = cli("grade", LAB, "--submissions", archive, "--course", course, *LIMITS)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = read_csv(course / "autograde" / "grades" / f"{LAB}.csv")
    assert float(rows[f"{long_name}_1"]["score"]) == 33
    assert (rows["Иван Петров_100"]["score"], rows["Иван Петров_200"]["score"]) == ("33", "0")  # тёзки не слились
    assert rows["Битый_3"]["status"] == "error" and "не читается" in rows["Битый_3"]["message"]
    assert float(rows["Бездатный_4"]["score"]) == 33 and "дата повреждена" in rows["Бездатный_4"]["message"]
    assert float(rows["Двойной_6"]["score"]) == 33 and "несколько записей" in rows["Двойной_6"]["message"]
    assert "Esc\\x1b]0;x\\x07_7" in rows and "\x1b" not in result.stdout
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'autograde' / 'gradebook.db'}", "mini-rag-rukami") as gb:
        stamps = {s.student.first_name: s.timestamp for s in gb.assignment_submissions(LAB)}
    assert stamps["Время_5"].year == 2024  # время — из записи архива LMS, не из timestamp.txt слушателя


def test_lms_zip_pattern_finds_student_ids(tmp_path):
    from autograde.intake.submissions import collect

    archive = tmp_path / "lms.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr(f"Иван Петров_123_assignsubmission_file_/{LAB}.ipynb", b"{}")
        z.writestr(f"sidorov_77_901_{LAB}-1.ipynb", b"{}")
        z.writestr("kuznetsova/мой_ноутбук.ipynb", b"{}")
        z.writestr("kuznetsova/заметки.txt", b"x")
        z.writestr("__MACOSX/._junk", b"x")
    subs, _ = collect(archive, LAB)
    by_id = {s.student_id: s for s in subs}
    assert set(by_id) == {"Иван Петров_123", "sidorov_77", "kuznetsova"}
    assert by_id["sidorov_77"].notes == []  # LMS дописала -1 к имени: это всё ещё тот ноутбук
    assert any("мой_ноутбук.ipynb" in n for n in by_id["kuznetsova"].notes)
    assert any("лишние файлы" in n for n in by_id["kuznetsova"].notes)
    subs, _ = collect(archive, LAB, pattern=r"_(?P<student_id>\d+)_")
    assert {s.student_id for s in subs} == {"123", "77"}


# ---------- ресурсы проверяющего и режим без root ----------
def _peak_memory_mb(proc: subprocess.Popen) -> float:
    """Пиковая память (VmHWM) главного процесса проверки и его работников, опрашивая их до конца."""
    peak = 0
    while proc.poll() is None:
        pids = [proc.pid]
        try:
            pids += [int(p) for p in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()]
        except OSError:
            pass
        for pid in pids:
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                if "python" not in Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace"):
                    continue
                peak = max(peak, int(re.search(r"VmHWM:\s+(\d+)", status).group(1)))
            except (OSError, AttributeError):
                continue
        time.sleep(0.05)
    return peak / 1024


def _grade_peak(course: Path, submissions: Path, *options: str) -> float:
    """``grade`` группы; вернуть пиковую память проверяющего (главный процесс и работники), МБ."""
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    proc = subprocess.Popen([sys.executable, "-m", "autograde", "grade", LAB, "--submissions", str(submissions),
                             "--course", str(course), *options, *LIMITS], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = _peak_memory_mb(proc)
    assert proc.wait() == 0
    return peak


def test_oversized_replies_and_notebooks_cost_one_cached_row_each(lab, tmp_path):
    """Ответ ядра глубиной 200 000 и из миллиона пустых списков, ответ в 12 МБ, ноутбук в 29 МБ: по строке с
    причиной, которая называет работу (не «сбой проверки»), итог кэшируется, память проверяющего — в бюджете
    README, соседняя честная работа не задета."""
    from autograde.lab.notebook import MAX_FILE

    course = ac.course_copy(tmp_path / "course")
    cases = ac.oversized_cases(lab) + [ac.Case("full", {f"{LAB}.ipynb": ac.dumps(lab.notebook())}, "ok", 33, "",
                                               "полное решение", True)]
    assert len(cases[-2].files[f"{LAB}.ipynb"]) > MAX_FILE
    submissions = ac.write_class(tmp_path / "class", cases)
    peak = _grade_peak(course, submissions, "--workers", "2")
    rows = read_csv(course / "autograde" / "grades" / f"{LAB}.csv")
    for case in cases:
        row = rows[case.student_id]
        assert (row["status"], float(row["score"])) == (case.status, case.score), row
        assert case.message in row["message"] and "не вина работы" not in row["message"], row
    assert peak < GRADER_MEMORY_MB, f"пиковая память проверки {peak:.0f} МБ"
    result = cli("grade", LAB, "--submissions", submissions, "--course", course, *LIMITS)
    assert result.returncode == 0 and "В этом запуске проверено: 0" in result.stdout, result.stdout[-2000:]


def test_verdicts_do_not_depend_on_the_machines_load(lab, tmp_path):
    """Поток вывода, fork-бомба и бомба памяти останавливаются по байтам и лимитам, а не по загрузке: те же
    строки и тот же вывод в проверенном ноутбуке без нагрузки (один работник) и под двумя занятыми ядрами (два)."""
    course = ac.course_copy(tmp_path / "course")
    chosen = ("output_flood", "one_huge_print", "fork_bomb", "memory_bomb")
    cases = [c for c in ac.cases(lab, memory_mb=512, cell_timeout=CELL_TIMEOUT) if c.student_id in chosen]
    submissions = ac.write_class(tmp_path / "class", cases)
    grades = course / "autograde" / "grades" / f"{LAB}.csv"

    def printed() -> dict:
        return {sid: [o.get("text") for c in _graded(course, sid)["cells"] for o in c.get("outputs", [])]
                for sid in chosen}

    result = cli("grade", LAB, "--submissions", submissions, "--course", course, "--workers", "1", *LIMITS)
    assert result.returncode == 0, result.stderr[-2000:]
    quiet, quiet_out = read_csv(grades), printed()
    for case in cases:
        assert (quiet[case.student_id]["status"], case.message in quiet[case.student_id]["message"]) == (case.status, True)
    busy = [subprocess.Popen([sys.executable, "-c", "while True:\n    pass"]) for _ in range(2)]
    try:
        result = cli("grade", LAB, "--submissions", submissions, "--course", course, "--workers", "2", "--force",
                     *LIMITS)
    finally:
        for proc in busy:
            proc.kill()
            proc.wait()
    assert result.returncode == 0, result.stderr[-2000:]
    assert read_csv(grades) == quiet
    assert printed() == quiet_out


def test_output_flood_is_reported_as_a_flood_well_below_the_memory_limit(lab, tmp_path):
    """Ядро не копит поток вывода в памяти (буфер ipykernel, история вывода IPython): при лимите памяти 400 МБ
    поток вывода — всё ещё «вывел больше 2048 КБ», а не «ядро завершилось». Раньше ядро упиралось в лимит
    памяти уже при 400 МБ, а при 512 — под нагрузкой, и строка одной и той же работы менялась от прогона к прогону."""
    course = ac.course_copy(tmp_path / "course")
    cases = [c for c in ac.cases(lab, memory_mb=400, cell_timeout=CELL_TIMEOUT) if c.student_id == "output_flood"]
    submissions = ac.write_class(tmp_path / "class", cases)
    limits = [*LIMITS[:LIMITS.index("--memory")], "--memory", "400"]
    result = cli("grade", LAB, "--submissions", submissions, "--course", course, "--workers", "1", *limits)
    assert result.returncode == 0, result.stderr[-2000:]
    row = read_csv(course / "autograde" / "grades" / f"{LAB}.csv")["output_flood"]
    assert (row["status"], cases[0].message in row["message"]) == ("killed", True), row


def _graded(course: Path, student_id: str) -> dict:
    path = course / "autograde" / "autograded" / key(student_id) / LAB / f"{LAB}.ipynb"
    return json.loads(path.read_text(encoding="utf-8"))


def test_output_flood_stays_within_the_graders_memory_bound(lab, tmp_path):
    """Граница, обещанная в README: главный процесс и работники не держат больше ~ бюджета вывода — до 400 МБ."""
    course = ac.course_copy(tmp_path / "course")
    cases = [c for c in ac.hostile_cases(lab) if c.student_id in ("traceback_flood", "many_cells_flood")]
    submissions = ac.write_class(tmp_path / "class", cases)
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    proc = subprocess.Popen([sys.executable, "-m", "autograde", "grade", LAB, "--submissions", str(submissions),
                             "--course", str(course), "--workers", "2", *LIMITS], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    peak = _peak_memory_mb(proc)
    assert proc.wait() == 0
    rows = read_csv(course / "autograde" / "grades" / f"{LAB}.csv")
    assert {row["status"] for row in rows.values()} == {"killed"}
    assert peak < 400, f"пиковая память проверки {peak:.0f} МБ"
    sizes = [p.stat().st_size for p in (course / "autograde").rglob("*") if p.suffix in (".ipynb", ".html")]
    assert max(sizes) < 6 * 1024 * 1024  # проверенный ноутбук и отзыв — в пределах бюджета вывода


@pytest.mark.skipif(os.geteuid() != 0 or not Path("/usr/bin/python3").is_file(),
                    reason="нужен root (чтобы запустить песочницу от имени nobody) и системный python3")
def test_non_root_mode_holds_memory_disk_and_keyring(monkeypatch):
    """Без root (user namespace) — та же политика: /dev/shm, HOME и /tmp ограничены, корень и /dev только для
    чтения, связка ключей закрыта. Песочница собирается той же policy.bwrap_argv, что у проверки; внутри —
    системный python3 (Python курса лежит в /root, куда nobody не заходит). Программы autograde/inside —
    копией в открытой для nobody папке: клон курса (у CI — во временной папке 0700) nobody не читает, а
    настоящий преподаватель без root — хозяин своего клона."""
    import shutil
    import tempfile

    from autograde.sandbox import policy
    from autograde.sandbox.policy import HOME, Limits, bwrap_argv, sandbox_env, seccomp_program

    shared = Path(tempfile.mkdtemp(prefix="autograde-nonroot-"))
    shared.chmod(0o755)
    shutil.copytree(policy.INSIDE_HOST, shared / "inside", ignore=shutil.ignore_patterns("__pycache__"))
    for path in (shared / "inside", *(shared / "inside").rglob("*")):
        path.chmod(0o755 if path.is_dir() else 0o644)
    monkeypatch.setattr(policy, "INSIDE_HOST", shared / "inside")

    hog = next(c for c in ac.hostile_cases(ac.Lab()) if c.student_id == "disk_hog")
    code = json.loads(hog.files[f"{LAB}.ipynb"])["cells"][-1]["source"]
    code += ("\nimport ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
             "r = libc.syscall(248, b'user', b'k', b'v', 1, -4)\nprint('add_key', r, ctypes.get_errno())")
    pipes = [os.pipe() for _ in range(3)]
    (info_r, info_w), (sec_r, sec_w), (stub_r, stub_w) = pipes
    os.write(sec_w, seccomp_program())
    os.close(sec_w)
    os.close(stub_w)
    argv = bwrap_argv(files={}, workdir_name="probe", limits=Limits(), python_dirs=[], env=sandbox_env(HOME),
                      fds={"info": info_w, "seccomp": sec_r, "reference_stub": stub_r}, hide_reference=False,
                      command=["/usr/bin/python3", "-c", code])
    try:
        result = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *argv],
                                pass_fds=(info_w, sec_r, stub_r), capture_output=True, text=True, timeout=300)
    finally:
        for fd in (info_r, info_w, sec_r, stub_r):
            os.close(fd)
        shutil.rmtree(shared, ignore_errors=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "записано" not in result.stdout and result.stdout.count("не вышло") == 4, result.stdout
    assert "add_key -1 1" in result.stdout, result.stdout


def test_nbgrader_autograde_and_the_formgrader_button_refuse_unsandboxed_grading(graded, rows):
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "AUTOGRADE_ALLOW_NBGRADER")}
    result = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", LAB, "--student", "full", "--force",
                             "--log-level=ERROR"], cwd=graded["course"], env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode != 0
    assert "python -m autograde grade" in result.stdout + result.stderr


# ---------- команда отказывается работать, когда не может ----------
def test_grade_refuses_without_a_sandbox_and_says_how_to_install(graded, tmp_path):
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    result = cli("grade", LAB, "--submissions", graded["submissions"], "--course", graded["course"],
                 env={"PATH": str(fake_bin)})
    assert result.returncode == 3
    assert "bubblewrap" in result.stderr and "apt-get install bubblewrap" in result.stderr
    assert "--no-sandbox" in result.stderr


def test_the_folder_grading_starts_in_is_not_mounted_in_the_sandbox(tmp_path, monkeypatch):
    """``python -m autograde`` кладёт в sys.path текущую папку — у тестов и у преподавателя это корень
    репозитория с его solutions/. Песочница получает только то, что нужно новому интерпретатору."""
    from autograde.sandbox.policy import python_paths

    monkeypatch.syspath_prepend(str(tmp_path))
    mounted = python_paths([])
    inside = [m for m in mounted for folder in (tmp_path, ROOT / "solutions")
              if folder == Path(m) or Path(m) in folder.parents]
    assert not inside, mounted
    assert os.path.realpath(sys.prefix) in mounted


def test_a_python_folder_closed_to_others_stops_grading_with_the_fix(tmp_path, monkeypatch):
    """Под root ядро работает от своего uid: venv в папке 700 внутри не запустится. Вместо «ядро не
    запустилось (код 127)» у каждой работы — отказ до начала, с папкой и командой chmod."""
    from autograde import sandbox
    from autograde.sandbox import policy

    if sandbox_problem() is not None:
        pytest.skip(sandbox_problem())
    venv = tmp_path / "venv"
    (venv / "lib" / "site-packages").mkdir(parents=True)
    venv.chmod(0o700)
    monkeypatch.setattr(policy.os, "geteuid", lambda: 0)
    monkeypatch.setattr(policy, "interpreter_path", lambda executable: (str(venv / "lib" / "site-packages"),))
    monkeypatch.setattr(sandbox, "python_paths", lambda exclude: [str(venv)])
    problem = sandbox.check_sandbox([])
    assert problem is not None and f"chmod -R o+rX {venv}" in problem, problem
    venv.chmod(0o755)
    assert policy.closed_to_sandbox([str(venv)]) == []


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


def test_student_markup_is_made_safe_by_a_sanitizer():
    from autograde.render.sanitize import markdown_html, printable

    out = markdown_html("**жирно** <script>alert(1)</script> <img src=x onerror=alert(2)> [ссылка](javascript:alert(3))")
    assert "<strong>жирно</strong>" in out
    assert "<script" not in out and "onerror" not in out and "javascript:" not in out
    assert printable("a\x1b[2Jb\u202ec\x07") == "a\\x1b[2Jb\\u202ec\\x07"


def test_everything_the_grader_prints_agrees_in_number(graded, rows):
    """«33 балла», «5 работ»: сводка, отчёт, CSV и отзывы — без «33 баллов»."""
    from agreement import disagreements

    texts = {"сводка grade": graded["result"].stdout, "report": cli("report", LAB, "--course", graded["course"]).stdout,
             "CSV": graded["csv"].read_text(encoding="utf-8")}
    for sid in ("full", "partial", "untouched", "empty", "output_flood"):
        page = feedback_page(graded, sid)
        if page.is_file():
            texts[f"отзыв {sid}"] = html.unescape(re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8")))
    assert {name: disagreements(text) for name, text in texts.items() if disagreements(text)} == {}


def test_a_test_cell_marked_for_the_kernel_runs_there_and_others_run_in_the_judge(lab):
    """Ячейка теста с ``"autograde": {"kernel": true}`` исполняется в ядре слушателя (ей нужен его вывод);
    остальные тесты — у судьи, ячейки преподавателя — и там, и там."""
    from autograde.course import Course
    from autograde.lab.master import build_master

    course = Course.load(ROOT)
    master = build_master(course.lab(LAB).source_notebook, LAB, course.config)
    plan = {c.metadata.get("nbgrader", {}).get("grade_id"): master.where(c) for c in master.notebook.cells}
    assert plan["cosine_visible"] == "judge" and plan["cosine"] == "kernel" and plan["setup"] == "both"
    master.by_id["cosine_visible"].metadata["autograde"] = {"kernel": True}
    assert master.where(master.by_id["cosine_visible"]) == "kernel"
    assert {"cosine", "top_k", "search"} <= set(master.owned) and "np" not in master.owned

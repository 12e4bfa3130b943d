"""Приём сдач (``autograde/intake/submissions.py``) напрямую, в tmp_path: папка ``<id>/<LAB>/…`` и zip из LMS.

Обещания модуля: исходники только читаются (ссылки не разыменовываются, из архива ничего не
распаковывается), время сдачи — от LMS или файловой системы, одна плохая сдача — одна строка с
причиной. Шаблоны id в архивах LMS, битые записи (CRC, дата) и повторы имён в одном архиве
целиком проверяют tests/test_autograde.py и tests/test_grader_surfaces.py — здесь остальное.
"""

from __future__ import annotations

import json
import os
import zipfile
from datetime import datetime, timezone
from pathlib import Path
from types import SimpleNamespace

import pytest

from autograde.course import DEFAULT_ID_PATTERN, CourseError
from autograde.intake.history import History
from autograde.intake.roster import Roster
from autograde.intake.submissions import MAX_ID, admit, collect
from autograde.lab.notebook import MAX_FILE

LAB = "lab01_mini_rag"
NB = json.dumps({"cells": [{"cell_type": "code", "source": "x = 1", "metadata": {}}], "metadata": {},
                 "nbformat": 4, "nbformat_minor": 5}).encode()
WHEN = datetime(2026, 10, 1, 20, 30, tzinfo=timezone.utc)


def put(path: Path, data: bytes = NB, when: datetime = WHEN) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    os.utime(path, (when.timestamp(), when.timestamp()))
    return path


def by_id(subs):
    return {s.student_id: s for s in subs}


# ---------- папка сдач ----------
def test_a_collected_folder_gives_each_student_their_notebook_and_its_file_time(tmp_path):
    put(tmp_path / "petrov" / LAB / f"{LAB}.ipynb")
    put(tmp_path / "petrov" / LAB / "timestamp.txt", b"2020-01-01 00:00:00.000000 UTC")  # слушатель пишет сам — не верим
    put(tmp_path / "petrov" / LAB / ".ipynb_checkpoints" / f"{LAB}-checkpoint.ipynb", b"old")
    subs, warnings = collect(tmp_path, LAB)
    (sub,) = subs
    assert (sub.student_id, sub.data, sub.error, sub.notes, warnings) == ("petrov", NB, None, [], [])
    assert sub.submitted_at == WHEN and sub.source == str(tmp_path / "petrov" / LAB / f"{LAB}.ipynb")


def test_a_student_folder_without_this_lab_is_not_submitted_not_an_error(tmp_path):
    put(tmp_path / "petrov" / "lab02_own_docs" / "lab02_own_docs.ipynb")
    (sub,), _ = collect(tmp_path, LAB)
    assert sub.missing and sub.data is None and sub.error is None


def test_a_notebook_left_directly_in_the_student_folder_is_graded_with_a_note(tmp_path):
    put(tmp_path / "petrov" / f"{LAB}.ipynb")
    put(tmp_path / "petrov" / "deep" / "other.ipynb")  # вложенные папки в этом случае не смотрим
    (sub,), _ = collect(tmp_path, LAB)
    assert sub.data == NB and sub.notes == [f"ноутбук лежит в petrov/, а не в petrov/{LAB}/"]


def test_a_single_notebook_under_another_name_is_graded_with_a_note(tmp_path):
    put(tmp_path / "petrov" / LAB / "Копия lab01.ipynb")
    (sub,), _ = collect(tmp_path, LAB)
    assert sub.data == NB and sub.notes == [f"ноутбук называется Копия lab01.ipynb, а не {LAB}.ipynb: проверен он"]


def test_of_several_notebooks_the_exact_name_wins_and_without_it_none_is_guessed(tmp_path):
    put(tmp_path / "petrov" / LAB / f"{LAB}.ipynb")
    put(tmp_path / "petrov" / LAB / "draft.ipynb", b"draft")
    put(tmp_path / "ivanova" / LAB / "a.ipynb")
    put(tmp_path / "ivanova" / LAB / "b.ipynb")
    subs = by_id(collect(tmp_path, LAB)[0])
    assert subs["petrov"].data == NB and subs["petrov"].notes == ["лишние файлы не проверяются: draft.ipynb"]
    assert subs["ivanova"].data is None
    assert subs["ivanova"].error == (f"нет ноутбука {LAB}.ipynb: есть a.ipynb, b.ipynb — непонятно, какой проверять; "
                                     f"оставьте один ноутбук с именем {LAB}.ipynb")


def test_a_submission_without_a_notebook_is_one_row_with_the_reason(tmp_path):
    put(tmp_path / "petrov" / LAB / "answer.py", b"x = 1")
    (sub,), _ = collect(tmp_path, LAB)
    assert (sub.data, sub.error) == (None, f"нет ноутбука {LAB}.ipynb в сдаче")


def test_symbolic_links_are_never_followed(tmp_path):
    """Ссылка на чужой файл (или на решения преподавателя) не читается ни как папка, ни как ноутбук."""
    secret = put(tmp_path / "outside" / "solution.ipynb", b'{"secret": true}')
    submissions = tmp_path / "submitted"
    (submissions / "petrov" / LAB).mkdir(parents=True)
    (submissions / "petrov" / LAB / f"{LAB}.ipynb").symlink_to(secret)
    (submissions / "ivanova").mkdir()
    (submissions / "ivanova" / LAB).symlink_to(secret.parent, target_is_directory=True)
    (submissions / "sidorov").symlink_to(tmp_path / "outside", target_is_directory=True)
    subs, warnings = collect(submissions, LAB)
    subs = by_id(subs)
    assert subs["petrov"].data is None and subs["petrov"].notes == [f"символические ссылки не читаются: {LAB}.ipynb"]
    assert subs["ivanova"].missing and subs["ivanova"].data is None
    assert "sidorov" not in subs and warnings == ["sidorov: не папка слушателя — пропущено"]
    assert all(b"secret" not in (s.data or b"") for s in subs.values())


def test_stray_files_and_hidden_folders_at_the_top_are_skipped_with_a_warning_or_silently(tmp_path):
    put(tmp_path / "petrov" / LAB / f"{LAB}.ipynb")
    put(tmp_path / "grades.xlsx", b"x")
    put(tmp_path / ".git" / LAB / f"{LAB}.ipynb")
    put(tmp_path / "__MACOSX" / LAB / f"{LAB}.ipynb")
    subs, warnings = collect(tmp_path, LAB)
    assert [s.student_id for s in subs] == ["petrov"] and warnings == ["grades.xlsx: не папка слушателя — пропущено"]


def test_a_folder_or_file_name_not_in_utf8_costs_that_folder_or_file_only(tmp_path):
    """Имя в cp1251 с флешки: папку пропускаем с предупреждением (напечатать можно), остальных проверяем."""
    put(tmp_path / "petrov" / LAB / f"{LAB}.ipynb")
    bad = os.fsdecode("Петров".encode("cp1251"))
    put(tmp_path / bad / LAB / f"{LAB}.ipynb")
    put(tmp_path / "ivanova" / LAB / f"{LAB}.ipynb")
    put(tmp_path / "ivanova" / LAB / os.fsdecode("данные".encode("cp1251") + b".csv"), b"1")
    subs, warnings = collect(tmp_path, LAB)
    assert sorted(by_id(subs)) == ["ivanova", "petrov"] and by_id(subs)["ivanova"].data == NB
    assert len(warnings) == 1 and "имя папки не в UTF-8" in warnings[0]
    assert any("имена не в UTF-8 не читаются" in note for note in by_id(subs)["ivanova"].notes)
    for text in warnings + by_id(subs)["ivanova"].notes:
        text.encode("utf-8")  # печатается и пишется в CSV без UnicodeEncodeError


def test_a_very_long_folder_name_is_cut_to_the_id_limit(tmp_path):
    put(tmp_path / ("ж" * 120) / LAB / f"{LAB}.ipynb")  # 240 байт: длиннее в имени папки не бывает
    (sub,), _ = collect(tmp_path, LAB)
    assert sub.student_id == "ж" * 120 and MAX_ID == 200
    put(tmp_path / ("a" * 250) / LAB / f"{LAB}.ipynb")
    assert {len(s.student_id) for s in collect(tmp_path, LAB)[0]} == {120, MAX_ID}


def test_a_path_that_is_neither_a_folder_nor_a_zip_is_refused(tmp_path):
    put(tmp_path / "notes.txt", b"not a zip")
    for path in (tmp_path / "notes.txt", tmp_path / "absent"):
        with pytest.raises(FileNotFoundError, match="нет такой папки или zip-архива со сдачами"):
            collect(path, LAB)


# ---------- zip из LMS ----------
def make_zip(path: Path, entries: dict[str, bytes], when=(2026, 10, 1, 20, 30, 0), compression=zipfile.ZIP_STORED):
    with zipfile.ZipFile(path, "w", compression=compression) as archive:
        for name, data in entries.items():
            archive.writestr(zipfile.ZipInfo(name, date_time=when), data)
    return path


def test_zip_entries_are_read_in_memory_and_timed_by_the_archive(tmp_path):
    archive = make_zip(tmp_path / "lms.zip", {f"petrov/{LAB}.ipynb": NB})
    before = sorted(p.name for p in tmp_path.iterdir())
    (sub,), _ = collect(archive, LAB)
    assert (sub.student_id, sub.data, sub.source) == ("petrov", NB, f"lms.zip:petrov/{LAB}.ipynb")
    assert sub.submitted_at == WHEN
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # ничего не распаковано


def test_path_traversal_names_in_a_zip_never_become_a_student_or_a_file(tmp_path):
    archive = make_zip(tmp_path / "evil.zip", {
        f"../../evil_1_x/{LAB}.ipynb": NB, f"a/../../b_2_/{LAB}.ipynb": NB, f"/abs/{LAB}.ipynb": NB,
        f"petrov\\{LAB}.ipynb": NB, f"C:\\Users\\ivanova\\{LAB}.ipynb": NB,
    })
    subs, warnings = collect(archive, LAB)
    assert {s.student_id for s in subs} == {"petrov", "C:"}  # путь Windows — папки через «\»
    assert all(".." not in s.student_id and "/" not in s.student_id for s in subs)
    assert warnings == [f"/abs/{LAB}.ipynb: в имени нет id слушателя (шаблон {DEFAULT_ID_PATTERN}) — пропущено"]
    assert not (tmp_path.parent / "evil_1_x").exists() and not (tmp_path / "b_2_").exists()


def test_a_zip_entry_over_the_notebook_cap_costs_its_student_only(tmp_path):
    archive = make_zip(tmp_path / "big.zip", {f"petrov/{LAB}.ipynb": b" " * (MAX_FILE + 2**20), f"ivanova/{LAB}.ipynb": NB},
                       compression=zipfile.ZIP_DEFLATED)
    subs = by_id(collect(archive, LAB)[0])
    assert subs["petrov"].data is None and subs["petrov"].error.startswith(
        f"ноутбук {LAB}.ipynb больше предела 16 МБ (17.0 МБ) — работа не проверена: очистите выходы")
    assert subs["ivanova"].data == NB and subs["ivanova"].error is None


def test_a_zip_with_a_student_without_an_id_warns_and_keeps_the_others(tmp_path):
    archive = make_zip(tmp_path / "lms.zip", {"answer.ipynb": NB, f"petrov_7_assignsubmission_file_/{LAB}.ipynb": NB})
    subs, warnings = collect(archive, LAB)
    assert [s.student_id for s in subs] == ["petrov_7"]
    assert warnings == [f"answer.ipynb: в имени нет id слушателя (шаблон {DEFAULT_ID_PATTERN}) — пропущено"]


# ---------- приём в историю (admit) ----------
def intake(tmp_path, source: Path, roster: Roster | None = None):
    course = SimpleNamespace(settings=SimpleNamespace(id_pattern=DEFAULT_ID_PATTERN))
    lab = SimpleNamespace(name=LAB, history=tmp_path / "history", release_files=lambda: {"labkit.py": b""})
    return admit(course, lab, source, roster or Roster(tmp_path / "roster.json"))


def test_two_folders_of_one_student_keep_both_versions_and_grade_the_newer(tmp_path):
    roster = Roster(tmp_path / "roster.json")
    roster.students = [{"id": "petrov", "name": "Пётр Петров", "email": "", "aliases": ["ivan-hub"]}]
    roster.save()
    later = datetime(2026, 10, 2, 9, 0, tzinfo=timezone.utc)
    put(tmp_path / "in" / "ivan-hub" / LAB / f"{LAB}.ipynb", NB.replace(b"x = 1", b"x = 2"), later)
    put(tmp_path / "in" / "petrov" / LAB / f"{LAB}.ipynb", NB, WHEN)
    put(tmp_path / "in" / "petrov" / LAB / "labkit.py", b"")  # выданный с заданием файл — не «лишний»
    names, missing, warnings, notes = intake(tmp_path, tmp_path / "in", roster)
    assert names == {"petrov": "Пётр Петров"} and missing == set() and warnings == []
    history = History(tmp_path / "history")
    assert len(history.versions("petrov")) == 2 and history.newest("petrov").raw_id == "ivan-hub"
    assert notes == {"petrov": ["в этой выгрузке версия от 2026-10-01T20:30, а принята более новая от 2026-10-02T09:00: "
                                "проверяется новая"]}


def test_an_unknown_id_with_a_roster_is_named_and_a_missing_lab_is_not_submitted(tmp_path):
    roster = Roster(tmp_path / "roster.json")
    roster.students = [{"id": "petrov", "name": "", "email": "", "aliases": []}]
    roster.save()
    put(tmp_path / "in" / "sidorov" / LAB / f"{LAB}.ipynb")
    put(tmp_path / "in" / "petrov" / "lab02_own_docs" / "lab02_own_docs.ipynb")
    names, missing, _, notes = intake(tmp_path, tmp_path / "in", roster)
    assert names == {"petrov": "petrov", "sidorov": "sidorov"} and missing == {"petrov"}
    assert notes == {"sidorov": ["'sidorov' нет в списке группы (roster): добавьте псевдоним"]}
    assert History(tmp_path / "history").keys() == ["sidorov"]


def test_hostile_student_ids_get_hashed_history_folders_inside_the_history(tmp_path):
    archive = make_zip(tmp_path / "lms.zip", {
        f"Иван Петров_123_assignsubmission_file_/{LAB}.ipynb": NB,
        f"Esc\x1b]0;x\x07_7_assignsubmission_file_/{LAB}.ipynb": NB,
        f"..hidden_5_/{LAB}.ipynb": NB,
    })
    names, _, _, _ = intake(tmp_path, archive)
    assert set(names.values()) == {"Иван Петров_123", "Esc\x1b]0;x\x07_7"}
    history = tmp_path / "history"
    assert all(p.parent == history and p.name.startswith("id-") for p in history.iterdir())


def test_an_archive_that_cannot_be_read_stops_intake_with_the_path_and_reason(tmp_path):
    """Запись, чьё имя объявлено UTF-8, но им не является: архив не читается — причина, а не трассировка."""
    archive = make_zip(tmp_path / "lms.zip", {f"Жж/{LAB}.ipynb": NB})
    raw = archive.read_bytes()
    assert raw.count("Жж".encode()) == 2  # локальный заголовок и центральный каталог
    archive.write_bytes(raw.replace("Жж".encode(), b"\xff\xfe\xff\xfe"))
    with pytest.raises(CourseError, match=r"^Не прочитать сдачи .*lms\.zip: 'utf-8' codec can't decode"):
        intake(tmp_path, archive)
    with pytest.raises(CourseError, match=f"^Нет {tmp_path / 'absent'}: укажите папку <student_id>/{LAB}/ или zip из LMS"):
        intake(tmp_path, tmp_path / "absent")

"""Список группы (``autograde/intake/roster.py``) и ключ слушателя (``course.safe_key``) напрямую.

Кто есть кто: id из сдачи сводится к слушателю по id, имени, почте и псевдонимам (без регистра и
лишних пробелов), номер участника LMS снимается, только если имя в группе одно; незнакомое и
неоднозначное остаётся как пришло. Чужие имена (управляющие символы, «/», «..», сотни знаков) не
ломают ни список, ни имена папок. Захват личности через новый номер LMS целиком (admit) проверяет
tests/test_grader_surfaces.py — здесь правила ``identify`` по отдельности.
"""

from __future__ import annotations

import json
import re
import shlex
from types import SimpleNamespace

import pytest

from autograde.course import CourseError, safe_key
from autograde.intake.roster import IDENTITY_PREFIX, Roster, import_csv

STUDENTS = [
    {"id": "petrov", "name": "Иван Петров", "email": "Petrov@Example.org", "aliases": ["ivan-hub", "Иван Петров_123"]},
    {"id": "smirnova", "name": "Анна  Смирнова", "email": "", "aliases": []},
    {"id": "kuznetsov1", "name": "Олег Кузнецов", "email": "", "aliases": []},
    {"id": "kuznetsov2", "name": "Олег Кузнецов", "email": "", "aliases": []},  # тёзки
]


@pytest.fixture
def group(tmp_path):
    roster = Roster(tmp_path / "roster.json")
    roster.students = json.loads(json.dumps(STUDENTS))
    roster.save()
    return Roster(tmp_path / "roster.json")  # как при следующем запуске: с диска


class FakeHistory:
    """Версии сдач по ключам: только ``raw_id`` (id из сдачи, с номером LMS) — столько identify и нужно."""

    def __init__(self, **raw_ids):
        self.raw_ids = raw_ids

    def versions(self, key):
        return [SimpleNamespace(raw_id=raw) for raw in self.raw_ids.get(key, [])]


@pytest.mark.parametrize("raw_id, expected", [
    ("petrov", ("petrov", True)),
    ("Иван Петров", ("petrov", True)),
    ("  иван   ПЕТРОВ ", ("petrov", True)),  # регистр и пробелы не важны
    ("petrov@example.org", ("petrov", True)),
    ("ivan-hub", ("petrov", True)),
    ("Иван Петров_123", ("petrov", True)),
    ("Иван Петров_777", ("petrov", True)),  # номер участника снимается: имя в группе одно
    ("Анна Смирнова_5", ("smirnova", True)),
    ("Олег Кузнецов", ("Олег Кузнецов", False)),  # тёзки: не угадываем
    ("Олег Кузнецов_9", ("Олег Кузнецов_9", False)),
    ("sidorov", ("sidorov", False)),
    ("petrov_x", ("petrov_x", False)),  # не номер — не снимается
])
def test_a_submission_id_resolves_to_one_student_or_stays_as_it_came(group, raw_id, expected):
    assert group.resolve(raw_id) == expected


def test_an_alias_shared_by_two_students_resolves_to_neither(group):
    group.students[1]["aliases"].append("ivan-hub")
    group.save()
    assert group.resolve("ivan-hub") == ("ivan-hub", False)


@pytest.mark.parametrize("raw_id", [
    "petrov\x1b]0;title\x07", "../../etc/passwd", "petrov/../smirnova", "C:\\Users\\petrov", "petrov\x00",
    "\u202epetrov", "Ж" * 5000, "", " ",
])
def test_hostile_ids_are_never_resolved_to_someone_and_get_a_plain_folder_key(group, raw_id):
    assert group.resolve(raw_id) == (raw_id, False)
    key = safe_key(raw_id)
    assert re.fullmatch(r"id-[0-9a-f]{16}", key)
    assert safe_key(raw_id) == key and safe_key(raw_id + "x") != key  # ключ постоянный и у каждого свой


@pytest.mark.parametrize("student_id, plain", [
    ("petrov", True), ("petrov_123", True), ("a.b-c_d", True), ("a" * 64, True),
    ("a" * 65, False), ("Petrov", False), ("..", False), ("a..b", False), (".hidden", False), ("-rf", False),
    ("иван", False), ("petrov ", False),
])
def test_a_simple_id_is_its_own_folder_name_and_anything_else_is_hashed(student_id, plain):
    """Простые id видны в именах папок как есть; остальное — «id-» и хеш: ни «..», ни кириллица в 240 байт не ломают путь."""
    assert (safe_key(student_id) == student_id) is plain
    assert "/" not in safe_key(student_id) and len(safe_key(student_id)) <= 64


def test_display_name_is_the_roster_name_or_the_id(group):
    assert group.display("petrov") == "Иван Петров" and group.display("sidorov") == "sidorov"
    assert Roster(group.path.parent / "none.json").display("petrov") == "petrov" and not Roster(group.path.parent / "x")


# ---------- номер участника LMS — часть личности ----------
def test_a_known_number_and_a_first_single_number_are_accepted_silently(group):
    history = FakeHistory(petrov=["Иван Петров_777"])
    assert group.identify(["Иван Петров_777"], history) == {"Иван Петров_777": ("petrov", True, "")}
    assert group.identify(["Анна Смирнова_5"], FakeHistory()) == {"Анна Смирнова_5": ("smirnova", True, "")}
    assert group.identify(["Иван Петров_123"], history)["Иван Петров_123"] == ("petrov", True, "")  # псевдоним как есть


def test_a_known_name_with_a_new_number_stands_apart_with_a_safe_merge_command(group):
    history = FakeHistory(petrov=["Иван Петров_777"])
    (student_id, known, note), = group.identify(["Иван Петров_555"], history).values()
    assert (student_id, known) == ("Иван Петров_555", False)
    assert note.startswith(f"{IDENTITY_PREFIX}: сдача подписана именем petrov из списка группы, но с номером "
                           "участника LMS 555, а petrov сдаёт эту лабораторную под номером 777.")
    command = note.split("подтвердите: ")[1]
    assert shlex.split(command) == ["python", "-m", "autograde", "roster", "merge", "Иван Петров_555", "petrov"]


def test_a_merge_command_for_a_hostile_name_pastes_as_one_argument(group):
    """Имя из LMS попадает в команду для преподавателя: «;», «$()» и кавычки не исполняются при вставке в терминал."""
    group.students[1]["aliases"].append("x'; rm -rf ~; echo '")
    group.save()
    raw = "x'; rm -rf ~; echo '_9"
    (_, _, note), = group.identify([raw], FakeHistory(smirnova=["Анна Смирнова_5"])).values()
    assert shlex.split(note.split("подтвердите: ")[1])[-2:] == [raw, "smirnova"]


def test_two_numbers_for_one_name_in_one_upload_both_stand_apart(group):
    out = group.identify(["Анна Смирнова_5", "Анна Смирнова_6"], FakeHistory())
    assert [value[:2] for value in out.values()] == [("Анна Смирнова_5", False), ("Анна Смирнова_6", False)]
    assert "то же имя пришло и с номером 6" in out["Анна Смирнова_5"][2]
    assert "то же имя пришло и с номером 5" in out["Анна Смирнова_6"][2]


# ---------- импорт CSV ----------
def test_csv_import_reads_aliases_and_survives_a_restart(tmp_path):
    csv = tmp_path / "group.csv"
    csv.write_text("\ufeffid,name,email,aliases\n petrov ,Иван Петров,p@example.org, ivan-hub ; Иван Петров_123 ;\n"
                   "smirnova,,,\n", encoding="utf-8")
    roster = Roster(tmp_path / "roster.json")
    assert import_csv(roster, csv) == 2
    again = Roster(tmp_path / "roster.json")
    assert again.students[0] == {"id": "petrov", "name": "Иван Петров", "email": "p@example.org",
                                 "aliases": ["ivan-hub", "Иван Петров_123"]}
    assert again.resolve("IVAN-HUB") == ("petrov", True) and again.resolve("smirnova") == ("smirnova", True)


@pytest.mark.parametrize("text, message", [
    ("id,name\npetrov,A\n,B\n", "строка 3: пустой id."),
    ("id,name\npetrov,A\npetrov,B\n", "строка 3: id 'petrov' повторяется."),
    ("name,email\nA,a@x\n", "нет колонки id: нужен CSV с колонками id,name,email,aliases."),
    ("", "нет колонки id"),
])
def test_a_bad_csv_is_refused_with_the_line_and_the_old_roster_is_kept(tmp_path, text, message):
    csv = tmp_path / "group.csv"
    csv.write_text(text, encoding="utf-8")
    roster = Roster(tmp_path / "roster.json")
    roster.students = [{"id": "old", "name": "", "email": "", "aliases": []}]
    roster.save()
    with pytest.raises(CourseError) as info:
        import_csv(roster, csv)
    assert message in str(info.value)
    assert [s["id"] for s in Roster(tmp_path / "roster.json").students] == ["old"]


def test_a_missing_csv_or_a_damaged_roster_file_is_a_clear_error(tmp_path):
    with pytest.raises(CourseError, match="Нет файла"):
        import_csv(Roster(tmp_path / "roster.json"), tmp_path / "absent.csv")
    (tmp_path / "roster.json").write_text("{обрыв", encoding="utf-8")
    with pytest.raises(CourseError, match=r"roster\.json повреждён .*: импортируйте список заново \(roster import\)"):
        Roster(tmp_path / "roster.json")


@pytest.mark.parametrize("students, why", [
    ({"id": "petrov"}, "«students» — не список"),
    (["petrov"], "слушатель №1: нет текстового «id»"),
    ([{"id": 7}], "слушатель №1: нет текстового «id»"),
    ([{"id": "petrov", "name": ["Пётр"]}], "«name» и «email» должны быть строками"),
    ([{"id": "petrov", "aliases": "petya"}], "«aliases» должен быть списком строк"),  # не буквы p, e, t…
    ([{"id": "petrov", "aliases": [None]}], "«aliases» должен быть списком строк"),
])
def test_a_hand_edited_roster_of_the_wrong_shape_is_refused_with_what_is_wrong(tmp_path, students, why):
    """roster.json правят руками: не та форма — понятный отказ, а не трассировка или алиас из отдельных букв."""
    (tmp_path / "roster.json").write_text(json.dumps({"students": students}, ensure_ascii=False), encoding="utf-8")
    with pytest.raises(CourseError, match="roster.json повреждён") as info:
        Roster(tmp_path / "roster.json")
    assert why in str(info.value)

"""Список группы: кто есть кто под всеми именами, под которыми слушатель приходит в сдачах.

``python -m autograde roster import group.csv`` — CSV с колонками ``id,name,email,aliases``
(aliases — через «;»: папка на JupyterHub, имя в LMS, номера участника LMS). Список хранится в
``autograde/roster.json`` (вне git: это личные данные). Сдача «Иван Петров_123» из Moodle, папка
``petrov`` и запись ``ivan@example.org`` сводятся к одному слушателю; номер участника Moodle
разный в каждом задании, поэтому имя из LMS сверяется и без номера, если оно в группе одно.

Номер участника — часть личности: внутри одного задания он у слушателя один. Если знакомое имя
приходит с номером, под которым этот слушатель задание не сдавал (его сдачи в истории — под
другим номером, или в одной выгрузке одно имя пришло с двумя номерами), сдача не сливается с его
работой: она — отдельная строка с замечанием для преподавателя, а работа слушателя не тронута.
Слушатель мог сменить имя в LMS на чужое; если же это правда он, преподаватель подтверждает это
командой ``roster merge``.
``roster merge ИЗ В`` сливает две записи (с историей сдач и итогами), ``roster remove ID``
убирает слушателя из списка. Без списка id слушателя — то, что пришло в сдаче.
"""

from __future__ import annotations

import csv
import json
import re
import shlex
from pathlib import Path

from autograde.course import Course, CourseError, Lab, lab_names, safe_key
from autograde.lab.verdict import IDENTITY_PREFIX
from autograde.store.atomic import atomic_write

_NUMBER_SUFFIX = re.compile(r"^(?P<name>.+?)_(?P<number>\d+)$")


def _norm(text: str) -> str:
    return " ".join(str(text).split()).casefold()


def _check_shape(students) -> None:
    """Список группы, поправленный руками: каждый слушатель — объект с текстовым id, имена — строки и список строк."""
    if not isinstance(students, list):
        raise TypeError("«students» — не список")
    for number, student in enumerate(students, 1):
        if not isinstance(student, dict) or not isinstance(student.get("id"), str) or not student["id"].strip():
            raise TypeError(f"слушатель №{number}: нет текстового «id»")
        if any(not isinstance(student.get(key, ""), str) for key in ("name", "email")):
            raise TypeError(f"слушатель {student['id']}: «name» и «email» должны быть строками")
        aliases = student.get("aliases", [])
        if not isinstance(aliases, list) or any(not isinstance(alias, str) for alias in aliases):
            raise TypeError(f"слушатель {student['id']}: «aliases» должен быть списком строк")


class Roster:
    """Слушатели группы и их другие имена."""

    def __init__(self, path: Path):
        self.path = path
        self.students: list[dict] = []
        if path.is_file():
            try:
                self.students = json.loads(path.read_text(encoding="utf-8"))["students"]
                _check_shape(self.students)
            except (ValueError, KeyError, TypeError) as exc:
                raise CourseError(f"{path} повреждён ({exc}): импортируйте список заново (roster import).") from None
        self._index()

    def _index(self) -> None:
        self.by_alias: dict[str, set[str]] = {}
        for student in self.students:
            names = [student["id"], student.get("name", ""), student.get("email", ""), *student.get("aliases", [])]
            for name in filter(None, names):
                self.by_alias.setdefault(_norm(name), set()).add(student["id"])

    def __bool__(self) -> bool:
        return bool(self.students)

    def resolve(self, raw_id: str) -> tuple[str, bool]:
        """(id слушателя, найден ли в списке). Неизвестный id остаётся как есть."""
        for candidate in (raw_id, *(m.group("name") for m in [_NUMBER_SUFFIX.match(raw_id)] if m)):
            found = self.by_alias.get(_norm(candidate), set())
            if len(found) == 1:
                return next(iter(found)), True
        return raw_id, False

    def identify(self, raw_ids: list[str], history) -> dict[str, tuple[str, bool, str]]:
        """Личности сдач одной выгрузки: {id из сдачи: (id слушателя, найден ли в списке, замечание или "")}.

        Имя из списка группы с номером участника LMS, которого у этого слушателя в ``history`` (история
        сдач этой лабораторной) нет, не сводится к нему: id остаётся своим, замечание говорит, как
        подтвердить (``roster merge``). Пока номеров в истории нет, принимается единственный номер выгрузки.
        """
        found, claims = {}, {}  # claims: id слушателя → номера LMS, с которыми его имя пришло в этой выгрузке
        for raw_id in raw_ids:
            student_id, known = self.resolve(raw_id)
            match = _NUMBER_SUFFIX.match(raw_id)
            stripped = known and match and len(self.by_alias.get(_norm(raw_id), ())) != 1  # найден только без номера
            number = match.group("number") if stripped else None
            found[raw_id] = (student_id, known, number)
            if number is not None:
                claims.setdefault(student_id, set()).add(number)
        out = {}
        for raw_id, (student_id, known, number) in found.items():
            recorded = _numbers(history, safe_key(student_id)) if number is not None else set()
            others = sorted(claims.get(student_id, set()) - {number}, key=int)
            if number is None or number in recorded or (not recorded and not others):
                out[raw_id] = (student_id, known, "")
                continue
            confirm = f"python -m autograde roster merge {shlex.quote(raw_id)} {shlex.quote(student_id)}"
            if recorded:
                listed = sorted(recorded, key=int)
                why = (f"а {student_id} сдаёт эту лабораторную под {'номером' if len(listed) == 1 else 'номерами'} "
                       f"{', '.join(listed)}")
            else:
                why = (f"а в этой выгрузке то же имя пришло и с {'номером' if len(others) == 1 else 'номерами'} "
                       f"{', '.join(others)}: чья это работа, не угадать")
            out[raw_id] = (raw_id, False, f"{IDENTITY_PREFIX}: сдача подписана именем {student_id} из списка группы, "
                                          f"но с номером участника LMS {number}, {why}. Работа не слита с работой "
                                          f"{student_id} и стоит отдельной строкой. Если это тот же слушатель, "
                                          f"подтвердите: {confirm}")
        return out

    def display(self, student_id: str) -> str:
        for student in self.students:
            if student["id"] == student_id:
                return student.get("name") or student_id
        return student_id

    def save(self) -> None:
        atomic_write(self.path, json.dumps({"students": self.students}, ensure_ascii=False, indent=1))
        self._index()


def _numbers(history, key: str) -> set[str]:
    """Номера участника LMS, под которыми слушатель с ключом ``key`` уже сдавал эту лабораторную."""
    return {m.group("number") for v in history.versions(key) for m in [_NUMBER_SUFFIX.match(v.raw_id)] if m}


def load(course: Course) -> Roster:
    return Roster(course.roster)


def import_csv(roster: Roster, path: Path) -> int:
    if not path.is_file():
        raise CourseError(f"Нет файла {path}.")
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f))
    if not rows or "id" not in rows[0]:
        raise CourseError(f"В {path} нет колонки id: нужен CSV с колонками id,name,email,aliases.")
    students, seen = [], set()
    for number, row in enumerate(rows, start=2):
        student_id = (row.get("id") or "").strip()
        if not student_id:
            raise CourseError(f"{path}, строка {number}: пустой id.")
        if student_id in seen:
            raise CourseError(f"{path}, строка {number}: id {student_id!r} повторяется.")
        seen.add(student_id)
        aliases = [a.strip() for a in (row.get("aliases") or "").split(";") if a.strip()]
        students.append({"id": student_id, "name": (row.get("name") or "").strip(),
                         "email": (row.get("email") or "").strip(), "aliases": aliases})
    roster.students = students
    roster.save()
    return len(students)


def merge(course: Course, roster: Roster, source: str, target: str) -> None:
    """Сдачи и итоги записи ``source`` переходят к ``target``; ``source`` становится его псевдонимом."""
    from autograde.intake.history import History

    student = next((s for s in roster.students if s["id"] == target), None)
    if student is None:
        student = {"id": target, "name": "", "email": "", "aliases": []}
        roster.students.append(student)
    roster.students = [s for s in roster.students if s["id"] != source or s is student]
    if source not in student["aliases"]:
        student["aliases"].append(source)
    roster.save()
    for lab in lab_names(course.root):
        paths = Lab(course, lab)
        History(paths.history).move(safe_key(source), safe_key(target))
        stale = paths.result_file(safe_key(source))
        if stale.is_file():
            stale.unlink()  # итог пересчитается при следующем grade — уже под новым ключом

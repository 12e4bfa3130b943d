"""Оценки в LMS: ``python -m autograde export [--format wide|moodle|canvas] [--out FILE]``.

Строка на слушателя (и на тех, кто в списке группы, но ничего не сдал), колонка на лабораторную:
автобаллы (после штрафа за опоздание, с поправками преподавателя в formgrader) плюс ручные баллы,
и рядом флаг «ждёт ручной проверки» — незаконченная проверка не выдаётся за ноль молча.

* ``wide`` — для себя: id, имя, email, по две колонки на лабораторную (баллы и ``<lab>_pending``) и итог;
* ``moodle`` — для «Импорт оценок → CSV» в Moodle: «Адрес электронной почты» и колонка на
  лабораторную (при импорте сопоставьте email с полем «Адрес электронной почты», а колонки — с
  элементами оценивания);
* ``canvas`` — для Gradebook → Import в Canvas: Student, ID, SIS User ID, SIS Login ID, Section и
  колонка на лабораторную.

Пишет его ``results.csv_text``, как и CSV оценок группы: имя, id или email слушателя, который начинается
с ``=``, ``+``, ``-``, ``@``, табуляции или CR, получает апостроф впереди — таблица и LMS не примут его за
формулу; баллы остаются числами.

По умолчанию файл ложится в ``autograde/exports/`` — вне опубликованной книги и вне git (.gitignore):
оценки слушателей не должны оказаться в репозитории курса.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from autograde.course import Course, CourseError, Lab, add_course_option, lab_names, safe_key
from autograde.intake import roster
from autograde.store.atomic import atomic_write
from autograde.store.results import csv_text, load

NAME = "export"
HELP = "выгрузить оценки всех лабораторных в CSV для LMS (Moodle, Canvas) или таблицей"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=("wide", "moodle", "canvas"), default="wide",
                        help="wide — таблица с флагами проверки; moodle, canvas — для импорта в LMS")
    parser.add_argument("--roster", type=Path, metavar="FILE",
                        help="список группы CSV (id,name,email,aliases) — сначала импортировать его")
    parser.add_argument("--out", type=Path, metavar="FILE", help="куда писать (по умолчанию autograde/exports/)")
    add_course_option(parser)


def collect(course: Course) -> tuple[list[str], dict[str, dict], dict[str, dict]]:
    """(лабораторные, {ключ: {lab: (баллы, ждёт ли ручной проверки)}}, {ключ: {id, name, email}})."""
    from nbgrader.api import MissingEntry

    from autograde.store.gradebook import open_gradebook

    labs = lab_names(course.root)
    scores: dict[str, dict] = {}
    people: dict[str, dict] = {}
    group = roster.load(course)
    for student in group.students:
        people[safe_key(student["id"])] = {"id": student["id"], "name": student.get("name", ""),
                                           "email": student.get("email", "")}
    with open_gradebook(course.db_url, course.course_id) as gb:
        for lab in labs:
            for result in load(Lab(course, lab).results):
                people.setdefault(result.student, {"id": result.display_id, "name": "", "email": ""})
                if not result.counted:
                    continue
                try:
                    notebook = gb.find_submission_notebook(lab, lab, result.student)
                except MissingEntry:
                    continue
                total = sum(g.score or 0 for g in notebook.grades) - (result.penalty or 0)
                pending = any(g.needs_manual_grade for g in notebook.grades) or any(
                    g.auto_score is None and g.manual_score is None for g in notebook.grades)
                scores.setdefault(result.student, {})[lab] = (max(0.0, total), pending)
    return labs, scores, people


def table(labs: list[str], scores: dict, people: dict, style: str) -> str:
    """Таблица для LMS или для себя; пишет её ``csv_text`` — ни одна ячейка не станет формулой."""
    if style == "wide":
        rows = [["student_id", "name", "email", *[c for lab in labs for c in (lab, f"{lab}_pending")], "total"]]
    elif style == "moodle":
        rows = [["Адрес электронной почты", "ID", *labs]]
    else:
        rows = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section", *labs]]
    for key in sorted(people, key=lambda k: (people[k]["name"] or people[k]["id"]).casefold()):
        person = people[key]
        marks = scores.get(key, {})
        cells = [marks[lab][0] if lab in marks else "" for lab in labs]
        if style == "wide":
            flags = [1 if lab in marks and marks[lab][1] else "" for lab in labs]
            total = sum(score for score, _ in marks.values())
            rows.append([person["id"], person["name"], person["email"],
                         *[v for pair in zip(cells, flags) for v in pair], total])
        elif style == "moodle":
            rows.append([person["email"], person["id"], *cells])
        else:
            rows.append([person["name"] or person["id"], "", person["id"], person["email"], "", *cells])
    return csv_text(rows)


def run(args: argparse.Namespace) -> int:
    course = Course.load(args.course)
    if args.roster is not None:
        roster.import_csv(roster.load(course), args.roster)
    labs, scores, people = collect(course)
    if not people:
        raise CourseError("Выгружать нечего: нет ни итогов проверки, ни списка группы (roster import).")
    if args.format == "moodle" and not any(p["email"] for p in people.values()):
        raise CourseError("Для Moodle нужны email слушателей: импортируйте список группы (--roster group.csv).")
    out = args.out or course.exports / f"grades-{args.format}.csv"
    atomic_write(out, table(labs, scores, people, args.format))
    pending = sum(any(flag for _, flag in marks.values()) for marks in scores.values())
    print(f"Оценки ({len(people)} в таблице, лабораторных: {len(labs)}) — {out}."
          + (f" Ручная проверка не закончена у {pending}: смотрите колонки *_pending." if pending else ""))
    return 0

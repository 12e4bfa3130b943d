"""``python -m autograde roster import|merge|remove|show``: список группы из командной строки.

Что такое список группы и как по нему узнаются слушатели — ``autograde/intake/roster.py``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from autograde.course import Course, CourseError, add_course_option
from autograde.intake.roster import import_csv, load, merge
from autograde.render.sanitize import printable

NAME = "roster"
HELP = "список группы: импорт CSV, слияние двух записей одного слушателя, удаление"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True, metavar="ДЕЙСТВИЕ")
    imp = sub.add_parser("import", help="загрузить список группы из CSV: id,name,email,aliases")
    imp.add_argument("file", type=Path, metavar="FILE")
    merge = sub.add_parser("merge", help="ИЗ — та же персона, что В: перенести сдачи и итоги, ИЗ станет псевдонимом "
                           "(так подтверждают и новый номер участника LMS)")
    merge.add_argument("source", metavar="ИЗ")
    merge.add_argument("target", metavar="В")
    remove = sub.add_parser("remove", help="убрать слушателя из списка группы (его сдачи и итоги остаются)")
    remove.add_argument("student", metavar="ID")
    sub.add_parser("show", help="напечатать список группы")
    for action in (imp, merge, remove):
        add_course_option(action)
    parser.set_defaults(course=None)


def run(args: argparse.Namespace) -> int:
    course = Course.load(args.course)
    roster = load(course)
    if args.action == "import":
        count = import_csv(roster, args.file)
        print(f"Список группы: {count} — сохранён в {roster.path.relative_to(course.root)}. "
              "Запустите grade, чтобы сдачи сопоставились со списком.")
    elif args.action == "merge":
        merge(course, roster, args.source, args.target)
        print(f"{args.source} → {args.target}: сдачи перенесены; запустите grade, чтобы пересчитать итоги.")
    elif args.action == "remove":
        before = len(roster.students)
        roster.students = [s for s in roster.students if s["id"] != args.student]
        if len(roster.students) == before:
            raise CourseError(f"В списке группы нет {args.student!r}.")
        roster.save()
        print(f"{args.student} убран из списка группы (его сдачи и итоги остались в autograde/work/).")
    else:
        for student in roster.students:  # псевдонимы добавляет и merge — из имён, пришедших в сдачах
            fields = [student["id"], student.get("name", ""), student.get("email", ""), "; ".join(student["aliases"])]
            print("\t".join(printable(field) for field in fields))
    return 0

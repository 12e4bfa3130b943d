"""``python -m autograde`` — командная строка лабораторных: подкоманда на модуль.

Чтобы добавить команду (например, ``grade`` или ``report``), напиши модуль в ``commands/`` с ``NAME``, ``HELP``,
``add_arguments(parser)`` и ``run(args) -> int`` и впиши его в ``COMMANDS``.
"""

from __future__ import annotations

import argparse
import sys

from autograde.commands import check, export, grade, release, report, roster
from autograde.course import CourseError

# порядок — порядок в справке
COMMANDS = [release, check, grade, report, export, roster]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m autograde",
        description="Лабораторные курса «Мини-RAG руками»: выдача, самопроверка, проверка группы, оценки.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="КОМАНДА")
    for module in COMMANDS:
        sub = commands.add_parser(module.NAME, help=module.HELP, description=module.__doc__,
                                  formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(sub)
        sub.set_defaults(run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.run(args))
    except CourseError as exc:
        print(f"Ошибка: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""Сгенерировать выданные версии лабораторных: ``labs/<lab>/`` из ``solutions/<lab>/``.

Генерирует nbgrader (``nbgrader generate_assignment LAB --force``) по настройкам
``nbgrader_config.py``: решения заменяются заготовкой, скрытые тесты вырезаются, выходы
стираются, инструкции и тесты блокируются. Заодно nbgrader записывает задание в базу оценок
``autograde/gradebook.db`` — она нужна автопроверке. labs/ руками не правят: после любой
правки solutions/ запусти эту команду ещё раз.

Примеры:
    python -m autograde release                    # все лабораторные
    python -m autograde release lab01_mini_rag     # одна
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from autograde.course import RELEASE, ROOT, SECRET_MARKERS, SOLUTIONS, CourseError, Lab, add_course_option, lab_names
from minirag import plural

NAME = "release"
HELP = "заново сгенерировать labs/ из solutions/ (nbgrader generate_assignment)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("labs", nargs="*", metavar="LAB", help="какие лабораторные (по умолчанию все из solutions/)")
    add_course_option(parser)


def release(labs: list[str] | None = None, root: Path | None = None, log=print) -> list[Path]:
    """Сгенерировать labs/<lab>/ для каждой лабораторной и вернуть пути выданных ноутбуков.

    nbgrader генерирует во временную папку рядом с labs/; прежняя labs/<lab>/ заменяется только
    целиком готовой и проверенной новой (нет маркеров решений и скрытых тестов). Сбой —
    сообщение, а выданная версия остаётся прежней. Пример: ``release(["lab01_mini_rag"])``.
    """
    from autograde.course import Course
    from autograde.intake.history import releases
    from autograde.lab.master import build_master
    from autograde.store.gradebook import create

    root = Path(root or ROOT).resolve()
    known = lab_names(root)
    wanted = list(labs) if labs else known
    unknown = [lab for lab in wanted if lab not in known]
    if unknown:
        raise CourseError(f"Нет лабораторных {', '.join(unknown)} в {root / SOLUTIONS}. Есть: {', '.join(known)}.")
    target = root / RELEASE
    target.mkdir(exist_ok=True)
    course = Course.load(root)
    create(course.db_url)  # новую базу — сами: nbgrader создал бы её, запуская программу alembic (секунды)
    released = []
    for lab in wanted:
        with tempfile.TemporaryDirectory(prefix=".release-", dir=target) as tmp:
            result = subprocess.run(
                [sys.executable, "-m", "nbgrader", "generate_assignment", lab, "--force", "--log-level=WARN",
                 f"--CourseDirectory.release_directory={tmp}"],
                cwd=root, capture_output=True, text=True,
            )
            fresh = Path(tmp) / lab
            if result.returncode != 0 or not (fresh / f"{lab}.ipynb").is_file():
                raise CourseError(f"nbgrader не смог сгенерировать {lab} (выданная версия в {RELEASE}/{lab} не тронута):\n"
                                  f"{result.stdout}{result.stderr}")
            leaked = sorted({m for path in fresh.rglob("*") if path.is_file()
                             for m in SECRET_MARKERS if m in path.read_text(encoding="utf-8", errors="ignore")})
            if leaked:
                raise CourseError(f"В новой выданной версии {lab} остались маркеры {leaked}: решение утекло бы. "
                                  f"Проверь разметку ячеек в {root / SOLUTIONS / lab}; {RELEASE}/{lab} не тронута.")
            old = target / f".{lab}.old"
            shutil.rmtree(old, ignore_errors=True)
            if (target / lab).exists():
                (target / lab).rename(old)
            fresh.rename(target / lab)
            shutil.rmtree(old, ignore_errors=True)
        notebook = target / lab / f"{lab}.ipynb"
        master = build_master(root / SOLUTIONS / lab / f"{lab}.ipynb", lab, course.config)
        releases(Lab(course, lab).releases, master)  # тесты этого выпуска — «свои» для слушателей
        log(f"{lab}: {notebook.relative_to(root)}")
        released.append(notebook)
    if not labs:  # полная выдача: убрать из labs/ то, чего больше нет в solutions/
        for stale in sorted(target.iterdir()):
            if stale.is_dir() and not stale.name.startswith(".") and stale.name not in known:
                shutil.rmtree(stale)
                log(f"{stale.name}: удалена из {RELEASE}/ — её нет в {SOLUTIONS}/")
    return released


def run(args: argparse.Namespace) -> int:
    released = release(args.labs, args.course)
    count = plural(len(released), "лабораторная", "лабораторные", "лабораторных")
    print(f"Готово: {count} в {RELEASE}/. Не правь их руками — правь {SOLUTIONS}/ и запускай release.")
    return 0

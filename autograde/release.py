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
from pathlib import Path

from .course import RELEASE, ROOT, SECRET_MARKERS, SOLUTIONS, CourseError, lab_names

NAME = "release"
HELP = "заново сгенерировать labs/ из solutions/ (nbgrader generate_assignment)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("labs", nargs="*", metavar="LAB", help="какие лабораторные (по умолчанию все из solutions/)")
    parser.add_argument("--course", type=Path, default=ROOT, metavar="ПАПКА",
                        help="корень каталога курса с nbgrader_config.py (по умолчанию этот репозиторий)")


def release(labs: list[str] | None = None, root: Path = ROOT, log=print) -> list[Path]:
    """Сгенерировать labs/<lab>/ для каждой лабораторной и вернуть пути выданных ноутбуков.

    Пример: ``release(["lab01_mini_rag"])``.
    """
    root = Path(root).resolve()
    known = lab_names(root)
    wanted = list(labs) if labs else known
    unknown = [lab for lab in wanted if lab not in known]
    if unknown:
        raise CourseError(f"Нет лабораторных {', '.join(unknown)} в {root / SOLUTIONS}. Есть: {', '.join(known)}.")
    released = []
    for lab in wanted:
        result = subprocess.run(
            [sys.executable, "-m", "nbgrader", "generate_assignment", lab, "--force", "--log-level=WARN"],
            cwd=root, capture_output=True, text=True,
        )
        if result.returncode != 0:
            raise CourseError(f"nbgrader не смог сгенерировать {lab}:\n{result.stdout}{result.stderr}")
        notebook = root / RELEASE / lab / f"{lab}.ipynb"
        if not notebook.is_file():
            raise CourseError(f"nbgrader отработал, но {notebook} не появился: проверь nbgrader_config.py.")
        leaked = sorted({m for path in notebook.parent.rglob("*") if path.is_file()
                         for m in SECRET_MARKERS if m in path.read_text(encoding="utf-8", errors="ignore")})
        if leaked:
            shutil.rmtree(notebook.parent)
            raise CourseError(f"В выданной версии {lab} остались маркеры {leaked}: решение утекло бы. "
                              f"Проверь разметку ячеек в {root / SOLUTIONS / lab}; labs/{lab} удалена.")
        log(f"{lab}: {notebook.relative_to(root)}")
        released.append(notebook)
    if not labs:  # полная выдача: убрать из labs/ то, чего больше нет в solutions/
        for stale in sorted((root / RELEASE).iterdir()) if (root / RELEASE).is_dir() else []:
            if stale.is_dir() and stale.name not in known:
                shutil.rmtree(stale)
                log(f"{stale.name}: удалена из {RELEASE}/ — её нет в {SOLUTIONS}/")
    return released


def run(args: argparse.Namespace) -> int:
    released = release(args.labs, args.course)
    print(f"Готово: {len(released)} лабораторных в {RELEASE}/. Не правь их руками — правь {SOLUTIONS}/ и запускай release.")
    return 0

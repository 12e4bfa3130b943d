"""Каталог курса: где лежат решения и выданные лабораторные, и настройки nbgrader_config.py.

Модуль ничего не исполняет и не пишет: он только находит пути и читает настройки.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG_NAME = "nbgrader_config.py"
SOLUTIONS = "solutions"
RELEASE = "labs"
# маркеры nbgrader, которых не должно быть в выданной версии
SECRET_MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS",
                  "BEGIN MARK SCHEME", "END MARK SCHEME")
STUB_MARK = "ТВОЙ ОТВЕТ ЗДЕСЬ"  # начало ClearSolutions.text_stub из nbgrader_config.py


class CourseError(Exception):
    """Ошибка, о которой команда сообщает по-русски и выходит с кодом 2."""


def lab_names(root: Path = ROOT) -> list[str]:
    """Лабораторные курса: папки solutions/<lab>/ с ноутбуком <lab>.ipynb, по алфавиту."""
    source = root / SOLUTIONS
    if not source.is_dir():
        raise CourseError(f"Нет папки {source}: запускай команду из корня репозитория курса.")
    return sorted(p.name for p in source.iterdir() if (p / f"{p.name}.ipynb").is_file())


def load_config(root: Path = ROOT):
    """Настройки nbgrader из <root>/nbgrader_config.py как traitlets Config."""
    from traitlets.config.loader import PyFileConfigLoader

    path = root / CONFIG_NAME
    if not path.is_file():
        raise CourseError(f"Нет файла {path}: это не каталог курса.")
    return PyFileConfigLoader(CONFIG_NAME, path=str(root)).load_config()

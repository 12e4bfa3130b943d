"""Каталог курса и его настройки: один раз из ``nbgrader_config.py``, для всех команд.

Здесь — где что лежит (решения, выданные версии, папки проверки, база оценок) и все настройки
проверки: лимит на ячейку (тот же ``Execute.timeout``, что у Validate в JupyterLab), на ноутбук,
память, вывод, лабораторные «без эталона», шаблон id в архивах LMS, сроки сдачи и штраф за
опоздание. ``check``, ``grade`` и Validate видят одни и те же числа. Модуль ничего не исполняет
и не пишет.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from autograde.sandbox import Limits

CONFIG_NAME = "nbgrader_config.py"
SOLUTIONS = "solutions"
RELEASE = "labs"
SECRET_MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS",
                  "BEGIN MARK SCHEME", "END MARK SCHEME")
DEFAULT_ID_PATTERN = r"^(?P<student_id>[^/_]+(?:_\d+)?)[_/]"
SAFE_KEY = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


class CourseError(Exception):
    """Ошибка, о которой команда сообщает по-русски и выходит с кодом 2."""


def find_course(start: Path) -> Path | None:
    """Каталог курса, в котором лежит ``start``: ближайшая папка с nbgrader_config.py (она сама или выше) или None."""
    here = Path(start).resolve()
    return next((folder for folder in (here, *here.parents) if (folder / CONFIG_NAME).is_file()), None)


# клон курса, из которого установлен пакет (pip install -e . в requirements.txt): src/autograde/course.py → корень
CHECKOUT = find_course(Path(__file__).resolve().parents[2])
# каталог курса по умолчанию — как у nbgrader: тот, в котором запущена команда (или выше); вне курса — клон пакета
ROOT = find_course(Path.cwd()) or CHECKOUT or Path.cwd()


def add_course_option(parser) -> None:
    """Опция ``--course`` — одна на все команды."""
    parser.add_argument("--course", type=Path, default=None, metavar="ПАПКА",
                        help="корень каталога курса с nbgrader_config.py (по умолчанию — тот, в котором запущена "
                             "команда, как у nbgrader; у check — тот, где лежит ноутбук)")


def lab_names(root: Path = ROOT) -> list[str]:
    """Лабораторные курса: папки solutions/<lab>/ с ноутбуком <lab>.ipynb, по алфавиту."""
    source = Path(root) / SOLUTIONS
    if not source.is_dir():
        raise CourseError(f"Нет папки {source}: запускай команду из корня репозитория курса.")
    return sorted(p.name for p in source.iterdir() if (p / f"{p.name}.ipynb").is_file())


def load_config(root: Path = ROOT):
    """Настройки nbgrader из <root>/nbgrader_config.py как traitlets Config."""
    from traitlets.config.loader import PyFileConfigLoader

    path = Path(root) / CONFIG_NAME
    if not path.is_file():
        raise CourseError(f"Нет файла {path}: это не каталог курса.")
    return PyFileConfigLoader(CONFIG_NAME, path=str(root)).load_config()


def safe_key(student_id: str) -> str:
    """Ключ слушателя для имён файлов и базы: сам id, если он простой, иначе хеш.

    Пример: ``safe_key("petrov")`` → ``'petrov'``, ``safe_key("Иван Петров_123")`` → ``'id-…'`` (16 знаков хеша).
    """
    if SAFE_KEY.fullmatch(student_id) and ".." not in student_id:
        return student_id
    return "id-" + hashlib.sha256(student_id.encode("utf-8")).hexdigest()[:16]


def _date(value, what: str) -> datetime:
    if isinstance(value, datetime):
        moment = value
    else:
        try:
            moment = datetime.fromisoformat(str(value))
        except ValueError:
            raise CourseError(f"{what}: {value!r} — не дата. Пишите так: \"2026-10-01 23:59\" (ISO 8601).") from None
    return moment if moment.tzinfo else moment.astimezone()  # без пояса — местное время машины в тот день (с его DST)


@dataclass(frozen=True)
class Settings:
    """Настройки проверки курса (секции ``Execute`` и ``Grading`` в nbgrader_config.py)."""

    limits: Limits
    kernel_args: tuple[str, ...]
    no_reference_labs: tuple[str, ...]
    id_pattern: str
    due: dict = field(default_factory=dict)  # lab → срок (datetime с часовым поясом)
    extensions: dict = field(default_factory=dict)  # (student_id, lab) → новый срок
    late_penalty: str = "none"  # none | zero | per_day
    late_penalty_per_day: float = 0.0  # доля баллов за каждые начатые сутки опоздания (для per_day)

    @classmethod
    def from_config(cls, config) -> Settings:
        execute = config.Execute if "Execute" in config else {}
        own = config.Grading if "Grading" in config else {}
        pattern = DEFAULT_ID_PATTERN
        if "LmsZip" in config and config.LmsZip.get("student_id_pattern"):
            pattern = config.LmsZip.student_id_pattern
        limits = Limits(cell_timeout=float(execute.get("timeout", 60)), timeout=float(own.get("notebook_timeout", 600)),
                        memory_mb=int(own.get("memory_mb", 2048)), output_kb=int(own.get("output_kb", 2048)))
        due = {lab: _date(value, f"Grading.due[{lab!r}]") for lab, value in dict(own.get("due", {})).items()}
        extensions = {}
        for lab, students in dict(own.get("extensions", {})).items():
            for student, value in dict(students).items():
                extensions[(str(student), lab)] = _date(value, f"Grading.extensions[{lab!r}][{student!r}]")
        penalty = str(own.get("late_penalty", "none"))
        if penalty not in ("none", "zero", "per_day"):
            raise CourseError(f"Grading.late_penalty = {penalty!r}: бывает none, zero или per_day.")
        per_day = own.get("late_penalty_per_day", 0.0)
        if isinstance(per_day, bool) or not isinstance(per_day, (int, float)) or not 0 <= per_day <= 1:
            raise CourseError(f"Grading.late_penalty_per_day = {per_day!r}: нужна доля баллов за сутки от 0 до 1, "
                              "например 0.1 (минус 10 % за каждые начатые сутки).")
        if penalty == "per_day" and not per_day:
            raise CourseError("Grading.late_penalty = 'per_day', а late_penalty_per_day не задан: укажите долю "
                              "за сутки, например c.Grading.late_penalty_per_day = 0.1.")
        return cls(limits, tuple(execute.get("extra_arguments", [])), tuple(own.get("no_reference_labs", [])),
                   pattern, due, extensions, penalty, float(per_day))

    def deadline(self, student_id: str, lab: str) -> datetime | None:
        return self.extensions.get((student_id, lab), self.due.get(lab))


class Course:
    """Каталог курса: корень, настройки, база оценок, папки проверки. Пример: ``Course.load(ROOT).lab("lab01_mini_rag")``."""

    def __init__(self, root: Path, config):
        from nbgrader.coursedir import CourseDirectory

        self.root = Path(root).resolve()
        self.config = config
        self.settings = Settings.from_config(config)
        coursedir = CourseDirectory(config=config)
        if not coursedir.root:
            coursedir.root = str(self.root)
        self.db_url = coursedir.db_url
        self.course_id = coursedir.course_id
        self.submitted_dir = Path(coursedir.format_path(coursedir.submitted_directory, "X", "Y")).parent.parent
        self.autograded_dir = Path(coursedir.format_path(coursedir.autograded_directory, "X", "Y")).parent.parent
        self.feedback_dir = Path(coursedir.format_path(coursedir.feedback_directory, "X", "Y")).parent.parent
        self.work = self.root / "autograde"
        self.roster = self.work / "roster.json"
        self.exports = self.work / "exports"

    @classmethod
    def load(cls, root: Path | None = None) -> Course:
        root = root or ROOT
        return cls(root, load_config(root))

    def lab(self, name: str) -> Lab:
        known = lab_names(self.root)
        if name not in known:
            raise CourseError(f"Нет лабораторной {name!r} в {self.root / SOLUTIONS}. Есть: {', '.join(known) or 'ничего'}.")
        lab = Lab(self, name)
        if not lab.release_notebook.is_file():
            raise CourseError(f"Нет выданной версии {lab.release_notebook}: сначала python -m autograde release {name}.")
        return lab

    def secrets(self) -> list[Path]:
        """То, что не должно оказаться в песочнице, даже случайно."""
        return [self.root / SOLUTIONS, self.work, self.submitted_dir, self.autograded_dir, self.feedback_dir,
                Path(self.db_url.replace("sqlite:///", "")).parent]


@dataclass
class Lab:
    """Где что лежит для одной лабораторной."""

    course: Course
    name: str

    def __post_init__(self):
        root, work = self.course.root, self.course.work
        self.source_notebook = root / SOLUTIONS / self.name / f"{self.name}.ipynb"
        self.release_notebook = root / RELEASE / self.name / f"{self.name}.ipynb"
        self.work = work / "work" / self.name
        self.results = self.work / "results"
        self.history = self.work / "history"
        self.releases = self.work / "releases.json"  # тексты тестов всех выпусков (intake/history.py: releases)
        self.manual = self.work / "manual"  # ручные оценки, которые видела проверка (store/gradebook.py: reopened)
        self.csv = work / "grades" / f"{self.name}.csv"
        self.histogram = work / "grades" / f"{self.name}.png"

    @property
    def hide_reference(self) -> bool:
        return self.name in self.course.settings.no_reference_labs

    def result_file(self, key: str) -> Path:
        """Файл итога слушателя: его запись — отметка «работа записана» (store/save.py)."""
        return self.results / f"{key}.json"

    def submitted(self, key: str) -> Path:
        return self.course.submitted_dir / key / self.name

    def autograded(self, key: str) -> Path:
        return self.course.autograded_dir / key / self.name

    def feedback(self, key: str) -> Path:
        return self.course.feedback_dir / key / self.name

    def release_files(self) -> dict[str, bytes]:
        """Файлы задания рядом с ноутбуком (данные, помощники), кроме ноутбуков: имя → содержимое.

        Содержимое, а не путь: работнику на другой машине (``--cluster``) пути этого каталога ни к чему.
        """
        folder = self.release_notebook.parent
        return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
                if p.is_file() and not p.is_symlink() and p.suffix != ".ipynb" and ".ipynb_checkpoints" not in p.parts
                and "__pycache__" not in p.parts}


def now() -> datetime:
    return datetime.now(timezone.utc)

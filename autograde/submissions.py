"""Приём сдач: папка ``<student_id>/<LAB>/<notebook>.ipynb`` или zip-архив из LMS.

Модуль только читает: исходные файлы не меняются, символические ссылки не разыменовываются
(ссылка в сдаче могла бы указывать на файлы преподавателя), из архива ничего не распаковывается
на диск по именам из архива. Для каждого слушателя получается ``Submission``: байты ноутбука
(или причина, почему его нет) и замечания — неверное имя, лишние файлы.

Архив LMS: один файл на слушателя, id слушателя — в имени файла. Как его найти, задаёт
регулярное выражение с группой ``student_id``: настройка ``c.LmsZip.student_id_pattern`` в
nbgrader_config.py, по умолчанию ``DEFAULT_PATTERN`` — всё до первого ``_`` или ``/`` в пути
внутри архива. Так читаются выгрузки Moodle (``Иван Петров_123_assignsubmission_file_/x.ipynb``
→ «Иван Петров»), Canvas (``petrov_123_456_x.ipynb`` → «petrov») и архив папок
(``petrov/lab01_mini_rag.ipynb`` → «petrov»).
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

DEFAULT_PATTERN = r"^(?P<student_id>[^/_]+)[_/]"
MAX_NOTEBOOK = 50 * 1024 * 1024  # больше — не ноутбук лабораторной, а что-то не то
SERVICE_FILES = {"timestamp.txt", "submission_secret.txt"}  # их кладёт nbgrader collect: это не «лишние файлы»
JUNK = {".DS_Store", "Thumbs.db", "desktop.ini"}
JUNK_DIRS = {".ipynb_checkpoints", "__pycache__", "__MACOSX"}
STUDENT_ID_RE = re.compile(r"^[\w][\w.@+\- ]{0,127}$")


@dataclass
class Submission:
    """Сдача одного слушателя: ноутбук (или причина, почему его нет) и замечания."""

    student_id: str
    data: bytes | None = None
    source: str = ""  # откуда взят ноутбук — для сообщений
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    timestamp: datetime | None = None
    service: dict[str, bytes] = field(default_factory=dict)  # timestamp.txt и submission_secret.txt


def valid_student_id(student_id: str) -> bool:
    return bool(STUDENT_ID_RE.match(student_id)) and student_id == student_id.strip() and ".." not in student_id


def _junk(parts) -> bool:
    return any(p in JUNK_DIRS or p in JUNK for p in parts)


def _choose(sub: Submission, lab: str, files: dict[str, int], read, lms: bool = False) -> str | None:
    """Выбрать ноутбук среди файлов сдачи (имя → размер), прочитать его и записать замечания."""
    expected = f"{lab}.ipynb"
    notebooks = sorted(n for n in files if n.lower().endswith(".ipynb"))
    exact = [n for n in notebooks if Path(n).name == expected]
    close = [n for n in notebooks if lab in Path(n).name]  # LMS дописывают к имени: lab01-1.ipynb
    if exact:
        chosen = exact[0]
    elif len(close) == 1:
        chosen = close[0]
    elif len(notebooks) == 1:
        chosen = notebooks[0]
    else:
        chosen = None
    if chosen is None:
        others = ", ".join(notebooks) if notebooks else "ни одного .ipynb"
        sub.error = (f"нет ноутбука {expected}" + (f": есть {others} — непонятно, какой проверять; "
                     f"оставьте один ноутбук с именем {expected}" if notebooks else " в сдаче"))
        return None
    if Path(chosen).name != expected and not (lms and lab in Path(chosen).name):  # LMS сами дописывают к имени
        sub.notes.append(f"ноутбук называется {Path(chosen).name}, а не {expected}: проверен он")
    extra = sorted(n for n in files if n != chosen and Path(n).name not in SERVICE_FILES)
    if extra:
        shown = ", ".join(extra[:5]) + (f" и ещё {len(extra) - 5}" if len(extra) > 5 else "")
        sub.notes.append(f"лишние файлы не проверяются: {shown}")
    if files[chosen] > MAX_NOTEBOOK:
        sub.error = f"ноутбук {Path(chosen).name} больше {MAX_NOTEBOOK // 2**20} МБ: это не ноутбук лабораторной"
        return None
    sub.data = read(chosen)
    for name in SERVICE_FILES:
        candidates = [n for n in files if Path(n).name == name and files[n] < 4096]
        if candidates:
            sub.service[name] = read(candidates[0])
    return chosen


def from_folder(path: Path, lab: str) -> tuple[list[Submission], list[str]]:
    """Сдачи из папки ``<student_id>/<lab>/...``; второй результат — предупреждения о пропущенном."""
    subs, warnings = [], []
    for entry in sorted(path.iterdir(), key=lambda p: p.name):
        if entry.name.startswith(".") or entry.name in JUNK or entry.name in JUNK_DIRS:
            continue
        if entry.is_symlink() or not entry.is_dir():
            warnings.append(f"{entry.name}: не папка слушателя — пропущено")
            continue
        if not valid_student_id(entry.name):
            warnings.append(f"{entry.name!r}: недопустимый id слушателя (буквы, цифры, . _ - @ +) — пропущено")
            continue
        sub = Submission(entry.name)
        folder = entry / lab
        if folder.is_symlink() or not folder.is_dir():
            loose = sorted(p.name for p in entry.glob("*.ipynb") if p.is_file() and not p.is_symlink())
            if loose:  # ноутбук лежит прямо в папке слушателя
                folder = entry
                sub.notes.append(f"ноутбук лежит в {entry.name}/, а не в {entry.name}/{lab}/")
            else:
                sub.error = f"нет папки {lab} с ноутбуком {lab}.ipynb в сдаче"
                subs.append(sub)
                continue
        files, skipped = {}, []
        for file in sorted(folder.rglob("*")):
            rel = file.relative_to(folder)
            if _junk(rel.parts) or (folder is entry and len(rel.parts) > 1):
                continue
            if file.is_symlink():
                skipped.append(str(rel))
            elif file.is_file():
                files[str(rel)] = file.stat().st_size
        if skipped:
            sub.notes.append(f"символические ссылки не читаются: {', '.join(skipped[:5])}")
        chosen = _choose(sub, lab, files, lambda name, folder=folder: (folder / name).read_bytes())
        if chosen is not None:
            sub.source = str(folder / chosen)
            sub.timestamp = datetime.fromtimestamp((folder / chosen).stat().st_mtime, timezone.utc)
        subs.append(sub)
    return subs, warnings


def from_zip(path: Path, lab: str, pattern: str = DEFAULT_PATTERN) -> tuple[list[Submission], list[str]]:
    """Сдачи из архива LMS: id слушателя — из пути файла по ``pattern``."""
    regex = re.compile(pattern)
    warnings = []
    groups: dict[str, dict[str, zipfile.ZipInfo]] = {}
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            name = info.filename.replace("\\", "/")
            parts = [p for p in name.split("/") if p]
            if info.is_dir() or not parts or _junk(parts) or parts[-1].startswith("."):
                continue
            match = regex.search(name)
            student_id = match.group("student_id").strip() if match else None
            if not student_id:
                warnings.append(f"{name}: в имени нет id слушателя (шаблон {pattern}) — пропущено")
                continue
            if not valid_student_id(student_id):
                warnings.append(f"{name}: недопустимый id слушателя {student_id!r} — пропущено")
                continue
            groups.setdefault(student_id, {})[name] = info
        subs = []
        for student_id in sorted(groups):
            infos = groups[student_id]
            sub = Submission(student_id)
            files = {name: info.file_size for name, info in infos.items()}
            chosen = _choose(sub, lab, files, lambda name, infos=infos: archive.read(infos[name]), lms=True)
            if chosen is not None:
                sub.source = f"{path.name}:{chosen}"
                sub.timestamp = datetime(*infos[chosen].date_time, tzinfo=timezone.utc)
            subs.append(sub)
    return subs, warnings


def collect(path: Path, lab: str, pattern: str = DEFAULT_PATTERN) -> tuple[list[Submission], list[str]]:
    """Сдачи из папки или zip. Пример: ``collect(Path("downloads/lab01.zip"), "lab01_mini_rag")``."""
    if path.is_dir():
        return from_folder(path, lab)
    if zipfile.is_zipfile(path):
        return from_zip(path, lab, pattern)
    raise FileNotFoundError(f"{path}: нет такой папки или zip-архива со сдачами")

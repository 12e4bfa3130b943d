"""Приём сдач: папка ``<student_id>/<LAB>/<notebook>.ipynb`` или zip-архив из LMS.

Модуль только читает: исходные файлы не меняются, символические ссылки не разыменовываются,
из архива ничего не распаковывается на диск. Каждый слушатель — ``Submission``: байты ноутбука
(или причина, почему его нет), замечания и время сдачи. Одна плохая сдача — одна строка: битая
запись архива (CRC), нулевая дата, повтор имени, слишком большой файл, странное имя — это
замечание или ошибка этого слушателя, а не всего запуска.

Время сдачи — только от LMS или файловой системы: дата записи в архиве LMS или время изменения
файла в папке сдач. Файлам, которые написал сам слушатель (``timestamp.txt`` внутри сдачи), не
верим. id слушателя в архиве берётся по регулярному выражению с группой ``student_id``
(``c.LmsZip.student_id_pattern``); по умолчанию — всё до первого «_» вместе с номером участника
LMS, если он есть: ``Иван Петров_123_assignsubmission_file_/x.ipynb`` → «Иван Петров_123»
(тёзки не сливаются), ``petrov_77_901_x.ipynb`` → «petrov_77», ``petrov/x.ipynb`` → «petrov».
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from autograde.course import DEFAULT_ID_PATTERN, CourseError, safe_key
from autograde.intake.history import History
from autograde.lab.notebook import (
    MAX_FILE as MAX_NOTEBOOK,  # больше — не ноутбук лабораторной: не читаем дальше этих байт
)

SERVICE_FILES = {"timestamp.txt", "submission_secret.txt"}  # их кладёт nbgrader collect: не «лишние файлы»
JUNK = {".DS_Store", "Thumbs.db", "desktop.ini"}
JUNK_DIRS = {".ipynb_checkpoints", "__pycache__", "__MACOSX"}
MAX_ID = 200  # символов в id; длиннее — обрезается для показа, ключ всё равно по хешу


@dataclass
class Submission:
    """Сдача одного слушателя из одного источника."""

    student_id: str
    data: bytes | None = None
    source: str = ""
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    submitted_at: datetime | None = None
    missing: bool = False  # слушатель есть в источнике, но этой лабораторной он не сдавал


def _junk(parts) -> bool:
    return any(p in JUNK_DIRS or p in JUNK or p.startswith(".") for p in parts)


def _choose(sub: Submission, lab: str, files: dict[str, int], read, lms: bool = False,
            given: frozenset[str] = frozenset()) -> str | None:
    """Выбрать ноутбук среди файлов сдачи (имя → размер), прочитать его и записать замечания."""
    expected = f"{lab}.ipynb"
    notebooks = sorted(n for n in files if n.lower().endswith(".ipynb"))
    exact = [n for n in notebooks if Path(n).name == expected]
    close = [n for n in notebooks if lab in Path(n).name]  # LMS дописывают к имени: lab01-1.ipynb
    chosen = exact[0] if exact else close[0] if len(close) == 1 else notebooks[0] if len(notebooks) == 1 else None
    if chosen is None:
        others = ", ".join(notebooks[:5]) if notebooks else "ни одного .ipynb"
        sub.error = (f"нет ноутбука {expected}" + (f": есть {others} — непонятно, какой проверять; "
                     f"оставьте один ноутбук с именем {expected}" if notebooks else " в сдаче"))
        return None
    if Path(chosen).name != expected and not (lms and lab in Path(chosen).name):
        sub.notes.append(f"ноутбук называется {Path(chosen).name}, а не {expected}: проверен он")
    # файлы задания (labkit.py, данные), выданные рядом с ноутбуком, — не «лишние»: их и ждём в папке
    extra = sorted(n for n in files if n != chosen and Path(n).name not in SERVICE_FILES
             and n not in given and Path(n).name not in given)
    if extra:
        shown = ", ".join(extra[:5]) + (f" и ещё {len(extra) - 5}" if len(extra) > 5 else "")
        sub.notes.append(f"лишние файлы не проверяются: {shown}")
    if files[chosen] > MAX_NOTEBOOK:
        sub.error = _too_big(chosen, files[chosen])
        return None
    try:
        sub.data = read(chosen)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as exc:
        sub.error = (f"файл {Path(chosen).name} не читается из сдачи ({type(exc).__name__}: {str(exc)[:200]}): "
                     "скачайте выгрузку заново или попросите слушателя сдать ещё раз")
        return None
    if len(sub.data) > MAX_NOTEBOOK:  # файл вырос или архив соврал о размере: прочитано не больше предела + 1 байт
        sub.data, sub.error = None, _too_big(chosen, len(sub.data))
        return None
    return chosen


def _too_big(name: str, size: int) -> str:
    known = "" if size == MAX_NOTEBOOK + 1 else f" ({size / 2**20:.1f} МБ)"
    return (f"ноутбук {Path(name).name} больше предела {MAX_NOTEBOOK // 2**20} МБ{known} — работа не проверена: "
            "очистите выходы (Kernel → Restart Kernel and Clear All Outputs), сохраните и сдайте заново")


def _read_head(path: Path) -> bytes:
    with open(path, "rb") as f:
        return f.read(MAX_NOTEBOOK + 1)


def _shown(name: str) -> str:
    """Имя с диска, которое можно напечатать: байты не в UTF-8 (у Python — «суррогаты») заменены на �."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def from_folder(path: Path, lab: str, given: frozenset[str] = frozenset()) -> tuple[list[Submission], list[str]]:
    """Сдачи из папки ``<student_id>/<lab>/...``; второй результат — предупреждения о пропущенном."""
    subs, warnings = [], []
    for entry in sorted(path.iterdir(), key=lambda p: p.name):
        if entry.name.startswith(".") or entry.name in JUNK or entry.name in JUNK_DIRS:
            continue
        if entry.is_symlink() or not entry.is_dir():
            warnings.append(f"{_shown(entry.name)}: не папка слушателя — пропущено")
            continue
        if _shown(entry.name) != entry.name:
            warnings.append(f"{_shown(entry.name)}: имя папки не в UTF-8 — пропущено; переименуйте папку "
                            "(id слушателя) и запустите проверку снова")
            continue
        sub = Submission(entry.name[:MAX_ID])
        folder = entry / lab
        if folder.is_symlink() or not folder.is_dir():
            loose = sorted(p.name for p in entry.glob("*.ipynb") if p.is_file() and not p.is_symlink())
            if not loose:  # у слушателя есть папка, но этой лабораторной в ней нет: не сдавал
                sub.missing = True
                subs.append(sub)
                continue
            folder = entry
            sub.notes.append(f"ноутбук лежит в {entry.name}/, а не в {entry.name}/{lab}/")
        files, skipped, undecodable = {}, [], []
        for file in sorted(folder.rglob("*")):
            rel = file.relative_to(folder)
            if _junk(rel.parts) or (folder is entry and len(rel.parts) > 1):
                continue
            if _shown(str(rel)) != str(rel):
                undecodable.append(_shown(str(rel)))
            elif file.is_symlink():
                skipped.append(str(rel))
            elif file.is_file():
                files[str(rel)] = file.stat().st_size
        if skipped:
            sub.notes.append(f"символические ссылки не читаются: {', '.join(skipped[:5])}")
        if undecodable:
            sub.notes.append(f"имена не в UTF-8 не читаются: {', '.join(undecodable[:5])}")
        chosen = _choose(sub, lab, files, lambda name, folder=folder: _read_head(folder / name), given=given)
        if chosen is not None:
            sub.source = str(folder / chosen)
            sub.submitted_at = datetime.fromtimestamp((folder / chosen).stat().st_mtime, timezone.utc)
        subs.append(sub)
    return subs, warnings


def _zip_time(info: zipfile.ZipInfo) -> datetime | None:
    try:
        return datetime(*info.date_time, tzinfo=timezone.utc)
    except (ValueError, TypeError):
        return None


def from_zip(path: Path, lab: str, pattern: str = DEFAULT_ID_PATTERN,
             given: frozenset[str] = frozenset()) -> tuple[list[Submission], list[str]]:
    """Сдачи из архива LMS: id слушателя — из пути файла по ``pattern``."""
    regex = re.compile(pattern)
    warnings = []
    groups: dict[str, dict[str, zipfile.ZipInfo]] = {}
    duplicates: dict[str, list[str]] = {}
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            name = info.filename.replace("\\", "/")
            parts = [p for p in name.split("/") if p]
            if info.is_dir() or not parts or _junk(parts):
                continue
            match = regex.search(name)
            student_id = match.group("student_id").strip()[:MAX_ID] if match else None
            if not student_id:
                warnings.append(f"{name[:200]}: в имени нет id слушателя (шаблон {pattern}) — пропущено")
                continue
            files = groups.setdefault(student_id, {})
            if name in files:
                duplicates.setdefault(student_id, []).append(name)
            files[name] = info  # как у распаковщиков: при повторе имени верна последняя запись
        subs = []
        for student_id in sorted(groups):
            infos = groups[student_id]
            sub = Submission(student_id)
            if student_id in duplicates:
                sub.notes.append("в архиве несколько записей с одним именем: "
                                 + ", ".join(sorted(set(duplicates[student_id]))[:3]) + " — проверена последняя")

            def read(name, infos=infos):
                with archive.open(infos[name]) as f:
                    return f.read(MAX_NOTEBOOK + 1)

            chosen = _choose(sub, lab, {n: i.file_size for n, i in infos.items()}, read, lms=True, given=given)
            if chosen is not None:
                sub.source = f"{path.name}:{chosen}"
                sub.submitted_at = _zip_time(infos[chosen])
                if sub.submitted_at is None:
                    sub.notes.append("у записи в архиве нет даты сдачи (дата повреждена): время сдачи неизвестно")
            subs.append(sub)
    return subs, warnings


def collect(path: Path, lab: str, pattern: str = DEFAULT_ID_PATTERN,
            given: frozenset[str] = frozenset()) -> tuple[list[Submission], list[str]]:
    """Сдачи из папки или zip. Пример: ``collect(Path("downloads/lab01.zip"), "lab01_mini_rag")``."""
    if path.is_dir():
        return from_folder(path, lab, given)
    if zipfile.is_zipfile(path):
        return from_zip(path, lab, pattern, given)
    raise FileNotFoundError(f"{path}: нет такой папки или zip-архива со сдачами")


def admit(course, lab, path: Path | None, group) -> tuple[dict[str, str], set[str], list[str], dict[str, list[str]]]:
    """Принять сдачи в историю: (ключ → имя для показа, несдавшие, предупреждения, замечания по ключам)."""
    history, names, missing, notes = History(lab.history), {}, set(), {}
    if path is None:
        return names, missing, [], notes
    if not path.exists():
        raise CourseError(f"Нет {path}: укажите папку <student_id>/{lab.name}/ или zip из LMS.")
    try:
        subs, warnings = collect(path, lab.name, course.settings.id_pattern, frozenset(lab.release_files()))
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise CourseError(f"Не прочитать сдачи {path}: {exc}") from exc
    identities = group.identify([sub.student_id for sub in subs], history)  # новый номер LMS у знакомого имени — не он
    for sub in subs:
        student_id, known, claim = identities[sub.student_id]
        key = safe_key(student_id)
        names[key] = group.display(student_id) if known else student_id
        if claim:
            notes.setdefault(key, []).append(claim)
        elif group and not known:
            notes.setdefault(key, []).append(f"{sub.student_id!r} нет в списке группы (roster): добавьте псевдоним")
        if sub.missing:
            missing.add(key)
            continue
        version = history.add(key, sub, names[key])
        newest = history.newest(key)
        if newest.digest != version.digest:
            notes.setdefault(key, []).append(f"в этой выгрузке версия от {version.moment()[0][:16]}, а принята более новая "
                                             f"от {newest.moment()[0][:16]}: проверяется новая")
    return names, missing, warnings, notes

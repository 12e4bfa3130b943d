"""История сдач: каждая версия работы каждого слушателя, по времени сдачи LMS.

Каждый приём кладёт сюда то, что пришло (``work/<lab>/history/<ключ>/<хеш>.ipynb`` и рядом
``.json`` с временем сдачи, источником и замечаниями); одинаковые версии не дублируются.
Проверяется всегда самая новая по времени сдачи — повторный запуск на старой выгрузке не
откатит работу назад, а скажет об этом. Модуль ничего не исполняет.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from autograde.store.atomic import atomic_write


@dataclass
class Version:
    """Одна версия сдачи одного слушателя."""

    digest: str
    display_id: str
    raw_id: str
    submitted_at: str  # время сдачи по LMS (ISO 8601) или ""
    received_at: str  # когда её принял autograde
    source: str = ""
    notes: list[str] = field(default_factory=list)
    error: str | None = None

    def moment(self) -> tuple[str, str]:
        return (self.submitted_at or self.received_at, self.received_at)


class History:
    """Версии сдач одной лабораторной. Пример: ``History(lab.history).newest("petrov")``."""

    def __init__(self, folder: Path):
        self.folder = folder

    def add(self, key: str, sub, display_id: str) -> Version:
        """Запомнить версию (если её ещё нет) и вернуть её запись."""
        payload = sub.data if sub.data is not None else ("ошибка:" + (sub.error or "")).encode("utf-8")
        digest = hashlib.sha256(payload).hexdigest()[:16]
        meta = self.folder / key / f"{digest}.json"
        if meta.is_file():
            return self._read(meta)
        when = sub.submitted_at.astimezone(timezone.utc).isoformat() if sub.submitted_at else ""
        version = Version(digest, display_id, sub.student_id, when, datetime.now(timezone.utc).isoformat(),
                          sub.source, list(sub.notes), sub.error)
        if sub.data is not None:
            atomic_write(self.folder / key / f"{digest}.ipynb", sub.data)
        atomic_write(meta, json.dumps(asdict(version), ensure_ascii=False, indent=1))
        return version

    @staticmethod
    def _read(path: Path) -> Version:
        return Version(**json.loads(path.read_text(encoding="utf-8")))

    def versions(self, key: str) -> list[Version]:
        folder = self.folder / key
        found = []
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            try:
                found.append(self._read(path))
            except (OSError, ValueError, TypeError):
                continue
        return sorted(found, key=Version.moment)

    def newest(self, key: str) -> Version | None:
        versions = self.versions(key)
        return versions[-1] if versions else None

    def path(self, key: str, version: Version) -> Path | None:
        """Файл ноутбука этой версии (None — сдача не прочиталась, хранится только ошибка)."""
        path = self.folder / key / f"{version.digest}.ipynb"
        return path if path.is_file() else None

    def keys(self) -> list[str]:
        return sorted(p.name for p in self.folder.iterdir() if p.is_dir()) if self.folder.is_dir() else []

    def move(self, source: str, target: str) -> None:
        """Перенести все версии одного ключа к другому (слияние двух записей одного слушателя)."""
        folder = self.folder / source
        if not folder.is_dir():
            return
        (self.folder / target).mkdir(parents=True, exist_ok=True)
        for path in folder.iterdir():
            destination = self.folder / target / path.name
            if not destination.exists():
                path.replace(destination)
            else:
                path.unlink()
        folder.rmdir()


def releases(path: Path, master) -> dict[str, list[str]]:
    """Тексты каждой ячейки тестов во всех выпусках задания (``work/<lab>/releases.json``), с нынешним.

    Нужны, чтобы после исправления теста не обвинить слушателя, сдавшего ноутбук прошлого выпуска.
    """
    from nbgrader import utils as nbutils

    from autograde.lab.master import gid

    known: dict[str, list[str]] = {}
    if path.is_file():
        try:
            known = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            known = {}
    changed = False
    for cell in master.release.cells:
        grade_id = gid(cell)
        if grade_id and cell.cell_type == "code" and not nbutils.is_solution(cell):
            versions = known.setdefault(grade_id, [])
            if cell.source not in versions:
                versions.append(cell.source)
                changed = True
    if changed:
        atomic_write(path, json.dumps(known, ensure_ascii=False, indent=1, sort_keys=True))
    return known

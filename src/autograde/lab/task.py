"""Работа на проверку и всё, что работнику нужно о лабораторной: ``Task``, ``Context``, ``Outcome``, ключ итога.

Простые данные без путей к секретам: их собирает приём (``intake/plan.py``), по ним работник
(``run/worker.py``) на этой машине или на узле кластера проверяет работу и возвращает ``Outcome``.
Ключ итога (``task_key``) — хеш всего, от чего зависит итог: если он не изменился, работу не перепроверяют.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from autograde.lab.master import Master
from autograde.lab.result import VERSION, Result
from autograde.sandbox import Limits


@dataclass
class Task:
    """Одна работа на проверку: версия сдачи и всё, что о ней известно при приёме."""

    student: str
    display_id: str
    key: str
    data: bytes | None
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    submitted_at: str = ""
    deadline: str = ""
    source: Path | None = None  # файл сдачи в истории: байты читаются, когда работа уходит работнику (loaded)


def loaded(task: Task) -> Task:
    """Задача с байтами сдачи: ``data`` из ``source``, если их ещё нет (так главный процесс не держит всю группу)."""
    if task.data is not None or task.source is None:
        return task
    try:
        data = task.source.read_bytes()
    except OSError:
        data = None
    return dataclasses.replace(task, data=data, source=None)


@dataclass
class Context:
    """Что нужно работнику для любой работы этой лабораторной."""

    master: Master
    limits: Limits
    sandboxed: bool
    kernel_args: tuple[str, ...]
    release_files: dict[str, bytes]  # файлы задания рядом с ноутбуком: имя → содержимое
    secrets: list[Path]
    hide_reference: bool
    late_penalty: str = "none"
    late_penalty_per_day: float = 0.0
    released_tests: dict = field(default_factory=dict)  # grade_id → тексты этой ячейки во всех выпусках


@dataclass
class Outcome:
    result: Result
    notebook: str  # очищенный проверенный ноутбук (JSON nbformat) — для autograded/ и formgrader
    feedback: str  # HTML отзыва


def task_key(ctx: Context, task: Task) -> str:
    """Хеш всего, от чего зависит итог работы: если он тот же, работу не перепроверяем."""
    h = hashlib.sha256()
    h.update(json.dumps({"version": VERSION, "master": ctx.master.digest, "limits": dataclasses.asdict(ctx.limits),
                         "sandbox": ctx.sandboxed, "notes": task.notes, "error": task.error, "display": task.display_id,
                         "time": task.submitted_at, "deadline": task.deadline, "late": [ctx.late_penalty,
                         ctx.late_penalty_per_day], "released": ctx.released_tests}, sort_keys=True).encode())
    h.update(hashlib.sha256(loaded(task).data or b"").digest())
    return h.hexdigest()

"""Что проверять в этот запуск: принять сдачи, свести id к слушателям и выбрать, чьи работы изменились.

``plan`` — весь приём одним шагом ``grade``: сдачи из папки или zip — в историю (``submissions.admit``),
для каждого слушателя — самая новая версия по времени сдачи LMS; работа уходит на проверку, только если
изменился ключ итога (работа, задание, лимиты, срок — ``lab/task.py: task_key``) или дан ``--force``. Кто в списке
группы, но не сдал, — строка «не сдано» без исполнения (``Worklist.quiet``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from autograde.course import safe_key
from autograde.intake import roster
from autograde.intake.history import History
from autograde.intake.submissions import admit
from autograde.lab.result import Result
from autograde.lab.task import Context, Task, task_key


@dataclass
class Worklist:
    """Итог приёма: работы на проверку, несдавшие, сколько итогов взято из прошлого запуска, предупреждения."""

    tasks: list[Task] = field(default_factory=list)
    quiet: list[Task] = field(default_factory=list)
    reused: int = 0
    warnings: list[str] = field(default_factory=list)


def plan(course, lab, ctx: Context, submissions: Path | None, students: list[str], force: bool) -> Worklist:
    """Принять ``submissions`` (или ничего: перепроверка принятого) и составить план проверки.

    ``students`` — проверить только их (id, псевдоним или имя из списка группы); ``force`` — и неизменившихся.
    """
    group = roster.load(course)
    names, missing, warnings, notes = admit(course, lab, submissions, group)
    history = History(lab.history)
    display = {safe_key(s["id"]): s.get("name") or s["id"] for s in group.students}
    keys = set(history.keys()) | missing | set(display)
    if students:
        wanted = {s: safe_key(group.resolve(s)[0]) for s in students}
        warnings += [f"{s}: нет такого слушателя" for s, key in wanted.items() if key not in keys]
        keys &= set(wanted.values())
    result = Worklist(warnings=warnings)
    for key in sorted(keys):
        newest = history.newest(key)
        name = names.get(key) or display.get(key) or (newest.display_id if newest else key)
        if newest is None:
            result.quiet.append(Task(key, name, "", None, None, notes.get(key, []), "", ""))
            continue
        deadline = course.settings.deadline(group.resolve(name)[0], lab.name) or course.settings.deadline(key, lab.name)
        task = Task(key, name, "", None, newest.error, newest.notes + notes.get(key, []), newest.submitted_at,
                    deadline.isoformat() if deadline else "", source=history.path(key, newest))
        task.key = task_key(ctx, task)
        if not force and _stored_key(lab.result_file(key)) == task.key:
            result.reused += 1
        else:
            result.tasks.append(task)
    return result


def _stored_key(path: Path) -> str | None:
    """Ключ итога, записанного прошлым запуском; нет файла или он не читается как итог — None (проверить снова)."""
    try:
        return Result.from_json(path.read_text(encoding="utf-8")).key
    except (OSError, ValueError, TypeError, AttributeError):
        return None

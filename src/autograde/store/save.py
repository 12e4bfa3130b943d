"""Запись итогов проверки — только главный процесс: проверенный ноутбук, отзыв, база оценок, итог.

Итоги пишутся пачками (``Recorder``): файлы каждой работы — атомарно, по мере прихода; база оценок —
одна транзакция на пачку; затем один ``os.sync()`` и, последними, файлы итогов. Итог — отметка «работа
записана»: после ``kill -9`` в любой момент работа либо записана целиком (итог, ноутбуки, отзыв, строка
базы), либо её итога нет и следующий запуск проверит её снова. ``finish`` догоняет базу оценок до
итогов, перерисовывает отзывы, где преподаватель поставил ручные баллы, добавляет замечания о
письменных ответах, которые изменились после ручной проверки, и пишет CSV группы.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from datetime import datetime, timezone

from autograde.lab.result import Result
from autograde.store import gradebook
from autograde.store.atomic import atomic_write
from autograde.store.results import load, write_csv


def nbgrader_time(iso: str) -> str | None:
    """Время сдачи в формате timestamp.txt nbgrader (UTC) или None, если LMS его не дала."""
    if not iso:
        return None
    return datetime.fromisoformat(iso).astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC")


BATCH = 64  # работ в пачке
BATCH_SECONDS = 2.0  # пачка записывается не реже, чем раз в столько секунд (полоса прогресса не отстаёт)


class Recorder:
    """Записывает итоги пачками. Пример::

        with Recorder(lab, gb) as recorder:
            for outcome in outcomes:
                recorder.add(outcome)  # раз в BATCH работ или BATCH_SECONDS — commit()

    Выход из блока записывает начатую пачку (и по Ctrl+C: её работы проверены целиком); если же сбой
    случился внутри ``add`` (база оценок), пачка откатывается, и её работы проверятся в следующий раз.
    """

    def __init__(self, lab, gb, size: int = BATCH, seconds: float = BATCH_SECONDS):
        self.lab, self.gb = lab, gb
        self.size, self.seconds = size, seconds
        self.pending: list[Result] = []
        self.opened = 0.0
        self.broken = False

    def add(self, outcome) -> None:
        """Файлы работы и её строка базы (в транзакции пачки); итог — при записи пачки."""
        result = outcome.result
        if not self.pending:
            gradebook.defer_commits(self.gb)
            self.opened = time.monotonic()
        try:
            _write_files(self.lab, outcome)
            gradebook.sync(self.gb, self.lab.name, result, nbgrader_time(result.submitted_at), self.lab.manual)
        except BaseException:
            self.broken = True
            raise
        self.pending.append(result)
        if len(self.pending) >= self.size or time.monotonic() - self.opened >= self.seconds:
            self.commit()

    def commit(self) -> None:
        """Записать пачку: транзакция базы, один ``os.sync()`` для файлов работ, затем их итоги."""
        if not self.pending:
            return
        try:
            gradebook.commit(self.gb)
        except BaseException:
            self.broken = True  # пачка не записана: выход из блока её откатит
            raise
        os.sync()  # ноутбуки и отзывы пачки — на диске раньше, чем итоги, которые говорят «записано»
        for result in self.pending:
            atomic_write(self.lab.result_file(result.student), result.to_json(), durable=False)
        self.pending = []

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if self.broken:
            gradebook.rollback(self.gb)
            self.pending = []
        else:
            self.commit()


def _write_files(lab, outcome) -> None:
    """Проверенный ноутбук (в autograded/ и submitted/ — так их ищет formgrader) и отзыв работы."""
    result = outcome.result
    stamp = nbgrader_time(result.submitted_at)
    for folder in (lab.autograded(result.student), lab.submitted(result.student)):
        atomic_write(folder / f"{lab.name}.ipynb", outcome.notebook, durable=False)
        if stamp:
            atomic_write(folder / "timestamp.txt", stamp, durable=False)
    target = lab.feedback(result.student)
    if outcome.feedback:
        atomic_write(target / f"{lab.name}.html", outcome.feedback, durable=False)
        if stamp:
            atomic_write(target / "timestamp.txt", stamp, durable=False)
    elif target.exists():
        shutil.rmtree(target)  # не сдано — отзыва нет (и старого тоже)


def finish(course, lab, master) -> list[Result]:
    """Догнать базу до итогов (после kill -9 могла отстать), обновить отзывы с ручными баллами,
    добавить замечания о переоткрытых письменных ответах и записать CSV группы. Вернуть итоги группы."""
    results = load(lab.results)
    with gradebook.open_gradebook(course.db_url, course.course_id) as gb:
        manual = _catch_up(gb, lab, results)
    for result in results:
        if manual[result.student]:
            _refresh_feedback(lab, master, result, manual[result.student])
    write_csv(lab.csv, results, manual)
    return results


def _catch_up(gb, lab, results: list[Result]) -> dict[str, dict]:
    """База оценок — до итогов: строка работы, чьи баллы в базе не те, пишется заново; ручные баллы каждой работы
    (слушатель → {ячейка: балл}); к сообщению итога — замечания о письменных ответах, изменённых после ручной
    проверки."""
    known = gradebook.stored(gb, lab.name)  # вся лабораторная — двумя запросами, не по запросу на работу
    manual = {}
    for result in results:
        if not result.counted:
            manual[result.student] = {}
            continue
        stored, manual[result.student] = known.get(result.student, (None, {}))
        if stored != {c["grade_id"]: c["score"] for c in result.cells}:
            gradebook.sync(gb, lab.name, result, nbgrader_time(result.submitted_at), lab.manual)
            notebook = gb.find_submission_notebook(lab.name, lab.name, result.student)
            manual[result.student] = gradebook.manual_grades(gb, lab.name, notebook)
        extra = gradebook.reopened(result, manual[result.student], lab.manual)
        if extra:
            result.message = "; ".join(filter(None, [result.message, *extra]))
    return manual


def _refresh_feedback(lab, master, result: Result, manual: dict) -> None:
    """Отзыв с ручными баллами преподавателя — перерисовать, если баллы изменились с прошлого отзыва (их отпечаток
    хранится в итоге как ``feedback_state``)."""
    import nbformat

    from autograde.render import feedback

    state = hashlib.sha256(json.dumps(sorted((k, list(v)) for k, v in manual.items()),
                                      ensure_ascii=False).encode()).hexdigest()[:16]
    path = lab.autograded(result.student) / f"{lab.name}.ipynb"
    if result.feedback_state == state or result.unexecuted or not path.is_file():
        return
    clean = nbformat.read(path, as_version=4)
    page = feedback.render(clean, master, student_id=result.display_id, result=result, manual=manual)
    atomic_write(lab.feedback(result.student) / f"{lab.name}.html", page)
    saved = Result.from_json(lab.result_file(result.student).read_text(encoding="utf-8"))
    saved.feedback_state = state
    atomic_write(lab.result_file(result.student), saved.to_json())

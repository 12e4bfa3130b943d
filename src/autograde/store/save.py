"""Запись итогов проверки — только главный процесс: проверенный ноутбук, отзыв, база оценок, итог.

Каждый файл пишется атомарно, итог работы — последним: после ``kill -9`` он либо есть вместе со
всем остальным, либо работа будет проверена снова. ``finish`` догоняет базу оценок до итогов,
перерисовывает отзывы, где преподаватель поставил ручные баллы, и добавляет замечания о письменных
ответах, которые изменились после ручной проверки.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from datetime import datetime, timezone

from autograde.lab.result import Result
from autograde.store import gradebook
from autograde.store.results import atomic_write


def nbgrader_time(iso: str) -> str | None:
    """Время сдачи в формате timestamp.txt nbgrader (UTC) или None, если LMS его не дала."""
    if not iso:
        return None
    return datetime.fromisoformat(iso).astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC")


def write(course, lab, outcome, gb) -> None:
    """Проверенный ноутбук, отзыв, база оценок и, последним, итог — каждый атомарно."""
    result = outcome.result
    stamp = nbgrader_time(result.submitted_at)
    for folder in (lab.autograded(result.student), lab.submitted(result.student)):
        atomic_write(folder / f"{lab.name}.ipynb", outcome.notebook)
        if stamp:
            atomic_write(folder / "timestamp.txt", stamp)
    target = lab.feedback(result.student)
    if outcome.feedback:
        atomic_write(target / f"{lab.name}.html", outcome.feedback)
        if stamp:
            atomic_write(target / "timestamp.txt", stamp)
    elif target.exists():
        shutil.rmtree(target)  # не сдано — отзыва нет (и старого тоже)
    if gb is None:
        from nbgrader.api import Gradebook

        with Gradebook(course.db_url, course.course_id) as book:
            gradebook.sync(book, lab.name, result, stamp, lab.work / "manual")
    else:
        gradebook.sync(gb, lab.name, result, stamp, lab.work / "manual")
    atomic_write(lab.results / f"{result.student}.json", result.to_json())


def finish(course, lab, master, results: list[Result]) -> dict[str, dict]:
    """Догнать базу до итогов (после kill -9 могла отстать), обновить отзывы с ручными баллами,
    добавить замечания о переоткрытых письменных ответах. Вернуть ручные оценки по слушателям."""
    import nbformat
    from nbgrader.api import Gradebook, MissingEntry

    from autograde.render import feedback

    manual = {}
    with Gradebook(course.db_url, course.course_id) as gb:
        for result in results:
            try:
                notebook = gb.find_submission_notebook(lab.name, lab.name, result.student)
                stored = {g.name: g.auto_score for g in notebook.grades}
            except MissingEntry:
                notebook, stored = None, None
            if not result.counted:
                manual[result.student] = {}
                continue
            if stored != {c["grade_id"]: c["score"] for c in result.cells}:
                gradebook.sync(gb, lab.name, result, nbgrader_time(result.submitted_at), lab.work / "manual")
                notebook = gb.find_submission_notebook(lab.name, lab.name, result.student)
            manual[result.student] = gradebook.manual_grades(notebook)
            extra = gradebook.reopened(result, manual[result.student], lab.work / "manual")
            if extra:
                result.message = "; ".join(filter(None, [result.message, *extra]))
            state = hashlib.sha256(json.dumps(sorted((k, list(v)) for k, v in manual[result.student].items()),
                                              ensure_ascii=False).encode()).hexdigest()[:16]
            path = lab.autograded(result.student) / f"{lab.name}.ipynb"
            if manual[result.student] and result.feedback_state != state and not result.unexecuted and path.is_file():
                clean = nbformat.read(path, as_version=4)
                page = feedback.render(clean, master, student_id=result.display_id, result=result,
                                       manual=manual[result.student])
                atomic_write(lab.feedback(result.student) / f"{lab.name}.html", page)
                saved = Result.from_json((lab.results / f"{result.student}.json").read_text(encoding="utf-8"))
                saved.feedback_state = state
                atomic_write(lab.results / f"{result.student}.json", saved.to_json())
    return manual

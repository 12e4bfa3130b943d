"""База оценок nbgrader (``autograde/gradebook.db``): её пишет только главный процесс, пачкой работ за транзакцию.

* Автобаллы — как ``SaveAutoGrades``: ручные баллы преподавателя не трогаем.
* Имя слушателя для formgrader — в ``first_name`` (ключ в базе может быть хешем).
* Опоздание — ``late_submission_penalty`` проверенного ноутбука (его показывает и ``nbgrader export``).
* Письменный ответ изменился после ручной проверки (пересдача) — ручной балл и комментарий
  снимаются и сохраняются как «прежние» в ``work/<lab>/manual/<ключ>.json``: новая версия ответа
  снова ждёт преподавателя (``manual_pending``), старая оценка к ней не прилипает.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

from autograde.lab.result import Result, fmt
from autograde.store.results import atomic_write


def sync(gb, lab: str, result: Result, timestamp: str | None, manual_dir: Path) -> None:
    """Записать автобаллы работы в базу; снять устаревшую ручную оценку изменённого ответа."""
    with warnings.catch_warnings():  # SAWarning nbgrader о сессии SQLAlchemy — не ошибка
        warnings.simplefilter("ignore")
        _sync(gb, lab, result, timestamp, manual_dir)


def _sync(gb, lab: str, result: Result, timestamp: str | None, manual_dir: Path) -> None:
    from nbgrader import utils as nbutils
    from nbgrader.api import MissingEntry

    student = gb.update_or_create_student(result.student)
    if student.first_name != result.display_id[:128]:
        student.first_name = result.display_id[:128]
    if result.status == "not_submitted":  # слушатель есть в списке formgrader, сдачи — нет
        gb.db.commit()
        return
    try:
        submission = gb.find_submission(lab, result.student)
    except MissingEntry:
        notebook = _add_submission(gb, lab, student, timestamp)
    else:
        if timestamp:
            submission.timestamp = nbutils.parse_utc(timestamp)
        notebook = gb.find_submission_notebook(lab, lab, result.student)
    notebook.late_submission_penalty = result.penalty or None
    names = cell_names(gb, lab)  # все оценки и комментарии работы — двумя запросами, без запроса на ячейку
    grades = {names[grade.cell_id]: grade for grade in notebook.grades}
    comments = {names[comment.cell_id]: comment for comment in notebook.comments}
    state_path = manual_dir / f"{result.student}.json"
    state = _read(state_path)
    for cell in result.cells:
        grade = grades[cell["grade_id"]]
        grade.auto_score = cell["score"]
        answer = result.answers.get(cell["grade_id"])
        if cell["kind"] == "manual" and answer is not None:
            known = state.setdefault(cell["grade_id"], {})
            comment = comments[cell["grade_id"]]
            graded = grade.manual_score is not None or bool(comment.manual_comment)
            if graded and known.get("answer") not in (None, answer):
                known["previous"] = {"answer": known["answer"], "score": grade.manual_score,
                                     "comment": comment.manual_comment or ""}
                grade.manual_score = None
                comment.manual_comment = None
            known["answer"] = answer
        grade.needs_manual_grade = grade.manual_score is not None or grade.auto_score is None
        if result.unexecuted:
            grade.needs_manual_grade = False
    for grade_id, answered in result.answered.items():
        comments[grade_id].auto_comment = None if answered else "Нет ответа."
    gb.db.commit()
    if state:
        atomic_write(state_path, json.dumps(state, ensure_ascii=False, indent=1, sort_keys=True))


def defer_commits(gb) -> None:
    """Дальше всё, что записывают nbgrader и ``sync``, — одна транзакция до ``commit(gb)`` или ``rollback(gb)``.

    Методы nbgrader зовут ``self.db.commit()`` после каждой записи: на это время он становится ``flush`` —
    записанное видно запросам той же сессии, а на диск база попадает одним настоящим ``commit``.
    """
    gb.db.commit = gb.db.flush


def commit(gb) -> None:
    gb.db.__dict__.pop("commit", None)
    gb.db.commit()


def rollback(gb) -> None:
    gb.db.__dict__.pop("commit", None)
    gb.db.rollback()


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        return {}


def _add_submission(gb, lab: str, student, timestamp: str | None):
    """Новая сдача со всеми строками оценок и комментариев — как ``Gradebook.add_submission`` nbgrader, но связи
    ставятся по id: списки всех сдач задания и ноутбука не загружаются из базы ради одной новой. Возвращает её
    ``SubmittedNotebook`` лабораторной."""
    from nbgrader import utils as nbutils
    from nbgrader.api import Comment, Grade, SubmittedAssignment, SubmittedNotebook

    assignment = gb.find_assignment(lab)
    submission = SubmittedAssignment(assignment_id=assignment.id, student_id=student.id)
    if timestamp:
        submission.timestamp = nbutils.parse_utc(timestamp)
    ours = None
    for notebook in assignment.notebooks:
        submitted = SubmittedNotebook(notebook_id=notebook.id, assignment=submission)
        for cell in notebook.grade_cells:
            Grade(cell_id=cell.id, notebook=submitted)
        for cell in notebook.solution_cells:
            Comment(cell_id=cell.id, notebook=submitted)
        for cell in notebook.task_cells:
            Comment(cell_id=cell.id, notebook=submitted)
            Grade(cell_id=cell.id, notebook=submitted)
        if notebook.name == lab:
            ours = submitted
    gb.db.add(submission)
    return ours


def cell_names(gb, lab: str) -> dict[str, str]:
    """{id ячейки эталона в базе: её grade_id} — один запрос на лабораторную за жизнь ``gb``.

    ``Grade.name`` у nbgrader — прокси через ячейку: на каждую оценку он ходил бы в базу отдельно.
    """
    cache = gb.__dict__.setdefault("_autograde_cell_names", {})
    if lab not in cache:
        notebook = gb.find_notebook(lab, lab)
        cache[lab] = {cell.id: cell.name for cells in (notebook.grade_cells, notebook.solution_cells,
                                                       notebook.task_cells) for cell in cells}
    return cache[lab]


def auto_scores(gb, lab: str, notebook) -> dict[str, float | None]:
    """Автобаллы работы в базе: {grade_id: балл}."""
    names = cell_names(gb, lab)
    return {names[grade.cell_id]: grade.auto_score for grade in notebook.grades}


def manual_grades(gb, lab: str, notebook) -> dict:
    """Ручные баллы и комментарии преподавателя: {grade_id: (балл или None, комментарий)}."""
    names = cell_names(gb, lab)
    out = {}
    comments = {names[c.cell_id]: c.manual_comment or "" for c in notebook.comments}  # auto_comment — не его
    for grade in notebook.grades:
        name = names[grade.cell_id]
        if grade.manual_score is not None or comments.get(name):
            out[name] = (grade.manual_score, comments.get(name, ""))
    for name, text in comments.items():
        if text and name not in out:
            out[name] = (None, text)
    return out


def reopened(result: Result, manual: dict, manual_dir: Path) -> list[str]:
    """Замечания о письменных ответах, которые изменились после ручной проверки и ждут новой оценки."""
    notes = []
    for grade_id, known in sorted(_read(manual_dir / f"{result.student}.json").items()):
        previous = known.get("previous")
        if previous and manual.get(grade_id, (None,))[0] is None and previous.get("answer") != known.get("answer"):
            score = "без балла" if previous.get("score") is None else f"{fmt(previous['score'])}"
            comment = f", комментарий «{previous['comment']}»" if previous.get("comment") else ""
            notes.append(f"письменный ответ {grade_id} изменён после проверки (прежняя оценка: {score}{comment}) — "
                         "оцените новую версию в formgrader")
    return notes

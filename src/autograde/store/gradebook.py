"""База оценок nbgrader (``autograde/gradebook.db``): её пишет только главный процесс, пачкой работ за транзакцию.

* Автобаллы — как ``SaveAutoGrades``: ручные баллы преподавателя не трогаем.
* Имя слушателя для formgrader — в ``first_name`` (ключ в базе может быть хешем).
* Опоздание — ``late_submission_penalty`` проверенного ноутбука (его показывает и ``nbgrader export``).
* Письменный ответ изменился после ручной проверки (пересдача) — ручной балл и комментарий
  снимаются и сохраняются как «прежние» в ``work/<lab>/manual/<ключ>.json``: новая версия ответа
  снова ждёт преподавателя (``manual_pending``), старая оценка к ней не прилипает.
"""

from __future__ import annotations

import copy
import json
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING

from autograde.lab.result import Result, fmt
from autograde.store.atomic import atomic_write

if TYPE_CHECKING:
    from autograde.lab.master import Master


def open_gradebook(db_url: str, course_id: str):
    """``Gradebook`` nbgrader; новую базу сначала создаёт ``create`` — быстро и без программы alembic на PATH."""
    from nbgrader.api import Gradebook

    create(db_url)
    return Gradebook(db_url, course_id)


def register(master: Master, db_url: str, course_id: str) -> None:
    """Записать задание и его ячейки в базу оценок (как generate_assignment): нужно formgrader'у."""
    from nbgrader.preprocessors import SaveCells

    with open_gradebook(db_url, course_id) as gb:
        gb.update_or_create_assignment(master.lab)
    resources = {"nbgrader": {"notebook": master.lab, "assignment": master.lab, "db_url": db_url}}
    SaveCells()(copy.deepcopy(master.notebook), resources)


def create(db_url: str) -> None:
    """Создать базу оценок, если её нет: таблицы nbgrader и отметка версии схемы.

    Так делает и сам nbgrader, но версию схемы он узнаёт, запуская программу ``alembic`` (секунды на каждую
    новую базу, и только если она на PATH); здесь та же версия читается из миграций nbgrader в этом процессе.
    """
    import nbgrader
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from nbgrader.api import Base
    from sqlalchemy import create_engine, inspect, text

    if db_url.startswith("sqlite:///"):  # папки базы может ещё не быть (свежий клон курса)
        Path(db_url[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(db_url)
    try:
        if inspect(engine).get_table_names():
            return
        config = Config()
        config.set_main_option("script_location", str(Path(nbgrader.__file__).parent / "alembic"))
        head = ScriptDirectory.from_config(config).get_current_head()
        Base.metadata.create_all(bind=engine)
        with engine.begin() as connection:
            connection.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)"))
            connection.execute(text("INSERT INTO alembic_version (version_num) VALUES (:head)"), {"head": head})
    finally:
        engine.dispose()


def sync(gb, lab: str, result: Result, timestamp: str | None, manual_dir: Path) -> None:
    """Записать автобаллы работы в базу; снять устаревшую ручную оценку изменённого ответа."""
    with warnings.catch_warnings():  # SAWarning nbgrader о сессии SQLAlchemy — не ошибка
        warnings.simplefilter("ignore")
        _sync(gb, lab, result, timestamp, manual_dir)


def _sync(gb, lab: str, result: Result, timestamp: str | None, manual_dir: Path) -> None:
    from nbgrader import utils as nbutils
    from nbgrader.api import Student

    known = _known(gb, lab)
    name = result.display_id[:128]
    if result.student not in known.students:  # новый слушатель: строка без запроса «а есть ли он»
        _row(gb, Student, id=result.student, first_name=name, last_name=None, email=None, lms_user_id=None)
        known.students[result.student] = name
    elif known.students[result.student] != name:
        gb.find_student(result.student).first_name = name
        known.students[result.student] = name
    if result.status == "not_submitted":  # слушатель есть в списке formgrader, сдачи — нет
        gb.db.commit()
        return
    if result.student in known.submitted:
        notebook = gb.find_submission_notebook(lab, lab, result.student)
        if timestamp:
            notebook.assignment.timestamp = nbutils.parse_utc(timestamp)
        names = known.names  # все оценки и комментарии работы — двумя запросами, без запроса на ячейку
        grades = {names[grade.cell_id]: grade for grade in notebook.grades}
        comments = {names[comment.cell_id]: comment for comment in notebook.comments}
    else:
        notebook, grades, comments = _add_submission(gb, known, result.student, timestamp)
        known.submitted.add(result.student)
    notebook.late_submission_penalty = result.penalty or None
    state_path = manual_dir / f"{result.student}.json"
    state = _read(state_path)
    for cell in result.cells:
        grade = grades[cell["grade_id"]]
        grade.auto_score = cell["score"]
        answer = result.answers.get(cell["grade_id"])
        if cell["kind"] == "manual" and answer is not None:
            known_answer = state.setdefault(cell["grade_id"], {})
            comment = comments[cell["grade_id"]]
            graded = grade.manual_score is not None or bool(comment.manual_comment)
            if graded and known_answer.get("answer") not in (None, answer):
                known_answer["previous"] = {"answer": known_answer["answer"], "score": grade.manual_score,
                                            "comment": comment.manual_comment or ""}
                grade.manual_score = None
                comment.manual_comment = None
            known_answer["answer"] = answer
        grade.needs_manual_grade = grade.manual_score is not None or grade.auto_score is None
        if result.unexecuted:
            grade.needs_manual_grade = False
    for grade_id, answered in result.answered.items():
        comments[grade_id].auto_comment = None if answered else "Нет ответа."
    if gb.db.__dict__.get("commit") is not _later:  # не в пачке: записать сразу
        _write_rows(gb)
    gb.db.commit()
    if state:
        atomic_write(state_path, json.dumps(state, ensure_ascii=False, indent=1, sort_keys=True))


@dataclass
class _Known:
    """Что главный процесс уже знает о базе одной лабораторной: читается один раз за жизнь ``gb``.

    Пишет в базу только он (блокировка проверки), поэтому знание не устаревает; откат пачки его сбрасывает.
    """

    assignment: str  # id задания
    notebook: str  # id ноутбука лабораторной в задании
    notebooks: list[tuple[str, list[str], list[str], list[str]]]  # все ноутбуки задания: (id, оценки, решения, задачи)
    names: dict[str, str]  # id ячейки эталона → её grade_id
    students: dict[str, str]  # ключ слушателя → first_name
    submitted: set[str]  # ключи слушателей, у которых есть сдача этой лабораторной


def _order() -> list:
    from nbgrader.api import Comment, Grade, Student, SubmittedAssignment, SubmittedNotebook

    return [m.__table__ for m in (Student, SubmittedAssignment, SubmittedNotebook, Grade, Comment)]


def _known(gb, lab: str) -> _Known:
    from nbgrader.api import Assignment, Student, SubmittedAssignment

    cache = gb.__dict__.setdefault("_autograde_known", {})
    if lab not in cache:
        assignment = gb.find_assignment(lab)
        notebooks = [(nb.id, [c.id for c in nb.grade_cells], [c.id for c in nb.solution_cells],
                      [c.id for c in nb.task_cells]) for nb in assignment.notebooks]
        ours = gb.find_notebook(lab, lab)
        names = {cell.id: cell.name for cells in (ours.grade_cells, ours.solution_cells, ours.task_cells)
                 for cell in cells}
        students = dict(gb.db.query(Student.id, Student.first_name).all())
        submitted = {row[0] for row in gb.db.query(SubmittedAssignment.student_id)
                     .join(Assignment, Assignment.id == SubmittedAssignment.assignment_id)
                     .filter(Assignment.name == lab).all()}
        cache[lab] = _Known(assignment.id, ours.id, notebooks, names, {k: v or "" for k, v in students.items()}, submitted)
    return cache[lab]


def forget(gb) -> None:
    """Сбросить знание о базе и незаписанные строки (после отката пачки знание могло разойтись с базой)."""
    gb.__dict__.pop("_autograde_known", None)
    gb.__dict__.pop("_autograde_rows", None)


def defer_commits(gb) -> None:
    """Дальше всё, что записывают nbgrader и ``sync``, — одна транзакция до ``commit(gb)`` или ``rollback(gb)``.

    Методы nbgrader зовут ``self.db.commit()`` после каждой записи: на это время он ничего не делает —
    записанное всё равно видно запросам той же сессии (перед запросом она сбрасывает изменения сама,
    autoflush), а на диск база попадает одним настоящим ``commit``: строки всей пачки — одним ``INSERT``
    на таблицу.
    """
    gb.db.commit = _later


def _later() -> None:
    """``commit`` внутри пачки: запись ждёт конца пачки."""


def commit(gb) -> None:
    gb.db.__dict__.pop("commit", None)
    _write_rows(gb)
    gb.db.commit()


def rollback(gb) -> None:
    gb.db.__dict__.pop("commit", None)
    gb.db.rollback()
    forget(gb)


def _read(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        return {}


def _add_submission(gb, known: _Known, student: str, timestamp: str | None):
    """Новая сдача со всеми строками оценок и комментариев — как ``Gradebook.add_submission`` nbgrader, но
    строками таблиц (``_row``) по id из ``_Known``: ни задание, ни его ячейки, ни прежние сдачи не читаются из
    базы, а строки всей пачки пишутся одним ``INSERT`` на таблицу. Возвращает строку ``SubmittedNotebook``
    лабораторной и её оценки и комментарии: {grade_id: строка}."""
    from nbgrader import utils as nbutils
    from nbgrader.api import Comment, Grade, SubmittedAssignment, SubmittedNotebook

    submission = _row(gb, SubmittedAssignment, id=uuid.uuid4().hex, assignment_id=known.assignment, student_id=student,
                      timestamp=nbutils.parse_utc(timestamp) if timestamp else None, extension=None)
    ours, grades, comments = None, {}, {}
    for notebook_id, grade_cells, solution_cells, task_cells in known.notebooks:
        submitted = _row(gb, SubmittedNotebook, id=uuid.uuid4().hex, assignment_id=submission.id,
                         notebook_id=notebook_id, flagged=False, late_submission_penalty=None)
        made_grades = {cell: _row(gb, Grade, id=uuid.uuid4().hex, notebook_id=submitted.id, cell_id=cell,
                                  auto_score=None, manual_score=None, extra_credit=None, needs_manual_grade=False)
                       for cell in grade_cells + task_cells}
        made_comments = {cell: _row(gb, Comment, id=uuid.uuid4().hex, notebook_id=submitted.id, cell_id=cell,
                                    auto_comment=None, manual_comment=None)
                         for cell in solution_cells + task_cells}
        if notebook_id == known.notebook:
            ours = submitted
            grades = {known.names[cell]: row for cell, row in made_grades.items()}
            comments = {known.names[cell]: row for cell, row in made_comments.items()}
    return ours, grades, comments


def _row(gb, model, **columns) -> SimpleNamespace:
    """Новая строка таблицы ``model``: её поля можно менять до записи (``_write_rows``)."""
    row = SimpleNamespace(**columns)
    gb.__dict__.setdefault("_autograde_rows", {}).setdefault(model.__table__, []).append(row)
    return row


def _write_rows(gb) -> None:
    """Записать новые строки (``_row``) — один ``INSERT`` на таблицу, в порядке ссылок между таблицами."""
    from sqlalchemy import insert

    rows = gb.__dict__.pop("_autograde_rows", {})
    for table in sorted(rows, key=_order().index):
        gb.db.execute(insert(table), [vars(row) for row in rows[table]])


def stored(gb, lab: str) -> dict[str, tuple[dict, dict]]:
    """Оценки всей лабораторной в базе — четырьмя запросами: {ключ слушателя: (автобаллы {grade_id: балл},
    ручные оценки {grade_id: (балл или None, комментарий)})}; в словаре только те, у кого есть сдача.

    Запросы простые, а сводятся они здесь: с соединением таблиц SQLite перебирал все оценки базы на каждую
    сдачу (индекса по ``grade.notebook_id`` нет) — 2 мс на работу и квадратичный рост; оценки и комментарии
    берутся по индексу ``(cell_id, notebook_id)``.
    """
    from nbgrader.api import Comment, Grade, SubmittedAssignment, SubmittedNotebook

    known = _known(gb, lab)
    owner = dict(gb.db.query(SubmittedAssignment.id, SubmittedAssignment.student_id)
                 .filter(SubmittedAssignment.assignment_id == known.assignment).all())
    notebooks = {notebook: owner[submission] for notebook, submission in
                 gb.db.query(SubmittedNotebook.id, SubmittedNotebook.assignment_id)
                 .filter(SubmittedNotebook.notebook_id == known.notebook).all() if submission in owner}
    cells = sorted(known.names)
    rows: dict[str, tuple[list, list]] = {}
    for table, columns in ((Grade, (Grade.cell_id, Grade.auto_score, Grade.manual_score)),
                           (Comment, (Comment.cell_id, Comment.manual_comment))):
        for notebook, *values in gb.db.query(table.notebook_id, *columns).filter(table.cell_id.in_(cells)).all():
            if notebook in notebooks:
                rows.setdefault(notebooks[notebook], ([], []))[table is Comment].append(values)
    out = {}
    for student, (grades, comments) in rows.items():
        auto = {known.names[cell]: score for cell, score, _ in grades}
        out[student] = (auto, _manual({known.names[cell]: manual for cell, _, manual in grades},
                                      {known.names[cell]: text or "" for cell, text in comments}))
    return out


def manual_grades(gb, lab: str, notebook) -> dict:
    """Ручные баллы и комментарии преподавателя одной сдачи: {grade_id: (балл или None, комментарий)}."""
    names = _known(gb, lab).names  # Grade.name у nbgrader ходил бы в базу за каждой оценкой
    return _manual({names[g.cell_id]: g.manual_score for g in notebook.grades},
                   {names[c.cell_id]: c.manual_comment or "" for c in notebook.comments})  # auto_comment — не его


def _manual(scores: dict, comments: dict) -> dict:
    out = {}
    for name, score in scores.items():
        if score is not None or comments.get(name):
            out[name] = (score, comments.get(name, ""))
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

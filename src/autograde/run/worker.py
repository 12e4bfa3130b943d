"""Проверить одну работу: собрать ноутбук, исполнить (ядро + судья), посчитать баллы, очистить, отрендерить отзыв.

Работник ничего не пишет на диск проверяющего, кроме своей временной папки: он возвращает
``Outcome`` — итог, очищенный проверенный ноутбук и HTML отзыва, — а записывает их (и базу
оценок) только главный процесс. Поэтому работник может жить где угодно: в пуле на этой машине
или на узле кластера. Всё, что ему нужно, — в ``Context`` (простые данные, без путей к секретам).
"""

from __future__ import annotations

import copy
import tempfile
from pathlib import Path

import nbformat
from nbformat.v4 import new_markdown_cell
from nbgrader import utils as nbutils

from autograde.lab import scoring
from autograde.lab.master import Master, gid
from autograde.lab.notebook import SubmissionError, merge, read_submission, suspicious
from autograde.lab.result import Result
from autograde.lab.task import Context, Outcome, Task
from autograde.lab.verdict import RETRY, REVIEW_PREFIX, verdict
from autograde.render import feedback, sanitize
from autograde.run import execute
from autograde.sandbox import SandboxError, start


def _empty_cells(master: Master) -> list[dict]:
    cells = []
    for grade_id in master.order:
        meta = master.by_id[grade_id].metadata["nbgrader"]
        if meta.get("grade") or meta.get("task"):
            kind = "test" if master.is_test(grade_id) else "manual"
            cells.append({"grade_id": grade_id, "kind": kind, "score": 0.0, "max_score": float(meta.get("points", 0)),
                          "message": "работа не проверена"})
    return cells


def unexecuted(task: Task, ctx: Context, status: str, message: str) -> Outcome:
    """Итог работы, которую не исполняли: все тесты — 0, письменные ответы — 0 (как у nbgrader)."""
    cells = _empty_cells(ctx.master)
    result = Result(task.student, task.display_id, ctx.master.lab, task.key, status, message, 0.0,
                    sum(c["max_score"] for c in cells if c["kind"] == "test"), cells, sandbox=ctx.sandboxed,
                    submitted_at=task.submitted_at)
    merged = merge([{"cell_type": c.cell_type, "source": c.source, "metadata": dict(c.metadata)}
                    for c in ctx.master.release.cells], ctx.master).notebook
    execute.not_executed(merged, 0, "работа не проверена")
    note = new_markdown_cell(f"**Работа не проверена автоматически:** {message}")
    note.id = "autograde-error"
    merged.cells.insert(0, note)
    clean, _ = sanitize.notebook(merged, lambda cell: True)
    clean = feedback.visible(clean, ctx.master)  # этот ноутбук ляжет в autograded/: скрытые тесты не показывать
    page = "" if status == "not_submitted" else feedback.error_page(ctx.master.lab, task.display_id, result)
    return Outcome(result, nbformat.writes(clean), page)


def grade(task: Task, ctx: Context, slot: int = 0) -> Outcome:
    """Проверить одну работу от разбора файла до отзыва. Пример: ``grade(task, ctx).result.score``."""
    master = ctx.master
    notes = list(task.notes)
    try:
        if task.error is not None:
            raise SubmissionError(task.error)
        cells, read_notes = read_submission(task.data or b"")
    except SubmissionError as exc:
        return unexecuted(task, ctx, "error", "; ".join(notes + [str(exc)]))
    merged = merge(cells, master, ctx.released_tests)
    nb = merged.notebook
    execution = _execute(nb, ctx, slot, task.student)
    status, message = verdict(execution.events, nb, ctx.limits, notes + read_notes + merged.notes)
    review = suspicious(cells, master)
    if review:
        message = "; ".join(filter(None, [message, f"{REVIEW_PREFIX}: {', '.join(review)} — посмотрите работу глазами"]))
    scores = scoring.score(nb, master)
    scoring.explain_upstream(nb, scores)
    tests = [s for s in scores if s.kind == "test"]
    raw = sum(s.score for s in tests)
    hours, penalty = scoring.late(task, ctx, raw)
    answered, answers = scoring.written_answers(nb, master)
    result = Result(task.student, task.display_id, master.lab, task.key, status, message, raw - penalty,
                    sum(s.max_score for s in tests), [s.to_dict() for s in scores], answered, answers, ctx.sandboxed,
                    [{"kind": e.kind, "cell": e.cell, "detail": e.detail} for e in execution.events],
                    task.submitted_at, round(hours, 4), penalty, review)
    if any(e.kind in RETRY for e in execution.events):
        result.key = ""  # сбой самой проверки, а не работы: следующий запуск перепроверит её
    clean, cleaned = sanitize.notebook(nb, lambda cell: _trusted_markdown(cell, master))
    clean = feedback.visible(clean, master)
    if cleaned:
        result.message = "; ".join(filter(None, [result.message, *cleaned]))
    page = feedback.render(clean, master, student_id=task.display_id, result=result)
    return Outcome(result, nbformat.writes(clean), page)


def _trusted_markdown(cell, master: Master) -> bool:
    """Markdown из эталона (инструкции) показываем как есть; markdown слушателя — только очищенным."""
    grade_id = gid(cell)
    return grade_id is not None and grade_id in master.by_id and not nbutils.is_solution(master.by_id[grade_id])


def _execute(nb, ctx: Context, slot: int, student: str) -> execute.Execution:
    """Исполнить собранный ноутбук: ядро слушателя и судья, каждый в своей песочнице."""
    master = ctx.master
    name = f"{master.lab}.ipynb"
    with tempfile.TemporaryDirectory(prefix="autograde-") as tmp:
        visible = copy.deepcopy(nb)  # в песочницах — ноутбук без скрытых тестов, как в выданной версии
        for cell in visible.cells:
            grade_id = gid(cell)
            if grade_id in master.release_by_id and not nbutils.is_solution(cell):
                cell.source = master.release_by_id[grade_id].source
        files = {}
        for file_name, data in {**ctx.release_files, name: nbformat.writes(visible).encode("utf-8")}.items():
            files[file_name] = Path(tmp) / "files" / file_name
            files[file_name].parent.mkdir(parents=True, exist_ok=True)
            files[file_name].write_bytes(data)
        common = {"files": files, "workdir_name": master.lab, "limits": ctx.limits, "sandboxed": ctx.sandboxed,
                  "slot": slot, "exclude": ctx.secrets}
        plan = execute.Plan([master.where(cell) for cell in nb.cells], list(master.owned), notebook=name)
        needs_judge = "judge" in plan.where
        try:
            kernel = start(program="kernel", hide_reference=ctx.hide_reference, kernel_args=list(ctx.kernel_args),
                           **common)
        except SandboxError as exc:
            execute.not_executed(nb, 0, "песочница не запустилась")
            return execute.Execution(events=[execute.Event("startup", None, str(exc))], completed=False)
        first = [start(program="judge", **common)] if needs_judge else []

        def judge_factory():
            return first.pop() if first else start(program="judge", **common)

        try:
            return execute.Runner(nb, kernel, judge_factory, plan).run()
        except SandboxError as exc:
            return execute.Execution(events=[execute.Event("startup", None, str(exc))], completed=False)
        finally:
            kernel.kill()
            for process in first:
                process.kill()

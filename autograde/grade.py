"""Проверить всю группу: ``python -m autograde grade LAB --submissions PATH``.

Что происходит с каждой работой:

1. приём (submissions.py): ноутбук из папки или zip LMS; копия — в autograde/submitted/
   (оригинал не трогаем); неверное имя, лишние файлы, пустой или битый файл — замечание или ошибка;
2. сборка (scoring.merge): решения слушателя + тесты и ячейки только для чтения из эталона;
3. исполнение (sandbox.py, execute.py): ядро в песочнице bubblewrap, без сети, с лимитами времени,
   памяти, вывода и процессов; клиент ядра — снаружи, в доверенном процессе;
4. баллы (scoring.score) и отзыв без кода скрытых тестов (feedback.py) — снаружи песочницы;
5. итог — autograde/work/<LAB>/results/<student>.json (атомарно: временный файл + os.replace).

Работы проверяются параллельно (``--workers``, по умолчанию — число ядер); в базу оценок
autograde/gradebook.db пишет только главный процесс, по одной работе, — formgrader видит их
для ручной проверки. Повторный запуск не перепроверяет работу, если не изменились ни она, ни
эталон, ни лимиты (ключ — хеш всего этого), и даёт тот же CSV; ``--force`` — перепроверить всех,
``--student ID`` — только этих. После kill -9 следующий запуск доделывает остальное.

Код выхода 0 — группа проверена, как бы ни написали слушатели; 2 — не работает сама проверка
(нет лабораторной, нет nbgrader_config.py, нет папки сдач); 3 — нет песочницы (см. --no-sandbox).

Пример:
    python -m autograde grade lab01_mini_rag --submissions ~/downloads/lab01.zip --workers 2
"""

from __future__ import annotations

import argparse
import copy
import csv
import ctypes
import fcntl
import hashlib
import io
import json
import multiprocessing
import os
import re
import shutil
import signal
import statistics
import sys
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from .course import RELEASE, ROOT, SOLUTIONS, CourseError, lab_names, load_config
from .sandbox import Limits, check_sandbox

NAME = "grade"
HELP = "проверить все сдачи лабораторной в песочнице: баллы, отзывы, CSV, база оценок"
VERSION = 1  # меняется, когда меняется сам способ проверки: тогда перепроверяются все
CSV_COLUMNS = ["student_id", "lab", "score", "max_score", "manual_pending", "status", "message"]
STATUSES = ("ok", "error", "timeout", "killed")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lab", metavar="LAB", help="лабораторная, например lab01_mini_rag")
    parser.add_argument("--submissions", required=True, type=Path, metavar="PATH",
                        help="папка <student_id>/<LAB>/<notebook>.ipynb или zip из LMS")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, metavar="N",
                        help="сколько работ проверять одновременно (по умолчанию — число ядер)")
    parser.add_argument("--cell-timeout", type=float, default=30.0, metavar="S", help="лимит на ячейку, секунд (30)")
    parser.add_argument("--timeout", type=float, default=300.0, metavar="S", help="лимит на весь ноутбук, секунд (300)")
    parser.add_argument("--memory", type=int, default=2048, metavar="MB", help="лимит памяти, МБ (2048)")
    parser.add_argument("--no-sandbox", action="store_true",
                        help="проверять без bubblewrap (небезопасно: код слушателей получит ваши файлы и сеть)")
    parser.add_argument("--force", action="store_true", help="перепроверить и те работы, что не менялись")
    parser.add_argument("--student", action="append", default=[], metavar="ID",
                        help="проверить только этих слушателей (можно повторять)")
    parser.add_argument("--course", type=Path, default=ROOT, metavar="ПАПКА",
                        help="корень каталога курса с nbgrader_config.py (по умолчанию этот репозиторий)")


# ---------- каталог курса ----------
@dataclass
class Paths:
    """Где что лежит для одной лабораторной (по nbgrader_config.py курса)."""

    root: Path
    lab: str
    config: object
    db_url: str
    course_id: str
    submitted_dir: Path
    autograded_dir: Path
    feedback_dir: Path

    @classmethod
    def load(cls, root: Path, lab: str) -> Paths:
        from nbgrader.coursedir import CourseDirectory

        root = Path(root).resolve()
        config = load_config(root)
        coursedir = CourseDirectory(config=config)
        if not coursedir.root:
            coursedir.root = str(root)
        known = lab_names(root)
        if lab not in known:
            raise CourseError(f"Нет лабораторной {lab!r} в {root / SOLUTIONS}. Есть: {', '.join(known) or 'ничего'}.")
        paths = cls(root, lab, config, coursedir.db_url, coursedir.course_id,
                    Path(coursedir.format_path(coursedir.submitted_directory, "X", lab)).parent.parent,
                    Path(coursedir.format_path(coursedir.autograded_directory, "X", lab)).parent.parent,
                    Path(coursedir.format_path(coursedir.feedback_directory, "X", lab)).parent.parent)
        if not paths.release_notebook.is_file():
            raise CourseError(f"Нет выданной версии {paths.release_notebook}: сначала python -m autograde release {lab}.")
        return paths

    @property
    def source_notebook(self) -> Path:
        return self.root / SOLUTIONS / self.lab / f"{self.lab}.ipynb"

    @property
    def release_notebook(self) -> Path:
        return self.root / RELEASE / self.lab / f"{self.lab}.ipynb"

    @property
    def work(self) -> Path:
        return self.root / "autograde" / "work" / self.lab

    @property
    def results(self) -> Path:
        return self.work / "results"

    @property
    def csv(self) -> Path:
        return self.root / "autograde" / "grades" / f"{self.lab}.csv"

    def submitted(self, student_id: str) -> Path:
        return self.submitted_dir / student_id / self.lab

    def autograded(self, student_id: str) -> Path:
        return self.autograded_dir / student_id / self.lab

    def feedback(self, student_id: str) -> Path:
        return self.feedback_dir / student_id / self.lab

    def secrets(self) -> list[Path]:
        """То, что не должно оказаться в песочнице, даже случайно."""
        return [self.root / SOLUTIONS, self.root / "autograde", self.submitted_dir, self.autograded_dir,
                self.feedback_dir, Path(self.db_url.replace("sqlite:///", "")).parent]

    def release_files(self) -> dict[str, Path]:
        """Файлы задания рядом с ноутбуком (данные лабораторной), кроме ноутбуков."""
        folder = self.release_notebook.parent
        return {str(p.relative_to(folder)): p for p in sorted(folder.rglob("*"))
                if p.is_file() and not p.is_symlink() and p.suffix != ".ipynb" and ".ipynb_checkpoints" not in p.parts}


def atomic_write(path: Path, data: bytes | str) -> None:
    """Записать файл целиком или никак: временный файл рядом и os.replace."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def _timestamp(value: datetime | None) -> str:
    value = value or datetime(1970, 1, 1, tzinfo=timezone.utc)
    return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC")


# ---------- одна работа (в процессе-работнике) ----------
_WORKER: dict = {}


def _init_worker(master, paths: Paths, limits: Limits, sandboxed: bool, counter) -> None:
    """Работник: умереть вместе с главным процессом (kill -9 тоже), взять свой слот песочницы."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C обрабатывает главный процесс
    with counter.get_lock():
        slot = counter.value
        counter.value += 1
    _WORKER.update(master=master, paths=paths, limits=limits, sandboxed=sandboxed, slot=slot)


def _cell_name(nb, index: int) -> str:
    from .scoring import _gid

    cell = nb.cells[index]
    gid = _gid(cell)
    if gid:
        return f"«{gid}»"
    first = next((line.strip() for line in cell.source.splitlines() if line.strip()), "")
    return f"ячейка {index + 1} («{first[:40]}{'…' if len(first) > 40 else ''}»)"


BLOCKED = [  # (вид, шаблон по «ename: evalue», что сказать после «ячейка …:»)
    ("exit", r"^SystemExit\b", "sys.exit() — выйти из ядра и так пропустить тесты нельзя, ячейка просто прервана"),
    ("network", r"Temporary failure in name resolution|Name or service not known|Network is unreachable|"
                r"No address associated|\[Errno -[235]\]|\[Errno 101\]|NameResolutionError",
     "попытка выйти в сеть — сети в песочнице нет"),
    ("write", r"Read-only file system|\[Errno 30\]|^PermissionError\b", "попытка записи вне рабочей папки — запрещено"),
    ("fork", r"^BlockingIOError\b.*(Resource temporarily unavailable|\[Errno 11\])",
     "попытка запустить процессы упёрлась в лимит песочницы"),
]


def _blocked(nb, skip: set[int] = frozenset()) -> list[tuple[str, str]]:
    """Что код пытался сделать и на что наткнулся в песочнице: [(вид, сообщение)], по разу на вид.

    Ячейки ``skip`` уже остановил сторож (поток вывода, время, …): их ошибки — следствие, а не новость.
    """
    found: dict[str, str] = {}
    for index, cell in enumerate(nb.cells):
        if index in skip:
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") != "error":
                continue
            text = f"{output.get('ename', '')}: {output.get('evalue', '')}"
            if output.get("ename") == "MemoryError" and "memory" not in found:
                found["memory"] = f"{_cell_name(nb, index)}: превышен лимит памяти {{memory}} МБ (MemoryError), ячейка прервана"
            for kind, pattern, message in BLOCKED:
                if kind not in found and re.search(pattern, text):
                    found[kind] = f"{_cell_name(nb, index)}: {message}"
    return list(found.items())


# событие исполнения → статус и сообщение (поля: cell, detail и лимиты проверки)
_EVENT_VERDICTS = {
    "startup": ("error", "ядро Python в песочнице не запустилось ({detail}): это сбой проверки, "
                         "а не работы — запустите проверку этой работы ещё раз"),
    "died": ("error", "{cell}: ядро Python завершилось ({detail}: os._exit, exit(), падение расширения "
                      "или убито системой); следующие ячейки не выполнялись и баллов не дали"),
    "wall": ("timeout", "{cell}: весь ноутбук выполнялся дольше {timeout:g} с и остановлен здесь; "
                        "следующие ячейки баллов не дали"),
    "timeout": ("timeout", "{cell}: выполнялась дольше {cell_timeout:g} с и прервана "
                           "(бесконечный цикл или слишком медленный код)"),
    "output": ("killed", "{cell}: вывела больше {output_kb} КБ (поток вывода) — ядро остановлено, "
                         "следующие ячейки не выполнялись"),
    "memory": ("killed", "{cell}: превышен лимит памяти {memory_mb} МБ — ядро остановлено, "
                         "следующие ячейки не выполнялись"),
    "processes": ("killed", "{cell}: запустила больше {processes} процессов (fork-бомба?) — ядро остановлено, "
                            "следующие ячейки не выполнялись"),
}


def verdict(execution, nb, limits: Limits, notes: list[str]) -> tuple[str, str]:
    """Статус и сообщение по событиям исполнения и замечаниям — по-русски, чтобы было ясно, что делать."""
    status, parts = "ok", list(notes)
    for event in execution.events:
        if event.kind not in _EVENT_VERDICTS:
            continue
        event_status, template = _EVENT_VERDICTS[event.kind]
        status = event_status if status == "ok" else status  # первая беда задаёт статус
        cell = _cell_name(nb, event.cell) if event.cell is not None else "ноутбук"
        parts.append(template.format(cell=cell, detail=event.detail, timeout=limits.timeout,
                                     cell_timeout=limits.cell_timeout, output_kb=limits.output_kb,
                                     memory_mb=limits.memory_mb, processes=limits.processes))
    stopped = {e.kind for e in execution.events}
    for kind, message in _blocked(nb, {e.cell for e in execution.events if e.cell is not None}):
        if (kind == "fork" and "processes" in stopped) or (kind == "memory" and "memory" in stopped):
            continue  # о том же уже сказано: сторож остановил ядро
        if kind == "memory":
            status = "killed" if status == "ok" else status
            message = message.format(memory=limits.memory_mb)
        parts.append(message)
    return status, "; ".join(parts)


def _empty_result(master, student_id: str, key: str, message: str, sandboxed: bool) -> dict:
    """Итог работы, которую нельзя исполнить: все тесты — 0, письменные ответы — 0 (как у nbgrader)."""
    cells = []
    for gid in master.order:
        cell = master.by_id[gid]
        meta = cell.metadata["nbgrader"]
        if meta.get("grade") or meta.get("task"):
            kind = "test" if master.is_test(gid) else "manual"
            cells.append({"grade_id": gid, "kind": kind, "score": 0.0, "max_score": float(meta.get("points", 0)),
                          "message": "работа не проверена"})
    max_score = sum(c["max_score"] for c in cells if c["kind"] == "test")
    return {"version": VERSION, "student_id": student_id, "lab": master.lab, "key": key, "status": "error",
            "message": message, "score": 0.0, "max_score": max_score, "cells": cells, "answered": {},
            "sandbox": sandboxed, "events": []}


def grade_one(task: dict) -> dict:
    """Проверить одну работу от приёма до отзыва и записать итог. Исполняется в работнике."""
    from . import scoring

    master, paths = _WORKER["master"], _WORKER["paths"]
    limits, sandboxed = _WORKER["limits"], _WORKER["sandboxed"]
    notes = list(task["notes"])
    try:
        if task["error"] is not None:
            raise scoring.SubmissionError(task["error"])
        cells, read_notes = scoring.read_submission(task["data"])
    except scoring.SubmissionError as exc:
        result = _empty_result(master, task["student_id"], task["key"], "; ".join(notes + [str(exc)]), sandboxed)
        write_outputs(paths, master, task, result, _error_notebook(master, result["message"]))
        return result
    merged = scoring.merge(cells, master)
    nb = merged.notebook
    execution = _execute(paths, master, nb, limits, sandboxed, task["student_id"])
    status, message = verdict(execution, nb, limits, notes + read_notes + merged.notes)
    suspicious = scoring.suspicious(cells, master)
    if suspicious:
        message = "; ".join(filter(None, [message, f"{scoring.REVIEW_PREFIX}: {', '.join(suspicious)} "
                                                    "— посмотрите работу глазами"]))
    scores = scoring.score(nb, master)
    tests = [s for s in scores if s.kind == "test"]
    answered = {scoring._gid(cell): cell.metadata["nbgrader"].get("checksum") != scoring.nbutils.compute_checksum(cell)
                for cell in nb.cells if scoring._gid(cell) and scoring.nbutils.is_solution(cell)}
    result = {"version": VERSION, "student_id": task["student_id"], "lab": master.lab, "key": task["key"],
              "status": status, "message": message, "score": sum(s.score for s in tests),
              "max_score": sum(s.max_score for s in tests), "cells": [s.to_dict() for s in scores],
              "answered": answered, "sandbox": sandboxed,
              "events": [{"kind": e.kind, "cell": e.cell, "detail": e.detail} for e in execution.events]}
    if execution.first("startup"):
        result["key"] = ""  # сбой самой проверки, а не работы: следующий запуск перепроверит её
    write_outputs(paths, master, task, result, nb)
    return result


def _execute(paths: Paths, master, nb, limits: Limits, sandboxed: bool, student_id: str):
    """Исполнить собранный ноутбук в песочнице; рабочая копия живёт только на время исполнения."""
    import nbformat

    from . import execute, scoring
    from .sandbox import SandboxError, start_kernel

    scratch = paths.work / "run" / f"{student_id}.{os.getpid()}"
    shutil.rmtree(scratch, ignore_errors=True)
    (scratch / "files").mkdir(parents=True)
    try:
        # в рабочей папке — только эта работа; скрытые тесты в ней вырезаны, как в выданной версии
        visible = copy.deepcopy(nb)
        for cell in visible.cells:
            gid = scoring._gid(cell)
            if gid in master.release_by_id and not scoring.nbutils.is_solution(cell):
                cell.source = master.release_by_id[gid].source
        own = scratch / "files" / f"{paths.lab}.ipynb"
        own.write_text(nbformat.writes(visible), encoding="utf-8")
        try:
            kernel = start_kernel(files={f"{paths.lab}.ipynb": own, **paths.release_files()}, workdir_name=paths.lab,
                                  limits=limits, sandboxed=sandboxed, slot=_WORKER["slot"],
                                  log_path=scratch / "kernel.log", exclude=paths.secrets(),
                                  kernel_args=_kernel_args(paths.config), scratch=scratch / "plain")
        except SandboxError as exc:
            execute._not_executed(nb, 0, "песочница не запустилась")
            return execute.Execution(events=[execute.Event("startup", None, str(exc))], completed=False)
        try:
            return execute.run(nb, kernel)
        finally:
            kernel.kill()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _error_notebook(master, message: str):
    """Ноутбук для formgrader, когда работу исполнить нельзя: задание без ответов и причина сверху."""
    from nbformat.v4 import new_markdown_cell

    from . import scoring
    from .execute import _not_executed

    cells = [{"cell_type": c.cell_type, "source": c.source, "metadata": dict(c.metadata)} for c in master.release.cells]
    nb = scoring.merge(cells, master).notebook
    _not_executed(nb, 0, "работа не проверена")
    note = new_markdown_cell(f"**Работа не проверена автоматически:** {message}")
    note.id = "autograde-error"
    nb.cells.insert(0, note)
    return nb


def write_outputs(paths: Paths, master, task: dict, result: dict, executed, manual: dict | None = None) -> None:
    """Проверенный ноутбук (для formgrader), отзыв и, последним, итог JSON — каждый атомарно."""
    import nbformat

    from . import feedback

    student_id = result["student_id"]
    stamp = task.get("timestamp") or _timestamp(None)
    autograded = paths.autograded(student_id)
    atomic_write(autograded / f"{paths.lab}.ipynb", nbformat.writes(executed))
    atomic_write(autograded / "timestamp.txt", stamp)
    target = paths.feedback(student_id)
    if result["status"] == "error" and not result["events"]:
        page = feedback.error_page(paths.lab, student_id, result)
    else:
        page = feedback.render(executed, master, student_id=student_id, result=result, manual=manual)
    atomic_write(target / f"{paths.lab}.html", page)
    atomic_write(target / "timestamp.txt", stamp)
    for name, data in (task.get("service") or {}).items():
        atomic_write(target / name, data)
    result["feedback_state"] = _manual_state(manual or {})
    atomic_write(paths.results / f"{student_id}.json", json.dumps(result, ensure_ascii=False, indent=1, sort_keys=True))


def _kernel_args(config) -> list[str]:
    args = ["--HistoryManager.hist_file=:memory:", "--IPKernelApp.log_level=ERROR"]
    if "Execute" in config and config.Execute.get("extra_arguments"):
        args = list(config.Execute.extra_arguments)
    return args


def _manual_state(manual: dict) -> str:
    return hashlib.sha256(json.dumps(sorted((k, list(v)) for k, v in manual.items()), ensure_ascii=False)
                          .encode()).hexdigest()[:16]


# ---------- база оценок (только главный процесс) ----------
def sync_gradebook(gb, paths: Paths, result: dict, timestamp: str | None) -> None:
    """Записать автобаллы работы в базу, как SaveAutoGrades: ручные баллы не трогаем."""
    import warnings

    with warnings.catch_warnings():  # nbgrader.add_submission шумит SAWarning о сессии SQLAlchemy — это не ошибка
        warnings.simplefilter("ignore")
        _sync_gradebook(gb, paths, result, timestamp)


def _sync_gradebook(gb, paths: Paths, result: dict, timestamp: str | None) -> None:
    from nbgrader.api import MissingEntry

    lab, student_id = paths.lab, result["student_id"]
    gb.update_or_create_student(student_id)
    try:
        gb.find_submission(lab, student_id)
    except MissingEntry:
        gb.add_submission(lab, student_id, timestamp=timestamp) if timestamp else gb.add_submission(lab, student_id)
    else:
        if timestamp:
            gb.update_or_create_submission(lab, student_id, timestamp=timestamp)
    for cell in result["cells"]:
        grade = gb.find_grade(cell["grade_id"], lab, lab, student_id)
        grade.auto_score = cell["score"]
        grade.needs_manual_grade = grade.manual_score is not None or grade.auto_score is None
        if result["status"] == "error" and not result["events"]:
            grade.needs_manual_grade = False
    for gid, answered in result.get("answered", {}).items():
        comment = gb.find_comment(gid, lab, lab, student_id)
        comment.auto_comment = None if answered else "Нет ответа."
    gb.db.commit()


def manual_grades(submission) -> dict:
    """Ручные баллы и комментарии преподавателя из базы: {grade_id: (балл или None, комментарий)}."""
    out = {}
    comments = {c.name: c.manual_comment or "" for c in submission.comments}  # auto_comment («Нет ответа.») — не его
    for grade in submission.grades:
        if grade.manual_score is not None or comments.get(grade.name):
            out[grade.name] = (grade.manual_score, comments.get(grade.name, ""))
    for name, text in comments.items():
        if text and name not in out:
            out[name] = (None, text)
    return out


# ---------- CSV и сводка ----------
def _fmt(value) -> str:
    return f"{float(value):g}"


def load_results(paths: Paths) -> list[dict]:
    results = []
    for file in sorted(paths.results.glob("*.json")) if paths.results.is_dir() else []:
        try:
            results.append(json.loads(file.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue  # недописанного файла не бывает (os.replace), но чужой мусор пропускаем
    return sorted(results, key=lambda r: r["student_id"])


def pending_manual(result: dict, manual: dict) -> float:
    """Сколько баллов письменных ответов ещё ждут преподавателя."""
    return sum(c["max_score"] for c in result["cells"]
               if c["kind"] == "manual" and c["score"] is None and manual.get(c["grade_id"], (None,))[0] is None)


def write_csv(paths: Paths, results: list[dict], manual: dict[str, dict]) -> Path:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in results:
        writer.writerow([r["student_id"], r["lab"], _fmt(r["score"]), _fmt(r["max_score"]),
                         _fmt(pending_manual(r, manual.get(r["student_id"], {}))), r["status"], r["message"]])
    atomic_write(paths.csv, buffer.getvalue())
    return paths.csv


def summary(paths: Paths, results: list[dict], graded_now: int, reused: int, warnings: list[str]) -> str:
    lines = []
    counts = {s: sum(r["status"] == s for r in results) for s in STATUSES}
    scores = [r["score"] for r in results]
    max_score = max((r["max_score"] for r in results), default=0)
    lines.append(f"{paths.lab}: {len(results)} работ — " + ", ".join(f"{s} {counts[s]}" for s in STATUSES)
                 + f". Проверено сейчас: {graded_now}, без изменений с прошлого раза: {reused}.")
    if scores:
        lines.append(f"Автобаллы: средний {statistics.mean(scores):.1f}, медиана {statistics.median(scores):g} "
                     f"из {_fmt(max_score)}; полный балл у {sum(s == max_score for s in scores)}.")
    unsandboxed = [r["student_id"] for r in results if not r.get("sandbox", True)]
    if unsandboxed:
        lines.append(f"ВНИМАНИЕ: без песочницы (--no-sandbox) проверено {len(unsandboxed)} работ — "
                     "их код исполнялся с вашими правами.")
    flagged = [r for r in results if r["message"]]
    if flagged:
        width = max(len(r["student_id"]) for r in flagged)
        lines.append("Работы с замечаниями:")
        for r in flagged:
            lines.append(f"  {r['student_id'].ljust(width)}  {r['status']:<7}  {_fmt(r['score'])}/{_fmt(r['max_score'])}  "
                         f"{r['message']}")
    for warning in warnings:
        lines.append(f"Пропущено при приёме: {warning}")
    lines.append(f"Оценки: {paths.csv.relative_to(paths.root)}; отзывы: "
                 f"{paths.feedback_dir.relative_to(paths.root)}/<student>/{paths.lab}/; письменные ответы — в formgrader "
                 "(autograde/README.md).")
    return "\n".join(lines)


# ---------- вся группа ----------
def _key(master, sub, limits: Limits, sandboxed: bool) -> str:
    h = hashlib.sha256()
    h.update(json.dumps({"version": VERSION, "master": master.digest, "limits": limits.__dict__, "sandbox": sandboxed,
                         "notes": sub.notes, "error": sub.error}, sort_keys=True).encode())
    h.update(hashlib.sha256(sub.data or b"").digest())
    return h.hexdigest()


def _import(paths: Paths, sub, source_root: Path) -> str:
    """Копия сдачи в autograde/submitted/ для nbgrader и formgrader; оригинал не трогаем."""
    target = paths.submitted(sub.student_id)
    stamp = sub.service.get("timestamp.txt", b"").decode("utf-8", "replace").strip() or _timestamp(sub.timestamp)
    inside = Path(os.path.realpath(source_root)) in [Path(os.path.realpath(paths.submitted_dir)),
                                                     *Path(os.path.realpath(paths.submitted_dir)).parents]
    if inside or (sub.source and Path(os.path.realpath(sub.source)).is_relative_to(os.path.realpath(paths.submitted_dir))):
        return stamp  # сдачи уже лежат в submitted/ (nbgrader collect): это и есть оригиналы
    if sub.data is not None:
        notebook = target / f"{paths.lab}.ipynb"
        if not notebook.is_file() or notebook.read_bytes() != sub.data:
            atomic_write(notebook, sub.data)
        if not (target / "timestamp.txt").is_file() or (target / "timestamp.txt").read_text().strip() != stamp:
            atomic_write(target / "timestamp.txt", stamp)
    return stamp


def run(args: argparse.Namespace) -> int:
    from .scoring import build_master, register

    paths = Paths.load(args.course, args.lab)
    if not args.submissions.exists():
        raise CourseError(f"Нет {args.submissions}: укажите папку <student_id>/{args.lab}/ или zip из LMS.")
    if args.workers < 1:
        raise CourseError("--workers должно быть не меньше 1.")
    limits = Limits(cell_timeout=args.cell_timeout, timeout=args.timeout, memory_mb=args.memory)
    sandboxed = not args.no_sandbox
    if sandboxed:
        problem = check_sandbox(paths.secrets())
        if problem:
            print(f"Проверка не начата: {problem}", file=sys.stderr)
            return 3
    else:
        print("ВНИМАНИЕ: --no-sandbox — код слушателей исполняется с вашими правами, с доступом к вашим файлам "
              "и сети. Это будет отмечено в отчёте.", file=sys.stderr)
    # nbgrader создаёт новую базу, вызывая программу alembic из PATH: пусть найдётся рядом с этим Python
    bindir = str(Path(sys.executable).parent)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    paths.work.mkdir(parents=True, exist_ok=True)
    lock = open(paths.work / ".lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise CourseError(f"Проверка {args.lab} уже идёт в другом процессе: дождитесь её конца.") from None
    shutil.rmtree(paths.work / "run", ignore_errors=True)  # остатки прерванного запуска
    master = build_master(paths.source_notebook, paths.lab, paths.config)
    try:
        register(master, paths.db_url, paths.course_id)
    except RuntimeError as exc:
        raise CourseError(f"Задание {args.lab} в базе оценок не совпадает с solutions/: {exc}. Если ячейки "
                          "задания поменялись после начала проверки, верните их или начните новую базу.") from exc
    from .submissions import DEFAULT_PATTERN, collect

    pattern = DEFAULT_PATTERN
    if "LmsZip" in paths.config and paths.config.LmsZip.get("student_id_pattern"):
        pattern = paths.config.LmsZip.student_id_pattern
    try:
        subs, warnings = collect(args.submissions, args.lab, pattern)
    except (OSError, ValueError) as exc:
        raise CourseError(f"Не прочитать сдачи {args.submissions}: {exc}") from exc
    if args.student:
        subs = [s for s in subs if s.student_id in set(args.student)]
        missing = sorted(set(args.student) - {s.student_id for s in subs})
        warnings += [f"{sid}: нет в {args.submissions}" for sid in missing]
    tasks = []
    reused = 0
    for sub in subs:
        stamp = _import(paths, sub, args.submissions)
        key = _key(master, sub, limits, sandboxed)
        old = paths.results / f"{sub.student_id}.json"
        if not args.force and old.is_file():
            try:
                if json.loads(old.read_text(encoding="utf-8")).get("key") == key:
                    reused += 1
                    continue
            except ValueError:
                pass
        tasks.append({"student_id": sub.student_id, "key": key, "data": sub.data, "error": sub.error,
                      "notes": sub.notes, "service": sub.service, "timestamp": stamp})
    graded = _run_pool(paths, master, limits, sandboxed, tasks, args.workers)
    results = load_results(paths)
    manual = _finish_gradebook(paths, master, results)
    write_csv(paths, results, manual)
    print(summary(paths, results, graded, reused, warnings))
    lock.close()
    return 0


def _run_pool(paths: Paths, master, limits: Limits, sandboxed: bool, tasks: list[dict], workers: int) -> int:
    """Раздать работы работникам; каждый готовый итог сразу записать в базу (единственный писатель)."""
    from nbgrader.api import Gradebook
    from tqdm import tqdm

    if not tasks:
        return 0
    # fork: работники получают уже загруженные nbformat, jupyter_client, nbconvert и шаблон отзыва
    # (spawn импортировал бы их в каждом работнике заново — секунды на старте)
    from . import execute, feedback  # noqa: F401 — предзагрузка для работников

    feedback._exporter()
    context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
    counter = context.Value("i", 0)
    done = 0
    pending = list(tasks)
    counts = {s: 0 for s in STATUSES}
    bar = tqdm(total=len(tasks), desc=paths.lab, unit="раб", file=sys.stderr, dynamic_ncols=True)
    with Gradebook(paths.db_url, paths.course_id) as gb:
        attempts = {}
        while pending:
            executor = ProcessPoolExecutor(max_workers=min(workers, len(pending)), mp_context=context,
                                           initializer=_init_worker,
                                           initargs=(master, paths, limits, sandboxed, counter))
            futures = {executor.submit(grade_one, task): task for task in pending}
            pending = []
            broken = False
            try:
                while futures:
                    finished, _ = wait(futures, return_when=FIRST_COMPLETED)
                    for future in finished:
                        task = futures.pop(future)
                        try:
                            result = future.result()
                        except BrokenProcessPool:
                            broken = True
                            attempts[task["student_id"]] = attempts.get(task["student_id"], 0) + 1
                            if attempts[task["student_id"]] < 2:
                                pending.append(task)
                                continue
                            result = _crash(paths, master, task, "процесс проверки упал дважды на этой работе")
                        except Exception as exc:  # ошибка самой проверки на одной работе: остальные идут дальше
                            result = _crash(paths, master, task, f"{type(exc).__name__}: {exc}")
                        sync_gradebook(gb, paths, result, task["timestamp"])
                        done += 1
                        counts[result["status"]] += 1
                        bar.set_postfix_str(" ".join(f"{s}={n}" for s, n in counts.items() if n), refresh=False)
                        bar.update(1)
                    if broken:
                        break
            except KeyboardInterrupt:
                bar.close()
                executor.shutdown(wait=False, cancel_futures=True)
                for process in list(getattr(executor, "_processes", {}).values()):
                    process.kill()
                print(f"\nПрервано: проверено {done} из {len(tasks)}. Запустите ту же команду — она продолжит.",
                      file=sys.stderr)
                raise SystemExit(130) from None
            if broken:
                pending += list(futures.values())
                for process in list(getattr(executor, "_processes", {}).values()):
                    process.kill()
                executor.shutdown(wait=False, cancel_futures=True)
            else:
                executor.shutdown(wait=True)
    bar.close()
    return done


def _crash(paths: Paths, master, task: dict, detail: str) -> dict:
    result = _empty_result(master, task["student_id"], task["key"],
                           f"внутренняя ошибка проверки ({detail}): это не вина работы — сообщите, пожалуйста, "
                           "разработчикам курса и запустите проверку снова", True)
    result["key"] = ""  # такую работу следующий запуск перепроверит
    atomic_write(paths.results / f"{task['student_id']}.json", json.dumps(result, ensure_ascii=False, indent=1,
                                                                          sort_keys=True))
    return result


def _finish_gradebook(paths: Paths, master, results: list[dict]) -> dict[str, dict]:
    """Догнать базу до итогов (после kill -9 могла отстать) и обновить отзывы, где преподаватель уже
    поставил ручные баллы. Вернуть ручные оценки по слушателям."""
    import nbformat
    from nbgrader.api import Gradebook, MissingEntry

    manual = {}
    with Gradebook(paths.db_url, paths.course_id) as gb:
        for result in results:
            student_id = result["student_id"]
            try:
                notebook = gb.find_submission_notebook(paths.lab, paths.lab, student_id)
                stored = {g.name: g.auto_score for g in notebook.grades}
            except MissingEntry:
                notebook, stored = None, None
            if stored != {c["grade_id"]: c["score"] for c in result["cells"]}:
                stamp_file = paths.submitted(student_id) / "timestamp.txt"
                stamp = stamp_file.read_text().strip() if stamp_file.is_file() else None
                sync_gradebook(gb, paths, result, stamp)
                notebook = gb.find_submission_notebook(paths.lab, paths.lab, student_id)
            manual[student_id] = manual_grades(notebook)
            if manual[student_id] and result.get("feedback_state") != _manual_state(manual[student_id]):
                notebook_path = paths.autograded(student_id) / f"{paths.lab}.ipynb"
                if notebook_path.is_file() and not (result["status"] == "error" and not result["events"]):
                    executed = nbformat.read(notebook_path, as_version=4)
                    stamp_file = paths.feedback(student_id) / "timestamp.txt"
                    task = {"timestamp": stamp_file.read_text() if stamp_file.is_file() else None, "service": {}}
                    write_outputs(paths, master, task, result, executed, manual[student_id])
    return manual

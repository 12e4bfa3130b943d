"""Проверить всю группу: ``python -m autograde grade LAB --submissions PATH``.

1. приём (intake.py): ноутбуки из папки или zip LMS; каждая версия — в историю сдач (history.py);
   id из сдачи сводится к слушателю по списку группы (roster.py);
2. для каждого слушателя — самая новая версия по времени сдачи LMS; проверяется то, что
   изменилось с прошлого раза (работа, задание, лимиты, срок): ключ итога — хеш всего этого;
3. работники (pool.py → worker.py) исполняют ноутбук: ядро слушателя и судья — каждый в своей
   песочнице; возвращают итог, очищенный ноутбук и отзыв;
4. главный процесс — единственный, кто пишет: проверенный ноутбук для formgrader, отзыв, базу
   оценок, итог (последним, атомарно), CSV и сводку.

Код выхода 0 — группа проверена, как бы ни написали слушатели; 2 — не работает сама проверка
(нет лабораторной, нет nbgrader_config.py, нет папки сдач); 3 — нет песочницы (см. --no-sandbox).

Пример:
    python -m autograde grade lab01_mini_rag --submissions ~/downloads/lab01.zip --workers 2
"""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import hashlib
import json
import os
import shutil
import sys
import zipfile
from datetime import datetime, timezone
from pathlib import Path

from . import gradebook, pool, roster, worker
from .course import ROOT, Course, CourseError, safe_key
from .history import History, releases
from .intake import collect
from .master import build_master, register
from .results import VERSION, Result, atomic_write, load, summary, write_csv
from .sandbox import check_sandbox

NAME = "grade"
HELP = "проверить все сдачи лабораторной в песочнице: баллы, отзывы, CSV, база оценок"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lab", metavar="LAB", help="лабораторная, например lab01_mini_rag")
    parser.add_argument("--submissions", type=Path, metavar="PATH",
                        help="папка <student_id>/<LAB>/<notebook>.ipynb или zip из LMS (без него — перепроверить "
                             "то, что уже принято: после исправления тестов или списка группы)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, metavar="N",
                        help="сколько работ проверять одновременно (по умолчанию — число ядер)")
    for flag, kind, help_text in (("--cell-timeout", float, "лимит на ячейку, секунд"),
                                  ("--timeout", float, "лимит на весь ноутбук, секунд"),
                                  ("--memory", int, "лимит памяти, МБ")):
        parser.add_argument(flag, type=kind, default=None, metavar="N",
                            help=f"{help_text} (по умолчанию — из nbgrader_config.py)")
    parser.add_argument("--no-sandbox", action="store_true",
                        help="проверять без bubblewrap (небезопасно: код слушателей получит ваши файлы и сеть)")
    parser.add_argument("--force", action="store_true", help="перепроверить и те работы, что не менялись")
    parser.add_argument("--student", action="append", default=[], metavar="ID",
                        help="проверить только этих слушателей (можно повторять)")
    parser.add_argument("--course", type=Path, default=ROOT, metavar="ПАПКА",
                        help="корень каталога курса с nbgrader_config.py (по умолчанию этот репозиторий)")


def _limits(course: Course, args):
    chosen = {"cell_timeout": args.cell_timeout, "timeout": args.timeout, "memory_mb": args.memory}
    return dataclasses.replace(course.settings.limits, **{k: v for k, v in chosen.items() if v is not None})


def _nbgrader_time(iso: str) -> str | None:
    """Время сдачи в формате timestamp.txt nbgrader (UTC) или None, если LMS его не дала."""
    if not iso:
        return None
    return datetime.fromisoformat(iso).astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f UTC")


def _task_key(ctx: worker.Context, task: worker.Task) -> str:
    h = hashlib.sha256()
    h.update(json.dumps({"version": VERSION, "master": ctx.master.digest, "limits": dataclasses.asdict(ctx.limits),
                         "sandbox": ctx.sandboxed, "notes": task.notes, "error": task.error, "display": task.display_id,
                         "time": task.submitted_at, "deadline": task.deadline, "late": [ctx.late_penalty,
                         ctx.late_penalty_per_day], "released": ctx.released_tests}, sort_keys=True).encode())
    h.update(hashlib.sha256(task.data or b"").digest())
    return h.hexdigest()


def intake(course, lab, path: Path | None, group) -> tuple[dict[str, str], set[str], list[str], dict[str, list[str]]]:
    """Принять сдачи в историю: (ключ → имя для показа, несдавшие, предупреждения, замечания по ключам)."""
    history, names, missing, notes = History(lab.history), {}, set(), {}
    if path is None:
        return names, missing, [], notes
    if not path.exists():
        raise CourseError(f"Нет {path}: укажите папку <student_id>/{lab.name}/ или zip из LMS.")
    try:
        subs, warnings = collect(path, lab.name, course.settings.id_pattern)
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise CourseError(f"Не прочитать сдачи {path}: {exc}") from exc
    for sub in subs:
        student_id, known = group.resolve(sub.student_id)
        key = safe_key(student_id)
        names[key] = group.display(student_id) if known else student_id
        if group and not known:
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


def run(args: argparse.Namespace) -> int:
    course = Course.load(args.course)
    lab = course.lab(args.lab)
    if args.workers < 1:
        raise CourseError("--workers должно быть не меньше 1.")
    sandboxed = not args.no_sandbox
    problem = check_sandbox(course.secrets()) if sandboxed else None
    if problem:
        print(f"Проверка не начата: {problem}", file=sys.stderr)
        return 3
    if not sandboxed:
        print("ВНИМАНИЕ: --no-sandbox — код слушателей исполняется с вашими правами, с доступом к вашим файлам "
              "и сети. Это будет отмечено в отчёте.", file=sys.stderr)
    lab.work.mkdir(parents=True, exist_ok=True)
    lock = open(lab.work / ".lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise CourseError(f"Проверка {args.lab} уже идёт в другом процессе: дождитесь её конца.") from None
    master = build_master(lab.source_notebook, lab.name, course.config)
    try:
        register(master, course.db_url, course.course_id)
    except RuntimeError as exc:
        raise CourseError(f"Задание {args.lab} в базе оценок не совпадает с solutions/: {exc}") from exc
    settings = course.settings
    ctx = worker.Context(master, _limits(course, args), sandboxed, settings.kernel_args, lab.release_files(),
                         course.secrets(), lab.hide_reference, settings.late_penalty, settings.late_penalty_per_day,
                         releases(lab.work / "releases.json", master))
    group = roster.load(course)
    names, missing, warnings, notes = intake(course, lab, args.submissions, group)
    history = History(lab.history)
    keys = set(history.keys()) | missing | {safe_key(s["id"]) for s in group.students}
    display = {safe_key(s["id"]): s.get("name") or s["id"] for s in group.students}
    if args.student:
        wanted = {safe_key(group.resolve(s)[0]) for s in args.student}
        warnings += [f"{s}: нет такого слушателя" for s in args.student if safe_key(group.resolve(s)[0]) not in keys]
        keys &= wanted
    tasks, quiet, reused = [], [], 0
    for key in sorted(keys):
        newest = history.newest(key)
        name = names.get(key) or display.get(key) or (newest.display_id if newest else key)
        if newest is None:
            quiet.append(worker.Task(key, name, "", None, None, notes.get(key, []), "", ""))
            continue
        deadline = settings.deadline(group.resolve(name)[0], lab.name) or settings.deadline(key, lab.name)
        task = worker.Task(key, name, "", history.data(key, newest), newest.error, newest.notes + notes.get(key, []),
                           newest.submitted_at, deadline.isoformat() if deadline else "")
        task.key = _task_key(ctx, task)
        old = lab.results / f"{key}.json"
        if not args.force and old.is_file() and Result.from_json(old.read_text(encoding="utf-8")).key == task.key:
            reused += 1
        else:
            tasks.append(task)
    for task in quiet:  # не сдал эту лабораторную: строка «не сдано», без отзыва
        outcome = worker.unexecuted(task, ctx, "not_submitted", "; ".join(task.notes + ["не сдано"]))
        _write(course, lab, outcome, None)
    graded = _grade_all(course, lab, ctx, tasks, args.workers)
    results = load(lab.results)
    manual = _finish(course, lab, master, results)
    write_csv(lab.csv, results, manual)
    print(summary(lab.name, results, graded, reused, warnings, str(lab.csv.relative_to(course.root)),
                  f"{lab.course.feedback_dir.relative_to(course.root)}/<ключ слушателя>/{lab.name}/"))
    lock.close()
    return 0


def _grade_all(course, lab, ctx, tasks, workers: int) -> int:
    from nbgrader.api import Gradebook
    from tqdm import tqdm

    done, counts = 0, {}
    bar = tqdm(total=len(tasks), desc=lab.name, unit="раб", file=sys.stderr, dynamic_ncols=True, disable=not tasks)
    try:
        with Gradebook(course.db_url, course.course_id) as gb:
            for task, outcome in pool.outcomes(tasks, ctx, workers):
                if isinstance(outcome, str):  # сбой самой проверки: не вина работы, следующий запуск повторит
                    outcome = worker.unexecuted(task, ctx, "error", f"внутренняя ошибка проверки ({outcome}): это не "
                                                "вина работы — запустите проверку снова")
                    outcome.result.key = ""
                _write(course, lab, outcome, gb)
                done += 1
                counts[outcome.result.status] = counts.get(outcome.result.status, 0) + 1
                bar.set_postfix_str(" ".join(f"{s}={n}" for s, n in sorted(counts.items())), refresh=False)
                bar.update(1)
    except KeyboardInterrupt:
        bar.close()
        print(f"\nПрервано: проверено {done} из {len(tasks)}. Запустите ту же команду — она продолжит.", file=sys.stderr)
        raise SystemExit(130) from None
    bar.close()
    return done


def _write(course, lab, outcome, gb) -> None:
    """Проверенный ноутбук, отзыв, база оценок и, последним, итог — каждый атомарно."""
    result = outcome.result
    stamp = _nbgrader_time(result.submitted_at)
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


def _finish(course, lab, master, results: list[Result]) -> dict[str, dict]:
    """Догнать базу до итогов (после kill -9 могла отстать), обновить отзывы с ручными баллами,
    добавить замечания о переоткрытых письменных ответах. Вернуть ручные оценки по слушателям."""
    import nbformat
    from nbgrader.api import Gradebook, MissingEntry

    from . import feedback

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
                gradebook.sync(gb, lab.name, result, _nbgrader_time(result.submitted_at), lab.work / "manual")
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

"""Проверить всю группу: ``python -m autograde grade LAB --submissions PATH``.

Стадии по порядку:
1. план (intake/plan.py): ноутбуки из папки или zip LMS — в историю сдач (intake/submissions.py,
   intake/history.py), id из сдачи сводится к слушателю по списку группы (intake/roster.py); для
   каждого слушателя — самая новая версия по времени сдачи LMS; проверяется то, что изменилось с
   прошлого раза (работа, задание, лимиты, срок): ключ итога — хеш всего этого;
2. работники (run/pool.py на этой машине или run/cluster.py на кластере Dask → run/worker.py) исполняют
   ноутбук: ядро слушателя и судья — каждый в своей песочнице; возвращают итог, очищенный
   ноутбук и отзыв;
3. запись (store/save.py: Recorder) по мере прихода — только главный процесс: проверенный ноутбук для
   formgrader, отзыв, база оценок, итог (последним, атомарно); полоса прогресса и Ctrl+C — здесь (_record);
4. конец (store/save.py: finish): база догоняет итоги, отзывы с ручными баллами, CSV; затем сводка.

Код выхода 0 — группа проверена, как бы ни написали слушатели; 2 — не работает сама проверка
(нет лабораторной, нет nbgrader_config.py, нет папки сдач, недоступен кластер); 3 — нет песочницы
(см. --no-sandbox; с --cluster её проверяет каждый работник).

Пример:
    python -m autograde grade lab01_mini_rag --submissions ~/downloads/lab01.zip --workers 2
    python -m autograde grade lab01_mini_rag --submissions ~/downloads/lab01.zip --cluster tcp://head:8786
"""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import functools
import os
import sys
from pathlib import Path

from autograde.course import Course, CourseError, add_course_option
from autograde.intake.history import releases
from autograde.intake.plan import Worklist, plan
from autograde.lab.master import build_master
from autograde.lab.task import Context
from autograde.run import pool
from autograde.run.worker import unexecuted
from autograde.sandbox import check_sandbox
from autograde.store import save
from autograde.store.gradebook import register
from autograde.store.results import summary

NAME = "grade"
HELP = "проверить все сдачи лабораторной в песочнице: баллы, отзывы, CSV, база оценок"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lab", metavar="LAB", help="лабораторная, например lab01_mini_rag")
    parser.add_argument("--submissions", type=Path, metavar="PATH",
                        help="папка <student_id>/<LAB>/<notebook>.ipynb или zip из LMS (без него — перепроверить "
                             "то, что уже принято: после исправления тестов или списка группы)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, metavar="N",
                        help="сколько работ проверять одновременно (по умолчанию — число ядер)")
    parser.add_argument("--cluster", metavar="АДРЕС",
                        help="проверять на кластере Dask: tcp://host:8786 (запущенный планировщик) или local:N "
                             "(N процессов на этой машине); --workers тогда не нужен (src/autograde/README.md)")
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
    add_course_option(parser)


def _limits(course: Course, args):
    chosen = {"cell_timeout": args.cell_timeout, "timeout": args.timeout, "memory_mb": args.memory}
    return dataclasses.replace(course.settings.limits, **{k: v for k, v in chosen.items() if v is not None})


def run(args: argparse.Namespace) -> int:
    course = Course.load(args.course)
    lab = course.lab(args.lab)
    if args.workers < 1:
        raise CourseError("--workers должно быть не меньше 1.")
    sandboxed = not args.no_sandbox
    problem = check_sandbox(course.secrets()) if sandboxed and not args.cluster else None  # кластер: у работников
    if problem:
        print(f"Проверка не начата: {problem}", file=sys.stderr)
        return 3
    if not sandboxed:
        print("ВНИМАНИЕ: --no-sandbox — код слушателей исполняется с вашими правами, с доступом к вашим файлам "
              "и сети. Это будет отмечено в отчёте.", file=sys.stderr)
    engine = None
    if args.cluster:
        from autograde.run.cluster import Cluster

        engine = Cluster(args.cluster)  # недоступен — CourseError, код 2, до всякой записи
    try:
        return _run(args, course, lab, sandboxed, engine)
    finally:
        if engine is not None:
            engine.close()


def _run(args, course, lab, sandboxed: bool, engine) -> int:
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
    ctx = Context(master, _limits(course, args), sandboxed, settings.kernel_args, lab.release_files(),
                  course.secrets(), lab.hide_reference, settings.late_penalty, settings.late_penalty_per_day,
                  releases(lab.releases, master))
    todo = plan(course, lab, ctx, args.submissions, args.student, args.force)
    if engine is None:
        outcomes, refused = functools.partial(pool.outcomes, workers=args.workers), ()
    else:
        outcomes, refused = engine.outcomes, engine.Refused
    try:
        graded = _record(course, lab, ctx, todo, outcomes)
    except refused as exc:  # работник кластера не может проверять: нет песочницы (код 3) или не то окружение (2)
        print(f"Проверка остановлена, готовое сохранено: {exc}", file=sys.stderr)
        return exc.code
    results = save.finish(course, lab, master)
    print(summary(lab.name, results, graded, todo.reused, todo.warnings, str(lab.csv.relative_to(course.root)),
                  f"{lab.course.feedback_dir.relative_to(course.root)}/<ключ слушателя>/{lab.name}/"))
    if engine is not None:
        print(engine.report())
    lock.close()
    return 0


def _record(course, lab, ctx: Context, todo: Worklist, outcomes) -> int:
    """Проверить работы ``todo`` (``outcomes`` — пул или кластер) и записать итоги пачками, с ними — строки
    «не сдано». Вернуть, сколько работ проверено; по Ctrl+C записать готовое и выйти с кодом 130."""
    from tqdm import tqdm

    from autograde.store.gradebook import open_gradebook

    done, counts = 0, {}
    bar = tqdm(total=len(todo.tasks), desc=lab.name, unit="раб", file=sys.stderr, dynamic_ncols=True,
               disable=not todo.tasks)
    try:
        with open_gradebook(course.db_url, course.course_id) as gb, save.Recorder(lab, gb) as recorder:
            for task in todo.quiet:  # не сдал эту лабораторную: строка «не сдано», без отзыва
                recorder.add(unexecuted(task, ctx, "not_submitted", "; ".join(task.notes + ["не сдано"])))
            for task, outcome in outcomes(todo.tasks, ctx):
                if isinstance(outcome, str):  # сбой самой проверки: не вина работы, следующий запуск повторит
                    outcome = unexecuted(task, ctx, "error", f"внутренняя ошибка проверки ({outcome}): это не вина "
                                         "работы — запустите проверку снова")
                    outcome.result.key = ""
                recorder.add(outcome)
                done += 1
                counts[outcome.result.status] = counts.get(outcome.result.status, 0) + 1
                bar.set_postfix_str(" ".join(f"{s}={n}" for s, n in sorted(counts.items())), refresh=False)
                bar.update(1)
    except KeyboardInterrupt:
        bar.close()
        print(f"\nПрервано: проверено {done} из {len(todo.tasks)}. Запустите ту же команду — она продолжит.",
              file=sys.stderr)
        raise SystemExit(130) from None
    finally:
        bar.close()
    return done

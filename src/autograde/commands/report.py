"""Сводка по лабораторной: ``python -m autograde report LAB``.

Читает итоги проверки (autograde/work/<LAB>/results/, их пишет ``grade``) и ручные оценки из базы,
печатает таблицу по слушателям и итог по группе (несданные — отдельно, в средние не входят),
сохраняет гистограмму автобаллов в autograde/grades/<LAB>.png. Ничего не перепроверяет.

Пример:
    python -m autograde report lab01_mini_rag
"""

from __future__ import annotations

import argparse
from pathlib import Path

from autograde.course import Course, CourseError, Lab, add_course_option, safe_key
from autograde.intake import roster
from autograde.lab.result import Result, fmt
from autograde.render.sanitize import mixed_script, printable
from autograde.store.results import load, statistics_line, works

NAME = "report"
HELP = "таблица и итог по проверенной лабораторной, гистограмма баллов (PNG)"
MESSAGE_WIDTH = 90


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lab", metavar="LAB", help="лабораторная, например lab01_mini_rag")
    add_course_option(parser)


def manual_scores(course: Course, lab: str) -> dict[str, dict]:
    """Ручные оценки из базы: {ключ слушателя: {grade_id: (балл, комментарий)}}."""
    from nbgrader.api import MissingEntry

    from autograde.store.gradebook import open_gradebook, stored

    with open_gradebook(course.db_url, course.course_id) as gb:
        try:
            return {student: manual for student, (_, manual) in stored(gb, lab).items()}
        except MissingEntry:  # задания нет в базе: ничего не проверяли
            return {}


def table(results: list[Result], manual: dict) -> str:
    names = [printable(r.display_id) for r in results]
    width = min(40, max([len("слушатель")] + [len(n) for n in names]))
    lines = [f"{'слушатель'.ljust(width)}  {'баллы':>11}  {'вручную':>7}  {'статус':<13}  сообщение"]
    for name, r in zip(names, results):
        message = printable(r.message)
        message = message if len(message) <= MESSAGE_WIDTH else message[: MESSAGE_WIDTH - 1] + "…"
        lines.append(f"{name.ljust(width)}  {fmt(r.score):>5} / {fmt(r.max_score):<3}  "
                     f"{fmt(r.pending_manual(manual.get(r.student, {}))):>7}  {r.status:<13}  {message}")
    return "\n".join(lines)


def histogram(results: list[Result], lab: str, path: Path) -> Path:
    """Гистограмма автобаллов сданных работ: по столбику на целый балл."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    counted = [r for r in results if r.counted]
    top = max(r.max_score for r in counted)
    fig, ax = plt.subplots(figsize=(7, 4), dpi=120)
    ax.hist([r.score for r in counted], bins=[b - 0.5 for b in range(int(top) + 2)], color="#4c72b0", edgecolor="white")
    ax.set_xlabel(f"автобаллы (из {fmt(top)})")
    ax.set_ylabel("число работ")
    ax.set_title(f"{lab}: распределение автобаллов, {works(len(counted))}")
    ax.set_xlim(-0.5, top + 0.5)
    ax.yaxis.get_major_locator().set_params(integer=True)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def run(args: argparse.Namespace) -> int:
    course = Course.load(args.course)
    lab = course.lab(args.lab)
    results = load(lab.results)
    if not results:
        raise CourseError(f"Итогов {args.lab} нет: сначала python -m autograde grade {args.lab} --submissions ПАПКА.")
    manual = manual_scores(course, args.lab)
    print(table(results, manual))
    print()
    print(statistics_line(results) or "Сданных работ нет.")
    pending = sum(r.pending_manual(manual.get(r.student, {})) > 0 for r in results if r.counted)
    print(f"Письменные ответы ждут проверки: {pending}.")
    missing = [printable(r.display_id) for r in results if not r.counted]
    graded = {r.student for r in results}
    listed = [s.get("name") or s["id"] for s in roster.load(course).students if safe_key(s["id"]) not in graded]
    if missing or listed:
        print("Не сдали: " + ", ".join(missing + [printable(n) for n in listed]) + ".")
    late = [printable(r.display_id) for r in results if r.late_hours > 0]
    if late:
        print("Сдали после срока: " + ", ".join(late) + ".")
    plain = [printable(r.display_id) for r in results if not r.sandbox and r.counted]
    if plain:
        print(f"ВНИМАНИЕ: без песочницы (--no-sandbox) проверены: {', '.join(plain)}.")
    lookalike = [printable(repr(r.display_id)) for r in results if mixed_script(r.display_id)]
    if lookalike:
        print("Похожие на подделку id (буквы разных алфавитов в одном слове): " + ", ".join(lookalike))
    if any(r.counted for r in results):
        png = histogram(results, args.lab, Lab(course, args.lab).histogram)
        print(f"Гистограмма: {png.relative_to(course.root)}")
    return 0

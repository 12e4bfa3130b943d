"""Итоги группы на диске: файл итога, CSV группы и сводка — общие для ``grade``, ``report`` и ``export``.

Итог и CSV пишутся атомарно (``atomic.atomic_write``). CSV собирается из итогов и всегда одинаков
при одинаковых итогах.
Всё, что пришло от слушателя (id, имена файлов, сообщения), в CSV и в терминал попадает через
``printable``: управляющие символы — кодами. Все CSV autograde (оценки группы, ``export``) пишет
один ``csv_text``: текст, который начинается с ``=``, ``+``, ``-``, ``@``, табуляции или CR, получает
впереди апостроф (правило OWASP против формул в таблицах), числа autograde остаются числами.
Модуль не исполняет код и не трогает базу оценок.
"""

from __future__ import annotations

import csv
import io
import statistics
from pathlib import Path

from autograde.lab.result import VERSION, Result, fmt
from autograde.lab.verdict import STATUSES
from autograde.render.sanitize import mixed_script, printable
from autograde.store.atomic import atomic_write
from minirag import plural

FORMULA_START = ("=", "+", "-", "@", "\t", "\r")  # с этого таблица или LMS начнёт формулу
CSV_COLUMNS = ["student_id", "lab", "score", "max_score", "manual_pending", "status", "late", "message"]


def load(folder: Path) -> list[Result]:
    """Все итоги лабораторной (autograde/work/<lab>/results/*.json), по ключу слушателя."""
    results = []
    for file in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            result = Result.from_json(file.read_text(encoding="utf-8"))
        except (OSError, ValueError, TypeError):
            continue  # недописанного файла не бывает (os.replace), но чужой мусор пропускаем
        if result.version == VERSION:
            results.append(result)
    return sorted(results, key=lambda r: (r.display_id, r.student))


def spreadsheet_cell(value) -> str:
    """Ячейка CSV, которую таблица или LMS не примет за формулу.

    Число (int/float, его посчитал autograde) пишется числом; всякий текст — через ``printable`` и с
    апострофом впереди, если начинается с ``=``, ``+``, ``-``, ``@``, табуляции или CR — даже «-5»:
    текст, похожий на число, пришёл от слушателя. Пример: ``spreadsheet_cell("=1+1")`` → ``"'=1+1"``.
    """
    if value is None:
        return ""
    if isinstance(value, (int, float)):
        return fmt(value)
    text = printable(value)
    return "'" + text if text.startswith(FORMULA_START) else text


def csv_text(rows) -> str:
    """Единственный писатель CSV в autograde: каждая ячейка — через ``spreadsheet_cell``."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows([spreadsheet_cell(v) for v in row] for row in rows)
    return buffer.getvalue()


def write_csv(path: Path, results: list[Result], manual: dict[str, dict]) -> Path:
    rows = [[r.display_id, r.lab, r.score, r.max_score, r.pending_manual(manual.get(r.student, {})), r.status,
             round(r.late_hours, 2), r.message] for r in results]
    atomic_write(path, csv_text([CSV_COLUMNS, *rows]))
    return path


def works(n: int) -> str:
    return plural(n, "работа", "работы", "работ")


def statistics_line(results: list[Result]) -> str:
    counted = [r for r in results if r.counted]
    if not counted:
        return ""
    scores = [r.score for r in counted]
    top = max(r.max_score for r in counted)
    full = sum(s == top for s in scores)
    return (f"Автобаллы ({works(len(counted))}, без несданных): средний {statistics.mean(scores):.1f}, "
            f"медиана {statistics.median(scores):g} из {fmt(top)}; с полным баллом — {full}.")


def summary(lab: str, results: list[Result], graded_now: int, reused: int, warnings: list[str],
            csv_path: str, feedback_hint: str) -> str:
    """Сводка по группе для терминала: статусы, баллы, работы с замечаниями, пропущенное при приёме."""
    counts = {s: sum(r.status == s for r in results) for s in STATUSES}
    lines = [f"{lab}: в таблице {works(len(results))} — " + ", ".join(f"{s} {counts[s]}" for s in STATUSES if counts[s])
             + f". В этом запуске проверено: {graded_now}, взято готовым: {reused}."]
    stats = statistics_line(results)
    if stats:
        lines.append(stats)
    unsandboxed = [r for r in results if not r.sandbox and r.counted]
    if unsandboxed:
        lines.append(f"ВНИМАНИЕ: без песочницы (--no-sandbox) проверено {works(len(unsandboxed))} — их код исполнялся "
                     "с вашими правами.")
    late = [r for r in results if r.late_hours > 0]
    if late:
        lines.append(f"Сдано после срока: {works(len(late))} (колонка late — часы опоздания).")
    lookalike = [r for r in results if mixed_script(r.display_id)]
    if lookalike:
        lines.append("Похожие на подделку id (буквы разных алфавитов в одном слове): "
                     + ", ".join(printable(repr(r.display_id)) for r in lookalike))
    flagged = [r for r in results if r.message and r.status != "not_submitted"]
    if flagged:
        width = min(40, max(len(printable(r.display_id)) for r in flagged))
        lines.append("Работы с замечаниями:")
        for r in flagged:
            lines.append(f"  {printable(r.display_id).ljust(width)}  {r.status:<7}  {fmt(r.score)}/{fmt(r.max_score)}  "
                         f"{printable(r.message)}")
    missing = [r for r in results if r.status == "not_submitted"]
    if missing:
        lines.append("Не сдали: " + ", ".join(printable(r.display_id) for r in missing))
    for warning in warnings:
        lines.append(f"Пропущено при приёме: {printable(warning)}")
    lines.append(f"Оценки: {csv_path}; отзывы: {feedback_hint}; письменные ответы — в formgrader (src/autograde/README.md).")
    return "\n".join(lines)

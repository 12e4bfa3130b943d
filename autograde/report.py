"""Сводка по лабораторной: ``python -m autograde report LAB``.

Читает autograde/grades/<LAB>.csv (его пишет ``grade``), печатает таблицу по слушателям и
итог по группе и сохраняет гистограмму автобаллов в autograde/grades/<LAB>.png. Ничего не
перепроверяет и базу оценок не трогает.

Пример:
    python -m autograde report lab01_mini_rag
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
from pathlib import Path

from .course import ROOT, CourseError

NAME = "report"
HELP = "таблица и итог по проверенной лабораторной, гистограмма баллов (PNG)"
MESSAGE_WIDTH = 90


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lab", metavar="LAB", help="лабораторная, например lab01_mini_rag")
    parser.add_argument("--course", type=Path, default=ROOT, metavar="ПАПКА",
                        help="корень каталога курса (по умолчанию этот репозиторий)")


def read_rows(root: Path, lab: str) -> list[dict]:
    path = Path(root) / "autograde" / "grades" / f"{lab}.csv"
    if not path.is_file():
        raise CourseError(f"Нет {path}: сначала проверьте работы — python -m autograde grade {lab} --submissions ПАПКА.")
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    for row in rows:
        for key in ("score", "max_score", "manual_pending"):
            row[key] = float(row[key])
    return rows


def unsandboxed(root: Path, lab: str) -> list[str]:
    """Кого проверяли без песочницы (--no-sandbox) — по итогам в autograde/work/<LAB>/results/."""
    folder = Path(root) / "autograde" / "work" / lab / "results"
    names = []
    for file in sorted(folder.glob("*.json")) if folder.is_dir() else []:
        try:
            if not json.loads(file.read_text(encoding="utf-8")).get("sandbox", True):
                names.append(file.stem)
        except ValueError:
            continue
    return names


def table(rows: list[dict]) -> str:
    width = max([len("слушатель")] + [len(r["student_id"]) for r in rows])
    lines = [f"{'слушатель'.ljust(width)}  {'баллы':>11}  {'вручную':>7}  {'статус':<7}  сообщение"]
    for r in rows:
        message = r["message"] if len(r["message"]) <= MESSAGE_WIDTH else r["message"][: MESSAGE_WIDTH - 1] + "…"
        lines.append(f"{r['student_id'].ljust(width)}  {r['score']:>5g} / {r['max_score']:<3g}  "
                     f"{r['manual_pending']:>7g}  {r['status']:<7}  {message}")
    return "\n".join(lines)


def totals(rows: list[dict], lab: str) -> str:
    scores = [r["score"] for r in rows]
    top = max(r["max_score"] for r in rows)
    counts = {s: sum(r["status"] == s for r in rows) for s in ("ok", "error", "timeout", "killed")}
    return (f"{lab}: {len(rows)} работ; " + ", ".join(f"{s} {n}" for s, n in counts.items())
            + f". Автобаллы из {top:g}: средний {statistics.mean(scores):.1f}, медиана {statistics.median(scores):g}, "
            f"минимум {min(scores):g}, максимум {max(scores):g}. Письменные ответы ждут проверки у "
            f"{sum(r['manual_pending'] > 0 for r in rows)}.")


def histogram(rows: list[dict], lab: str, path: Path) -> Path:
    """Гистограмма автобаллов: по столбику на целый балл."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    top = max(r["max_score"] for r in rows)
    fig, ax = plt.subplots(figsize=(7, 4), dpi=120)
    bins = [b - 0.5 for b in range(int(top) + 2)]
    ax.hist([r["score"] for r in rows], bins=bins, color="#4c72b0", edgecolor="white")
    ax.set_xlabel(f"автобаллы (из {top:g})")
    ax.set_ylabel("число работ")
    ax.set_title(f"{lab}: распределение автобаллов, {len(rows)} работ")
    ax.set_xlim(-0.5, top + 0.5)
    ax.yaxis.get_major_locator().set_params(integer=True)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path


def run(args: argparse.Namespace) -> int:
    root = Path(args.course).resolve()
    rows = read_rows(root, args.lab)
    if not rows:
        raise CourseError(f"В autograde/grades/{args.lab}.csv нет ни одной работы.")
    print(table(rows))
    print()
    print(totals(rows, args.lab))
    plain = unsandboxed(root, args.lab)
    if plain:
        print(f"ВНИМАНИЕ: без песочницы (--no-sandbox) проверены: {', '.join(plain)}.")
    png = histogram(rows, args.lab, root / "autograde" / "grades" / f"{args.lab}.png")
    print(f"Гистограмма: {png.relative_to(root)}")
    return 0

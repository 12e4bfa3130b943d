"""Самопроверка лабораторной: исполнить копию ноутбука и рассказать по-русски, что с заданиями.

Кнопка Validate и ``nbgrader validate`` выходят с кодом 0, даже когда тесты падают. Эта
команда — нет: она исполняет **копию** ноутбука в чистом ядре (выходам, сохранённым в файле,
не верит), проходит по ячейкам с тестами nbgrader и печатает для каждой:

    [пройдено]       тест прошёл — и сколько баллов он стоит;
    [ошибка]         тест упал — и сообщение теста: что не так и как исправить;
    [не сделано]     в решении ещё стоит заготовка raise NotImplementedError() или
                     письменный ответ — нетронутая заготовка «ТВОЙ ОТВЕТ ЗДЕСЬ»;
    [скрыто]         скрытые тесты: в выданной версии их нет, их запустит проверка преподавателя;
    [вручную]        письменный ответ: баллы за содержание ставит преподаватель.

Код выхода: 0 — все видимые тесты пройдены; 1 — есть ошибки или несделанные задания;
2 — ноутбук не найден, не читается или ядро упало.

Пример:
    python -m autograde check labs/lab01_mini_rag/lab01_mini_rag.ipynb
"""

from __future__ import annotations

import argparse
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .course import ROOT, STUB_MARK, CourseError, load_config

NAME = "check"
HELP = "исполнить копию ноутбука лабораторной и вывести итог по заданиям (код выхода не 0 при ошибках)"

DEFAULT_TIMEOUT = 120
WRITTEN = "письменный ответ"
MESSAGE_LIMIT = 700  # столько символов сообщения теста печатаем, остальное обрезаем

LABELS = {
    "passed": "[пройдено]",
    "failed": "[ошибка]",
    "todo": "[не сделано]",
    "hidden": "[скрыто]",
    "manual": "[вручную]",
}


@dataclass
class CheckResult:
    """Итог одной ячейки с тестами (или письменного ответа)."""

    title: str
    status: str  # ключ LABELS
    points: float
    max_points: float
    message: str = ""


@dataclass
class Report:
    notebook: Path
    results: list[CheckResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(r.status in ("failed", "todo") for r in self.results)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("notebook", type=Path, metavar="NOTEBOOK", help="ноутбук лабораторной, например labs/lab01_mini_rag/lab01_mini_rag.ipynb")
    parser.add_argument("--timeout", type=int, default=None, metavar="СЕКУНД",
                        help=f"лимит на одну ячейку (по умолчанию Execute.timeout из nbgrader_config.py или {DEFAULT_TIMEOUT})")


# ---------- исполнение ----------
def _settings(root: Path) -> tuple[int, str, list[str]]:
    """Лимит на ячейку, шаблон безобидного stderr и аргументы ядра — из nbgrader_config.py, как у autograde."""
    try:
        config = load_config(root)
    except CourseError:
        return DEFAULT_TIMEOUT, "", []
    execute = config.Execute if "Execute" in config else {}
    pattern = ""
    if "IgnorePattern" in config and config.IgnorePattern.get("enabled", False):
        pattern = config.IgnorePattern.get("pattern", "")
    return int(execute.get("timeout", DEFAULT_TIMEOUT)), pattern, list(execute.get("extra_arguments", []))


def execute_copy(path: Path, timeout: int, extra_arguments: list[str] | None = None):
    """Исполнить копию ноутбука (рядом — копии файлов его папки) и вернуть исполненный NotebookNode."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    with tempfile.TemporaryDirectory(prefix="autograde-check-") as tmp:
        work = Path(tmp)
        for sibling in path.parent.iterdir():  # данные лабораторной, если они лежат рядом
            if sibling.is_file() and sibling.stat().st_size < 50_000_000:
                shutil.copy2(sibling, work / sibling.name)
        copy = work / path.name
        nb = nbformat.read(copy, as_version=4)
        for cell in nb.cells:  # сохранённым выходам не верим
            if cell.cell_type == "code":
                cell.outputs = []
                cell.execution_count = None
        client = NotebookClient(
            nb, timeout=timeout, kernel_name="python3", allow_errors=True, interrupt_on_timeout=True,
            error_on_timeout={"ename": "CellTimeoutError", "evalue": f"ячейка не уложилась в {timeout} с",
                              "traceback": [f"CellTimeoutError: ячейка не уложилась в {timeout} с"]},
            resources={"metadata": {"path": str(work)}}, extra_arguments=list(extra_arguments or []),
        )
        try:
            client.execute()
        except DeadKernelError as exc:
            raise CourseError(f"Ядро Python упало во время исполнения {path.name} ({exc}). "
                              "Проверь, не съедает ли код всю память, и запусти проверку снова.") from exc
    return nb


# ---------- разбор ----------
def _nbgrader(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def _source(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def _errors(cell, ignore: str) -> list[tuple[str, str]]:
    """Ошибки ячейки: (ename, evalue) для исключений и ("stderr", текст) для небезобидного stderr."""
    found = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            found.append((output.get("ename", "Error"), output.get("evalue", "")))
        elif output.get("output_type") == "stream" and output.get("name") == "stderr":
            text = output.get("text", "")
            if not (ignore and re.search(ignore, text)):
                found.append(("stderr", text.strip()))
    return found


def _title(cell, fallback: str) -> str:
    for line in _source(cell).splitlines():
        line = line.strip()
        if line.startswith("#") and "BEGIN" not in line:
            title = line.lstrip("#").strip()
            return title.split(":", 1)[1].strip() if title.lower().startswith("проверка:") else title
        if line:
            break
    return fallback


def _has_code(cell) -> bool:
    return any(line.strip() and not line.strip().startswith("#") for line in _source(cell).splitlines())


def _points(value) -> float:
    try:
        return float(value or 0)
    except (TypeError, ValueError):
        return 0.0


def _message(ename: str, evalue: str) -> str:
    text = evalue.strip() if ename == "AssertionError" else f"{ename}: {evalue.strip()}"
    if not text:
        text = f"{ename} без сообщения — посмотри на ячейку теста в ноутбуке"
    return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT] + " …"


def analyse(nb, ignore: str = "") -> tuple[list[CheckResult], list[str]]:
    """Разобрать исполненный ноутбук: итог по каждой ячейке с тестами и по письменным ответам."""
    results: list[CheckResult] = []
    warnings: list[str] = []
    group_solutions: list = []  # ячейки решений перед текущей группой тестов
    after_tests = False
    heading = ""  # последний заголовок инструкций — название письменного задания
    unfinished = False  # выше есть несделанное задание: NameError ниже — его следствие
    for index, cell in enumerate(nb.cells, start=1):
        meta = _nbgrader(cell)
        if cell.get("cell_type") == "markdown" and not meta.get("solution"):
            titles = [line.lstrip("#").strip() for line in _source(cell).splitlines() if line.startswith("#")]
            heading = titles[-1] if titles else heading
        if meta.get("solution"):
            if after_tests:
                group_solutions, after_tests = [], False
            group_solutions.append(cell)
            if any(n == "NotImplementedError" for n, _ in _errors(cell, ignore)):
                unfinished = True
            if meta.get("grade"):  # письменный ответ: содержание оценивают вручную
                stub = STUB_MARK in _source(cell)
                results.append(CheckResult(
                    f"{WRITTEN}: {heading or meta.get('grade_id')}", "todo" if stub else "manual", 0.0,
                    _points(meta.get("points")),
                    "ответ ещё не написан: замени заготовку «ТВОЙ ОТВЕТ ЗДЕСЬ» своим текстом" if stub
                    else "баллы за содержание поставит преподаватель"))
            continue
        if meta.get("grade") and cell.get("cell_type") == "code":
            after_tests = True
            max_points = _points(meta.get("points"))
            title = _title(cell, f"ячейка {index} ({meta.get('grade_id')})")
            if not _has_code(cell):
                results.append(CheckResult(title, "hidden", 0.0, max_points,
                                           "скрытые тесты запустит проверка преподавателя"))
                continue
            errors = _errors(cell, ignore)
            if not errors:
                results.append(CheckResult(title, "passed", max_points, max_points))
                continue
            ename, evalue = errors[0]
            group_errors = [n for sol in group_solutions for n, _ in _errors(sol, ignore)]
            code_stub = ename == "NotImplementedError" or "NotImplementedError" in group_errors
            text_stub = any(sol.get("cell_type") == "markdown" and STUB_MARK in _source(sol) for sol in group_solutions)
            upstream = unfinished and (ename == "NameError" or "NameError" in group_errors)
            if code_stub:
                results.append(CheckResult(title, "todo", 0.0, max_points,
                                           "в решении ещё стоит заготовка: удали raise NotImplementedError() и напиши код"))
                unfinished = True
            elif text_stub:
                results.append(CheckResult(title, "todo", 0.0, max_points, "письменный ответ ещё не написан"))
            elif upstream:
                results.append(CheckResult(title, "todo", 0.0, max_points,
                                           "этой проверке нужны результаты заданий выше, а они ещё не сделаны "
                                           f"({_message(ename, evalue)})"))
            else:
                results.append(CheckResult(title, "failed", 0.0, max_points, _message(ename, evalue)))
            continue
        if cell.get("cell_type") == "code":  # инструкции, подготовка, свободные ячейки
            for ename, evalue in _errors(cell, ignore):
                if ename == "NotImplementedError":
                    unfinished = True
                elif not (unfinished and ename == "NameError"):
                    warnings.append(f"ячейка {index} (не тест) упала: {_message(ename, evalue)}")
    return results, warnings


def check(notebook: Path, timeout: int | None = None, root: Path = ROOT) -> Report:
    """Исполнить копию ``notebook`` и вернуть итог по заданиям. Пример: ``check(Path("labs/.../x.ipynb")).ok``."""
    notebook = Path(notebook)
    if not notebook.is_file() or notebook.suffix != ".ipynb":
        raise CourseError(f"Нет ноутбука {notebook}. Укажи путь к .ipynb, например "
                          "labs/lab01_mini_rag/lab01_mini_rag.ipynb (из корня репозитория).")
    config_timeout, ignore, extra_arguments = _settings(root)
    try:
        nb = execute_copy(notebook, timeout or config_timeout, extra_arguments)
    except CourseError:
        raise
    except Exception as exc:  # нечитаемый JSON, нет ядра и т. п.
        raise CourseError(f"Не удалось исполнить {notebook}: {type(exc).__name__}: {exc}") from exc
    results, warnings = analyse(nb, ignore)
    if not results:
        raise CourseError(f"В {notebook} нет ячеек с тестами nbgrader: это точно ноутбук лабораторной?")
    return Report(notebook, results, warnings)


def _fmt(points: float) -> str:
    return f"{points:g}"


def render(report: Report) -> str:
    lines = [f"Проверка {report.notebook} (исполнена копия в чистом ядре)", ""]
    width = max(len(label) for label in LABELS.values())
    for r in report.results:
        if r.title.startswith(WRITTEN):
            score = f"{_fmt(r.max_points)} б. вручную"
        elif r.status in ("passed", "failed", "todo"):
            score = f"{_fmt(r.points)} из {_fmt(r.max_points)} б."
        else:
            score = f"{_fmt(r.max_points)} б."
        lines.append(f"{LABELS[r.status].ljust(width)}  {r.title} — {score}")
        if r.message:
            lines.extend("    " + part for part in r.message.splitlines())
    for warning in report.warnings:
        lines.append(f"Внимание: {warning}")
    count = {status: sum(r.status == status for r in report.results) for status in LABELS}
    got = sum(r.points for r in report.results if r.status == "passed")
    visible = sum(r.max_points for r in report.results
                  if r.status in ("passed", "failed", "todo") and not r.title.startswith(WRITTEN))
    hidden = sum(r.max_points for r in report.results if r.status == "hidden")
    manual = sum(r.max_points for r in report.results if r.title.startswith(WRITTEN))
    later = [f"скрытые тесты ({_fmt(hidden)} б.)"] if hidden else []
    later += [f"письменные ответы ({_fmt(manual)} б.)"] if manual else []
    lines += ["", f"Итог: пройдено {count['passed']}, с ошибкой {count['failed']}, не сделано {count['todo']}; "
                  f"видимые тесты — {_fmt(got)} из {_fmt(visible)} б."
              + (f"; {' и '.join(later)} оценит преподаватель." if later else ".")]
    lines.append("Всё видимое пройдено: можно сдавать." if report.ok
                 else "Есть ошибки или несделанные задания: исправь их и запусти проверку снова.")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    report = check(args.notebook, args.timeout)
    print(render(report))
    sys.stdout.flush()
    return 0 if report.ok else 1

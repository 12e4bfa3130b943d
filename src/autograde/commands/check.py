"""Самопроверка лабораторной: тот же движок, что у ``grade``, на одном ноутбуке.

Ноутбук слушателя собирается с выданной версией задания (``labs/<lab>/<lab>.ipynb``) так же,
как при проверке преподавателя, и исполняется тем же исполнителем: код слушателя — в его ядре,
тесты — у судьи; лимиты — из nbgrader_config.py (те же, что у ``grade`` и у Validate). В
песочнице, если здесь есть bubblewrap, иначе — обычными процессами (команда говорит, как).
Проверяется ровно этот файл: соседние ноутбуки в папке не читаются. Для каждой ячейки с тестами:

    [пройдено]       тест прошёл — и сколько баллов он стоит;
    [ошибка]         тест упал — и сообщение теста: что не так и как исправить;
    [не сделано]     в решении ещё стоит заготовка raise NotImplementedError() или
                     письменный ответ — нетронутая заготовка «ТВОЙ ОТВЕТ ЗДЕСЬ»;
    [скрыто]         скрытые тесты: в выданной версии их нет, их запустит проверка преподавателя;
    [вручную]        письменный ответ: баллы за содержание ставит преподаватель.

Код выхода: 0 — все видимые тесты пройдены и письменные ответы написаны; 1 — есть ошибки или
несделанные задания; 2 — ноутбук не найден или не читается, это не лабораторная курса или ядро не
запустилось.

Пример:
    python -m autograde check labs/lab01_mini_rag/lab01_mini_rag.ipynb
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbgrader import utils as nbutils

from autograde.course import RELEASE, ROOT, Course, CourseError, add_course_option, find_course, lab_names
from autograde.lab.master import build_master, gid
from autograde.lab.task import Context, Task
from autograde.render.feedback import title
from autograde.run.worker import grade
from autograde.sandbox import check_sandbox
from labkit import STUB  # заготовка письменного ответа: одна на проверку и на тесты лабораторных
from minirag import plural

NAME = "check"
HELP = "проверить свой ноутбук лабораторной тем же движком, что у преподавателя (код выхода не 0 при ошибках)"
WRITTEN = "письменный ответ"
LABELS = {"passed": "[пройдено]", "failed": "[ошибка]", "todo": "[не сделано]", "hidden": "[скрыто]",
          "manual": "[вручную]"}


@dataclass
class CheckResult:
    title: str
    status: str  # ключ LABELS
    points: float
    max_points: float
    message: str = ""
    grade_id: str = ""


@dataclass
class Report:
    notebook: Path
    results: list[CheckResult] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    sandboxed: bool = True
    sandbox_problem: str = ""  # почему без песочницы: нет bwrap, закрыта папка Python, запрещены user namespaces

    @property
    def ok(self) -> bool:
        return not any(r.status in ("failed", "todo") for r in self.results)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("notebook", type=Path, metavar="NOTEBOOK",
                        help="ноутбук лабораторной, например labs/lab01_mini_rag/lab01_mini_rag.ipynb")
    add_course_option(parser)


def _lab_of(path: Path, root: Path) -> str:
    known = lab_names(root)
    for candidate in (path.parent.name, path.stem):
        if candidate in known:
            return candidate
    named = [lab for lab in known if lab in path.name]
    if len(named) == 1:
        return named[0]
    raise CourseError(f"Не понять, какая это лабораторная: {path}. Ноутбук лежит в labs/<лабораторная>/ и "
                      f"называется так же (есть: {', '.join(known)}).")


def _has_code(source: str) -> bool:
    return any(line.strip() and not line.strip().startswith("#") for line in source.splitlines())


def check(notebook: Path, root: Path | None = None, slot: int = 0) -> Report:
    """Проверить ``notebook`` тем же движком, что ``grade``. Пример: ``check(Path("labs/.../x.ipynb")).ok``.

    ``root`` — каталог курса; по умолчанию — тот, в котором лежит ноутбук (или текущий)."""
    notebook = Path(notebook)
    if not notebook.is_file() or notebook.suffix != ".ipynb":
        raise CourseError(f"Нет ноутбука {notebook}. Укажи путь к .ipynb, например "
                          "labs/lab01_mini_rag/lab01_mini_rag.ipynb (из корня репозитория).")
    course = Course.load(root or find_course(notebook.parent) or ROOT)
    lab_name = _lab_of(notebook.resolve(), course.root)
    release = course.root / RELEASE / lab_name / f"{lab_name}.ipynb"
    if not release.is_file():
        raise CourseError(f"Нет выданной версии {release}: python -m autograde release {lab_name}.")
    master = build_master(release, lab_name, course.config)
    problem = check_sandbox(course.secrets())
    sandboxed = problem is None
    lab = course.lab(lab_name)
    ctx = Context(master, course.settings.limits, sandboxed, course.settings.kernel_args, lab.release_files(),
                  course.secrets(), hide_reference=lab.hide_reference)
    outcome = grade(Task("self", "self", "", notebook.read_bytes()), ctx, slot)
    report = Report(notebook, sandboxed=sandboxed, sandbox_problem=problem or "")
    result = outcome.result
    if result.status == "error" and result.unexecuted:
        raise CourseError(f"Ноутбук {notebook} не проверить: {result.message}")
    if result.message:
        report.warnings.append(result.message)
    executed = nbformat.reads(outcome.notebook, as_version=4)
    solution_errors: list[str] = []
    stub_text = False  # выше — письменный ответ с нетронутой заготовкой
    by_id = {c["grade_id"]: c for c in result.cells}
    heading = ""  # последний заголовок инструкций — название письменного задания
    for cell in executed.cells:
        grade_id = gid(cell)
        if cell.cell_type == "markdown" and grade_id in master.by_id and not nbutils.is_solution(master.by_id[grade_id]):
            titles = [line.lstrip("#").strip() for line in cell.source.splitlines() if line.startswith("#")]
            heading = titles[-1] if titles else heading
        reference = master.by_id.get(grade_id) if grade_id else None
        errors = [o.get("ename", "") for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        if reference is not None and nbutils.is_solution(reference):
            solution_errors += errors
            if nbutils.is_grade(reference):  # письменный ответ: содержание оценивают вручную
                stub = STUB in cell.source
                stub_text = stub_text or stub
                report.results.append(CheckResult(
                    f"{WRITTEN}: {heading or grade_id}", "todo" if stub else "manual", 0.0,
                    float(reference.metadata["nbgrader"].get("points", 0)),
                    f"ответ ещё не написан: замени заготовку «{STUB}» своим текстом" if stub
                    else "баллы за содержание поставит преподаватель", grade_id))
            continue
        if grade_id not in by_id or not master.is_test(grade_id):
            continue
        info = by_id[grade_id]
        name = title(master, grade_id, "test")
        if not _has_code(master.by_id[grade_id].source):
            report.results.append(CheckResult(name, "hidden", 0.0, info["max_score"],
                                              "скрытые тесты запустит проверка преподавателя", grade_id))
        elif info["score"] == info["max_score"]:
            report.results.append(CheckResult(name, "passed", info["max_score"], info["max_score"], "", grade_id))
        elif "NotImplementedError" in errors or "NotImplementedError" in solution_errors[-3:] \
                or info["message"].startswith("NotImplementedError"):
            report.results.append(CheckResult(name, "todo", 0.0, info["max_score"],
                                              "в решении ещё стоит заготовка: удали raise NotImplementedError() и "
                                              "напиши код", grade_id))
        elif stub_text:
            report.results.append(CheckResult(name, "todo", 0.0, info["max_score"], "письменный ответ ещё не написан",
                                              grade_id))
        elif info["message"].startswith("не сделано:"):  # NameError из-за несделанного задания выше (worker)
            report.results.append(CheckResult(name, "todo", 0.0, info["max_score"], info["message"], grade_id))
        else:
            report.results.append(CheckResult(name, "failed", 0.0, info["max_score"], info["message"], grade_id))
        solution_errors, stub_text = [], False
    if not report.results:
        raise CourseError(f"В {notebook} нет ячеек с тестами nbgrader: это точно ноутбук лабораторной?")
    return report


def _fmt(points: float) -> str:
    return f"{points:g}"


def render(report: Report) -> str:
    how = "в песочнице bubblewrap" if report.sandboxed else "без песочницы, обычными процессами"
    lines = [f"Проверка {report.notebook} — тем же движком, что у преподавателя, {how}", ""]
    if not report.sandboxed and report.sandbox_problem:
        lines[1:1] = [f"Почему без песочницы: {report.sandbox_problem}", ""]
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
    visible = [r for r in report.results if r.status in ("passed", "failed", "todo") and not r.title.startswith(WRITTEN)]
    hidden = sum(r.max_points for r in report.results if r.status == "hidden")
    manual = sum(r.max_points for r in report.results if r.title.startswith(WRITTEN))
    lines += ["", f"Итог: пройдено {count['passed']}, с ошибкой {count['failed']}, не сделано {count['todo']}."]
    summary = f"Видимые тесты: {_fmt(sum(r.points for r in visible))} из {_points(sum(r.max_points for r in visible), genitive=True)}."
    unseen = [f"{_points(hidden)} проверят скрытые тесты преподавателя"] if hidden else []
    unseen += [f"{_points(manual) if not hidden else _fmt(manual)} — преподаватель вручную (письменные ответы)"] if manual else []
    lines.append(summary + (f" Ещё {' и '.join(unseen)}." if unseen else ""))
    lines.append("Всё видимое пройдено. Скрытые тесты проверяют те же правила заданий на других данных: перед "
                 "сдачей перечитай правила и крайние случаи каждого задания." if report.ok
                 else "Есть ошибки или несделанные задания: исправь их и запусти проверку снова.")
    return "\n".join(lines)


def _points(points: float, genitive: bool = False) -> str:
    """«15 баллов», «1 балл», «2.5 балла»; ``genitive`` — после «из»: «из 1 балла», «из 2 баллов»."""
    if points == int(points):
        return plural(int(points), *(("балла", "баллов", "баллов") if genitive else ("балл", "балла", "баллов")))
    return f"{_fmt(points)} балла"


def run(args: argparse.Namespace) -> int:
    report = check(args.notebook, args.course)
    print(render(report))
    sys.stdout.flush()
    return 0 if report.ok else 1

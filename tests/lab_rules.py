"""Правило для авторов проверок: ожидаемое значение не считается из того, что дала функция слушателя.

Разбор ячеек с тестами из ``solutions/``: в каждой ячейке (и в каждой функции внутри неё)
отслеживается, какие имена получены из вызова функции слушателя («помечены»). Нарушение —
помеченное значение попадает в ожидаемое: в имя ``want``/``expected`` (с подчёркиванием впереди
или без, с любым хвостом) или в аргументы функции с таким именем (``_want_rrf(...)``,
``_expected_top_k(...)``). Исключение одно — явная уступка ``labkit.passed(...)``: выражение
``эталон if labkit.passed("…") else своё`` (и ветки ``if … passed(…)``) судит по результатам
слушателя только тогда, когда его функция уже не прошла свою проверку и баллы за ошибку уже сняты.

Функции слушателя — имена функций, которые определяют ячейки-решения этой лабораторной.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SINK_RE = re.compile(r"^_?(want|expected)")


@dataclass(frozen=True)
class Violation:
    lab: str
    grade_id: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.lab} / {self.grade_id}, строка {self.line}: {self.text}"


def _cells(notebook: Path) -> list[dict]:
    return json.loads(notebook.read_text(encoding="utf-8"))["cells"]


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def student_functions(notebook: Path) -> set[str]:
    """Имена функций, которые пишет слушатель (def в ячейках-решениях)."""
    names = set()
    for cell in _cells(notebook):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell["cell_type"] == "code" and meta.get("solution"):
            try:
                tree = ast.parse(_source(cell))
            except SyntaxError:
                continue
            names |= {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
    return names


def test_cells(notebook: Path) -> dict[str, str]:
    """grade_id → исходник каждой ячейки с тестами (маркеры скрытых тестов — обычные комментарии)."""
    out = {}
    for cell in _cells(notebook):
        meta = cell.get("metadata", {}).get("nbgrader", {})
        if cell["cell_type"] == "code" and meta.get("grade") and not meta.get("solution"):
            out[meta["grade_id"]] = _source(cell)
    return out


def _calls_passed(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            func = sub.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
            if name == "passed":
                return True
    return False


class _Taint(ast.NodeVisitor):
    def __init__(self, students: set[str], report):
        self.students, self.report = students, report
        self.tainted: set[str] = set()

    # --- помечено ли выражение ---
    def dirty(self, node: ast.AST | None) -> bool:
        if node is None:
            return False
        if isinstance(node, ast.IfExp) and _calls_passed(node.test):
            return False  # уступка: своё — только если своя проверка уже не пройдена
        if isinstance(node, ast.Name):
            return node.id in self.tainted
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name) and func.id in self.students:
                return True
        if isinstance(node, (ast.Lambda, ast.FunctionDef)):
            return False
        return any(self.dirty(child) for child in ast.iter_child_nodes(node))

    @staticmethod
    def _names(target: ast.AST) -> list[str]:
        return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]

    def _assign(self, targets: list[ast.AST], value: ast.AST | None, node: ast.AST) -> None:
        if isinstance(value, ast.Tuple) and all(isinstance(t, ast.Tuple) and len(t.elts) == len(value.elts)
                                                for t in targets):
            for target in targets:  # a, b = x, y — по элементам
                for element, part in zip(target.elts, value.elts):
                    self._assign([element], part, node)
            return
        dirty = self.dirty(value)
        for target in targets:
            for name in self._names(target):
                if dirty and SINK_RE.match(name):
                    self.report(node, f"ожидаемое {name} считается из результата функции слушателя")
                (self.tainted.add if dirty else self.tainted.discard)(name)

    def visit_Assign(self, node: ast.Assign) -> None:
        self._check_calls(node.value)
        self._assign(node.targets, node.value, node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._check_calls(node.value)
        self._assign([node.target], node.value, node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self._check_calls(node.value)
        if self.dirty(node.value):
            self._assign([node.target], node.value, node)

    def visit_For(self, node: ast.For) -> None:
        self._check_calls(node.iter)
        self._assign([node.target], node.iter, node)
        for stmt in node.body + node.orelse:
            self.visit(stmt)

    def visit_If(self, node: ast.If) -> None:
        self._check_calls(node.test)
        if _calls_passed(node.test):
            return  # ветки уступки не разбираем: см. описание модуля
        for stmt in node.body + node.orelse:
            self.visit(stmt)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        inner = _Taint(self.students, self.report)
        inner.tainted = set(self.tainted)
        for stmt in node.body:
            inner.visit(stmt)

    def visit_Expr(self, node: ast.Expr) -> None:
        self._check_calls(node.value)

    def visit_Assert(self, node: ast.Assert) -> None:
        self._check_calls(node.test)

    def visit_Return(self, node: ast.Return) -> None:
        self._check_calls(node.value)

    def _check_calls(self, node: ast.AST | None) -> None:
        if node is None:
            return
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call):
                func = sub.func
                name = func.id if isinstance(func, ast.Name) else ""
                if SINK_RE.match(name) and any(self.dirty(arg) for arg in list(sub.args) + [k.value for k in sub.keywords]):
                    self.report(sub, f"в {name}(...) попадает результат функции слушателя")


def cell_violations(source: str, students: set[str]) -> list[tuple[int, str]]:
    """(строка, что не так) для одной ячейки с тестами; ``students`` — имена функций слушателя."""
    lines = source.splitlines()
    code = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in lines)
    found = []

    def report(node, text):
        line = getattr(node, "lineno", 0)
        found.append((line, f"{text}: {lines[line - 1].strip() if line else ''}"))

    visitor = _Taint(students, report)
    for stmt in ast.parse(code).body:
        visitor.visit(stmt)
    return found


def violations(lab_dir: Path) -> list[Violation]:
    notebook = lab_dir / f"{lab_dir.name}.ipynb"
    students = student_functions(notebook)
    return [Violation(lab_dir.name, grade_id, line, text)
            for grade_id, source in test_cells(notebook).items()
            for line, text in cell_violations(source, students)]

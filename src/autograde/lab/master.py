"""Эталон лабораторной: что оценивается, сколько стоит, какой код у тестов и где что исполнять.

Эталон (``Master``) строится из ноутбука преподавателя ``solutions/<lab>/<lab>.ipynb`` теми же
препроцессорами nbgrader, что и ``nbgrader generate_assignment`` (с настройками курса): решения
заменены заготовкой, скрытые тесты на месте. Ему одному мы верим. Здесь же решается, где
исполняется каждая ячейка (``where``): решения и ячейки слушателя — в его ядре, ячейки
преподавателя — и в ядре, и у судьи, тесты — только у судьи (кроме помеченных
``"autograde": {"kernel": true}``: им нужен вывод ядра). И какие имена задаёт решение
слушателя (``owned``): судья всегда берёт их из ядра, а не из своих ячеек преподавателя.
Модуль не исполняет код и не пишет файлов (задание в базу оценок записывает ``store.gradebook.register``).
"""

from __future__ import annotations

import ast
import copy
import hashlib
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbformat import NotebookNode
from nbgrader import utils as nbutils

GENERATE_STEPS = ("IncludeHeaderFooter", "InstantiateTests", "LockCells", "ClearSolutions", "ClearOutput",
                  "CheckCellMetadata", "ComputeChecksums")
RELEASE_STEPS = ("ClearHiddenTests", "ClearMarkScheme", "ComputeChecksums")
HIDDEN_BEGIN = "BEGIN HIDDEN TESTS"
HIDDEN_END = "END HIDDEN TESTS"


def gid(cell) -> str | None:
    """grade_id ячейки nbgrader или None (у обычной ячейки)."""
    meta = cell.get("metadata", {}).get("nbgrader") if isinstance(cell.get("metadata"), dict) else None
    if isinstance(meta, dict) and isinstance(meta.get("grade_id"), str) and (
            meta.get("grade") or meta.get("solution") or meta.get("locked") or meta.get("task")):
        return meta["grade_id"]
    return None


@dataclass
class Master:
    """Эталон одной лабораторной."""

    lab: str
    notebook: NotebookNode  # со скрытыми тестами, без решений
    release: NotebookNode  # что выдано слушателям (скрытые тесты вырезаны)
    digest: str  # меняется вместе с правилами: ячейками, баллами, тестами
    tests_digest: str  # меняется только вместе с тем, что видит слушатель в ячейках тестов
    owned: tuple[str, ...]  # имена, которые задают решения слушателя
    ignore_pattern: str = ""

    def __post_init__(self):
        self.by_id = {gid(c): c for c in self.notebook.cells if gid(c)}
        self.release_by_id = {gid(c): c for c in self.release.cells if gid(c)}
        self.order = [gid(c) for c in self.notebook.cells if gid(c)]

    def is_test(self, grade_id: str) -> bool:
        cell = self.by_id[grade_id]
        return nbutils.is_grade(cell) and not nbutils.is_solution(cell) and cell.cell_type == "code"

    def has_hidden_tests(self, grade_id: str) -> bool:
        return HIDDEN_BEGIN in self.by_id[grade_id].source

    def where(self, cell) -> str:
        """Где исполнять ячейку собранного ноутбука: kernel, both, judge или skip."""
        if cell.cell_type != "code" or not cell.source.strip():
            return "skip"
        grade_id = gid(cell)
        if grade_id not in self.by_id:
            return "kernel"
        reference = self.by_id[grade_id]
        if nbutils.is_solution(reference):
            return "kernel"
        if self.is_test(grade_id):
            kernel = reference.metadata.get("autograde", {}).get("kernel") is True
            return "kernel" if kernel else "judge"
        return "both"


def _preprocess(nb: NotebookNode, steps, config, resources: dict) -> NotebookNode:
    from nbgrader import preprocessors

    for name in steps:
        nb, resources = getattr(preprocessors, name)(config=config)(nb, resources)
    return nb


def assigned_names(source: str) -> set[str]:
    """Имена, которые код задаёт на верхнем уровне: присваивания, def и class (не import и не локальные)."""
    lines = [line for line in source.splitlines() if "BEGIN SOLUTION" not in line and "END SOLUTION" not in line]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return set()
    names: set[str] = set()
    pending = list(tree.body)
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.stmt):
                pending.append(child)
            else:
                names.update(n.id for n in ast.walk(child) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    return names


def build_master(source: Path, lab: str, config) -> Master:
    """Эталон из ноутбука преподавателя. Пример: ``build_master(Path("solutions/lab01/lab01.ipynb"), "lab01", cfg)``."""
    original = nbformat.read(source, as_version=4)
    owned = set()
    for cell in original.cells:
        if cell.cell_type == "code" and nbutils.is_solution(cell):
            owned |= assigned_names(cell.source)
    resources = {"nbgrader": {"notebook": lab, "assignment": lab}, "metadata": {"path": str(source.parent)}}
    master = _preprocess(original, GENERATE_STEPS, config, resources)
    release = _preprocess(copy.deepcopy(master), RELEASE_STEPS, config, resources)
    ignore = ""
    if "IgnorePattern" in config and config.IgnorePattern.get("enabled", False):
        ignore = config.IgnorePattern.get("pattern", "")
    digest = hashlib.sha256(nbformat.writes(master).encode("utf-8") + ignore.encode("utf-8")).hexdigest()
    tests = [c.source for c in release.cells if gid(c) and nbutils.is_grade(c) and not nbutils.is_solution(c)]
    tests_digest = hashlib.sha256("\0".join(tests).encode("utf-8")).hexdigest()
    return Master(lab, master, release, digest, tests_digest, tuple(sorted(owned)), ignore)


def hide_tests(source: str, placeholder: str) -> str:
    """Вырезать области скрытых тестов, оставив на их месте строку-заглушку."""
    out, inside = [], False
    for line in source.split("\n"):
        if HIDDEN_BEGIN in line:
            inside = True
            out.append(line[: len(line) - len(line.lstrip())] + placeholder)
        elif HIDDEN_END in line:
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out)

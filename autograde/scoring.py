"""Эталон задания, сборка проверяемого ноутбука из сдачи и подсчёт баллов — всё вне песочницы.

Эталон (``Master``) строится из ноутбука преподавателя ``solutions/<lab>/<lab>.ipynb`` теми же
препроцессорами nbgrader, что и ``nbgrader generate_assignment`` (с настройками курса): решения
заменены заготовкой, скрытые тесты на месте. Ему одному мы верим: какие ячейки оцениваются,
сколько баллов стоят, какой код у тестов. Из сдачи берём только код и текст ячеек-решений и
ячейки, добавленные слушателем; метаданным сдачи не верим.

Сборка (``merge``) идёт по grade_id, как у nbgrader (``OverwriteCells``, ``DeduplicateIds``):

* тесты и ячейки только для чтения — всегда из эталона, даже если их правили;
* удалённые ячейки эталона возвращаются: тест — как можно позже (после всего, что слушатель
  написал до следующей ячейки эталона), пустое решение — как можно раньше;
* у повторённой ячейки оценивается последняя копия, у ячейки с чужим grade_id метаданные
  снимаются — она исполняется как обычная;
* если метаданных nbgrader нет совсем (ноутбук пересохранили в другом редакторе), ячейки
  сопоставляются с выданной версией по тексту (difflib).

Баллы (``score``) считает ``nbgrader.utils.determine_grade`` по исполненному ноутбуку, как в
``nbgrader autograde``: ошибка или stderr в тесте — 0, иначе полный балл; stderr, подходящий под
``IgnorePattern`` курса, не считается. Чего модуль не делает: не исполняет код и не пишет файлов.
"""

from __future__ import annotations

import copy
import difflib
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_raw_cell
from nbgrader import utils as nbutils

GENERATE_STEPS = ("IncludeHeaderFooter", "InstantiateTests", "LockCells", "ClearSolutions", "ClearOutput",
                  "CheckCellMetadata", "ComputeChecksums")
RELEASE_STEPS = ("ClearHiddenTests", "ClearMarkScheme", "ComputeChecksums")
HIDDEN_BEGIN = "BEGIN HIDDEN TESTS"
REVIEW_PREFIX = "подозрительные конструкции в решении"
SUSPICIOUS = {  # конструкции, которыми подделывают проверку изнутри ядра: стоит взглянуть глазами
    r"\bget_ipython\b": "get_ipython",
    r"\binput_transformers": "input_transformers",
    r"\bsys\.modules\b": "sys.modules",
    r"\bbuiltins\b|__builtins__": "builtins",
    r"\bdef\s+__eq__\b|__eq__\s*=": "__eq__",
    r"\bctypes\b": "ctypes",
    r"\bgc\.get_(referrers|objects)\b": "gc",
    r"\bsys\.settrace\b|\bsys\.setprofile\b|\baddaudithook\b": "трассировка/аудит",
    r"\bos\._exit\b|\bos\.kill\b": "os._exit/os.kill",
    r"^\s*(np|numpy|math|re|json|random|minirag|_ref|hashlib|dataclasses)\.[\w.]+\s*=[^=]": "подмена функций библиотек",
}


class SubmissionError(ValueError):
    """Файл сдачи нельзя проверить: сообщение — причина по-русски."""


@dataclass
class Master:
    """Эталон одной лабораторной."""

    lab: str
    notebook: NotebookNode  # со скрытыми тестами, без решений
    release: NotebookNode  # что выдано слушателям (скрытые тесты вырезаны)
    digest: str
    ignore_pattern: str = ""

    def __post_init__(self):
        self.by_id = {_gid(c): c for c in self.notebook.cells if _gid(c)}
        self.release_by_id = {_gid(c): c for c in self.release.cells if _gid(c)}
        self.order = [_gid(c) for c in self.notebook.cells if _gid(c)]

    def is_test(self, grade_id: str) -> bool:
        cell = self.by_id[grade_id]
        return nbutils.is_grade(cell) and not nbutils.is_solution(cell) and cell.cell_type == "code"

    def has_hidden_tests(self, grade_id: str) -> bool:
        return HIDDEN_BEGIN in self.by_id[grade_id].source


def _gid(cell) -> str | None:
    meta = cell.get("metadata", {}).get("nbgrader") if isinstance(cell.get("metadata"), dict) else None
    if isinstance(meta, dict) and isinstance(meta.get("grade_id"), str) and (
            meta.get("grade") or meta.get("solution") or meta.get("locked") or meta.get("task")):
        return meta["grade_id"]
    return None


def _preprocess(nb: NotebookNode, steps, config, resources: dict) -> NotebookNode:
    from nbgrader import preprocessors

    for name in steps:
        nb, resources = getattr(preprocessors, name)(config=config)(nb, resources)
    return nb


def build_master(source: Path, lab: str, config) -> Master:
    """Эталон из ноутбука преподавателя. Пример: ``build_master(Path("solutions/lab01/lab01.ipynb"), "lab01", cfg)``."""
    nb = nbformat.read(source, as_version=4)
    resources = {"nbgrader": {"notebook": lab, "assignment": lab}, "metadata": {"path": str(source.parent)}}
    master = _preprocess(nb, GENERATE_STEPS, config, resources)
    release = _preprocess(copy.deepcopy(master), RELEASE_STEPS, config, resources)
    ignore = ""
    if "IgnorePattern" in config and config.IgnorePattern.get("enabled", False):
        ignore = config.IgnorePattern.get("pattern", "")
    digest = hashlib.sha256(nbformat.writes(master).encode("utf-8") + ignore.encode("utf-8")).hexdigest()
    return Master(lab, master, release, digest, ignore)


def register(master: Master, db_url: str, course_id: str) -> None:
    """Записать задание и его ячейки в базу оценок (как generate_assignment): нужно formgrader'у."""
    from nbgrader.api import Gradebook
    from nbgrader.preprocessors import SaveCells

    with Gradebook(db_url, course_id) as gb:
        gb.update_or_create_assignment(master.lab)
    resources = {"nbgrader": {"notebook": master.lab, "assignment": master.lab, "db_url": db_url}}
    SaveCells()(copy.deepcopy(master.notebook), resources)


# ---------- чтение сдачи ----------
def _text(value) -> str:
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def read_submission(data: bytes) -> tuple[list[dict], list[str]]:
    """Ячейки сдачи как простые словари и замечания. SubmissionError, если это не ноутбук."""
    notes: list[str] = []
    if not data.strip():
        raise SubmissionError("файл пустой" + (" (0 байт)" if not data else " (одни пробелы)")
                              + ": сдайте ноутбук заново, сохранив его (Ctrl+S)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SubmissionError(f"файл не в UTF-8 (байт {exc.start}): это не ноутбук Jupyter или он повреждён") from None
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"строка {exc.lineno}, позиция {exc.colno}"
        # обрезан, если разбор упёрся в конец файла: строка не закрыта или не хватает скобок
        cut = exc.msg.startswith("Unterminated string") or exc.pos >= len(text.rstrip()) - 1
        raise SubmissionError(("файл обрезан: JSON кончается раньше времени" if cut else "файл не JSON")
                              + f" ({where}: {exc.msg}); откройте ноутбук в Jupyter, сохраните и сдайте заново") from None
    if not isinstance(raw, dict) or not ("cells" in raw or "worksheets" in raw):
        raise SubmissionError("это JSON, но не ноутбук Jupyter (нет списка ячеек)")
    version = raw.get("nbformat")
    if version != 4:
        try:
            upgraded = nbformat.reads(text, as_version=4)
        except Exception as exc:  # nbformat бросает разное на старых и битых файлах
            raise SubmissionError(f"ноутбук формата nbformat {version} не читается: {exc}") from None
        raw = json.loads(nbformat.writes(upgraded, version=4))
        notes.append(f"старый формат nbformat {version}: ноутбук переведён в nbformat 4")
    cells_raw = raw.get("cells")
    if not isinstance(cells_raw, list):
        raise SubmissionError("в ноутбуке нет списка ячеек")
    cells, skipped = [], 0
    for cell in cells_raw:
        if not isinstance(cell, dict) or cell.get("cell_type") not in ("code", "markdown", "raw"):
            skipped += 1
            continue
        metadata = cell.get("metadata")
        cells.append({"cell_type": cell["cell_type"], "source": _text(cell.get("source", "")),
                      "metadata": metadata if isinstance(metadata, dict) else {}})
    if skipped:
        notes.append(f"пропущено повреждённых ячеек: {skipped}")
    if not cells:
        raise SubmissionError("в ноутбуке нет ни одной ячейки")
    return cells, notes


# ---------- сборка проверяемого ноутбука ----------
def _new_cell(cell_type: str, source: str, metadata: dict) -> NotebookNode:
    make = {"code": new_code_cell, "markdown": new_markdown_cell, "raw": new_raw_cell}[cell_type]
    cell = make(source=source, metadata=copy.deepcopy(metadata))
    return cell


def _plain_metadata(metadata: dict) -> dict:
    """Метаданные ячейки слушателя без nbgrader: её баллы не считаются."""
    return {k: copy.deepcopy(v) for k, v in metadata.items() if k not in ("nbgrader", "deletable", "editable")}


def _norm(source: str) -> str:
    return "\n".join(line.rstrip() for line in source.strip().splitlines())


def _align(cells: list[dict], master: Master) -> int:
    """Метаданных nbgrader нет: вернуть их по тексту ячеек выданной версии. Вернуть число найденных."""
    release = master.release.cells
    a = [(c.cell_type, _norm(c.source)) for c in release]
    b = [(c["cell_type"], _norm(c["source"])) for c in cells]
    found = 0
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag not in ("equal", "replace"):
            continue
        for i, j in zip(range(i1, i2), range(j1, j2)):
            gid = _gid(release[i])
            if gid and (tag == "equal" or release[i].cell_type == cells[j]["cell_type"]):
                cells[j]["metadata"] = dict(cells[j]["metadata"], nbgrader=copy.deepcopy(release[i].metadata.nbgrader))
                found += 1
    return found


@dataclass
class Merge:
    """Проверяемый ноутбук и что пришлось в нём поправить."""

    notebook: NotebookNode
    notes: list[str] = field(default_factory=list)


def _names(ids) -> str:
    return ", ".join(sorted(ids))


def merge(cells: list[dict], master: Master) -> Merge:
    """Собрать проверяемый ноутбук: решения — из сдачи, всё остальное оцениваемое — из эталона."""
    notes: list[str] = []
    ids = [c["metadata"].get("nbgrader", {}).get("grade_id") if isinstance(c["metadata"].get("nbgrader"), dict)
           else None for c in cells]
    if not any(i in master.by_id for i in ids if isinstance(i, str)):
        found = _align(cells, master)
        notes.append("метаданные nbgrader потеряны (ноутбук пересохранён не в Jupyter?): ячейки сопоставлены "
                     f"с заданием по тексту, найдено {found} из {len(master.by_id)}")
        ids = [c["metadata"].get("nbgrader", {}).get("grade_id") for c in cells]
    last = {}
    for pos, gid in enumerate(ids):
        if isinstance(gid, str) and gid in master.by_id:
            last[gid] = pos
    duplicated = sorted({gid for pos, gid in enumerate(ids) if gid in last and last[gid] != pos})
    unknown = sorted({gid for gid in ids if isinstance(gid, str) and gid not in master.by_id
                      and _gid({"metadata": cells[ids.index(gid)]["metadata"]})})
    edited, retyped = [], []
    out: list[NotebookNode] = []
    anchor_of: dict[str, int] = {}  # grade_id эталона → позиция в out
    for pos, (cell, gid) in enumerate(zip(cells, ids)):
        if gid in last and last[gid] == pos:
            reference = master.by_id[gid]
            if nbutils.is_solution(reference):
                if cell["cell_type"] != reference.cell_type:
                    retyped.append(gid)
                new = _new_cell(reference.cell_type, cell["source"], reference.metadata)
            else:
                released = master.release_by_id.get(gid)
                if reference.cell_type == "code" and released is not None and _norm(cell["source"]) != _norm(released.source):
                    edited.append(gid)
                new = _new_cell(reference.cell_type, reference.source, reference.metadata)
            anchor_of[gid] = len(out)
            out.append(new)
        else:
            out.append(_new_cell(cell["cell_type"], cell["source"], _plain_metadata(cell["metadata"])))
    missing = [gid for gid in master.order if gid not in anchor_of]
    for gid in missing:  # возвращаем удалённые ячейки эталона на их места
        reference = master.by_id[gid]
        index = master.order.index(gid)
        if nbutils.is_solution(reference):
            before = [anchor_of[g] for g in master.order[:index] if g in anchor_of]
            at = before[-1] + 1 if before else 0
        else:
            after = [anchor_of[g] for g in master.order[index + 1:] if g in anchor_of]
            at = min(after) if after else len(out)
        out.insert(at, _new_cell(reference.cell_type, reference.source, reference.metadata))
        for key, value in anchor_of.items():
            if value >= at:
                anchor_of[key] = value + 1
        anchor_of[gid] = at
    graded_missing = [g for g in missing if nbutils.is_grade(master.by_id[g]) or nbutils.is_solution(master.by_id[g])]
    if graded_missing:
        notes.append(f"удалены ячейки задания: {_names(graded_missing)} — возвращены из задания "
                     "(тесты проверяют как обычно, пустое решение — заготовка)")
    if duplicated:
        notes.append(f"ячейки повторены: {_names(duplicated)} — оценивается последняя копия")
    if unknown:
        notes.append(f"ячейки с чужими grade_id (переименованы?): {_names(unknown)} — исполнены как обычные, без баллов")
    if edited:
        notes.append(f"изменены ячейки с тестами или только для чтения: {_names(edited)} — "
                     "восстановлены из задания и проверены исходными тестами")
    if retyped:
        notes.append(f"у ячеек-решений изменён тип: {_names(retyped)} — тип возвращён")
    nb = new_notebook(cells=out, metadata=copy.deepcopy(master.notebook.metadata))
    for number, cell in enumerate(nb.cells):
        cell.id = f"cell-{number}"  # стабильные id: повторная проверка даёт тот же файл
    if len({_gid(c) for c in nb.cells if _gid(c)}) != len(master.by_id):
        raise AssertionError("сборка потеряла ячейку эталона")  # pragma: no cover — инвариант
    return Merge(nb, notes)


def suspicious(cells: list[dict], master: Master) -> list[str]:
    """Что в коде слушателя похоже на попытку обмануть проверку изнутри ядра (для глаз преподавателя)."""
    own = []
    for cell in cells:
        gid = cell["metadata"].get("nbgrader", {}).get("grade_id") if isinstance(cell["metadata"].get("nbgrader"), dict) else None
        if cell["cell_type"] == "code" and not (gid in master.by_id and not nbutils.is_solution(master.by_id[gid])):
            own.append(cell["source"])
    code = "\n".join(own)
    return sorted({name for pattern, name in SUSPICIOUS.items() if re.search(pattern, code, re.MULTILINE)})


# ---------- баллы ----------
@dataclass
class CellScore:
    grade_id: str
    kind: str  # test — автотест; manual — оценивает преподаватель
    score: float | None
    max_score: float
    message: str = ""

    def to_dict(self) -> dict:
        return {"grade_id": self.grade_id, "kind": self.kind, "score": self.score,
                "max_score": self.max_score, "message": self.message}


def _first_error(cell) -> str:
    """Почему тест не прошёл: сообщение последней ошибки (после прерывания это объяснение проверки) или stderr."""
    errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
    if errors:
        ename, evalue = errors[-1].get("ename", "Error"), (errors[-1].get("evalue") or "").strip()
        if ename == "AssertionError" and evalue:
            return evalue[:500]
        return f"{ename}: {evalue}"[:500] if evalue else ename
    for output in cell.get("outputs", []):
        if output.get("output_type") == "stream" and output.get("name") == "stderr":
            return ("вывод в stderr (nbgrader считает его ошибкой): " + output.get("text", "").strip())[:500]
    return ""


def score(executed: NotebookNode, master: Master) -> list[CellScore]:
    """Баллы по ячейкам, как их считает nbgrader autograde; точки и тип ячейки — из эталона."""
    nb = copy.deepcopy(executed)
    if master.ignore_pattern:
        for cell in nb.cells:  # то же, что nbgrader.preprocessors.IgnorePattern
            if cell.cell_type == "code":
                cell.outputs = [o for o in cell.outputs if not (
                    o.output_type == "stream" and o.name == "stderr" and re.search(master.ignore_pattern, o.text))]
    scores = []
    for cell in nb.cells:
        gid = _gid(cell)
        if not gid or not (nbutils.is_grade(cell) or nbutils.is_task(cell)):
            continue
        reference = master.by_id[gid]
        cell.metadata["nbgrader"] = copy.deepcopy(reference.metadata["nbgrader"])
        points = float(reference.metadata["nbgrader"].get("points", 0))
        if nbutils.is_task(cell):
            scores.append(CellScore(gid, "manual", None, points))
            continue
        auto, max_points = nbutils.determine_grade(cell)
        if nbutils.is_solution(cell) or cell.cell_type != "code":
            scores.append(CellScore(gid, "manual", auto, max_points, "нет ответа" if auto == 0 else ""))
        else:
            scores.append(CellScore(gid, "test", float(auto), max_points, "" if auto == max_points else _first_error(cell)))
    return scores

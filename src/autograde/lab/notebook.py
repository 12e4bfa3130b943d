"""Сдача → проверяемый ноутбук: разбор файла (строго, с лимитами) и сборка с эталоном.

Из файла слушателя берём только текст ячеек (код и markdown), их тип и grade_id nbgrader; выходы,
вложения и прочие метаданные отбрасываются сразу — их никто не показывает и не исполняет.
Файл — чужие данные: не UTF-8, не JSON, обрезан, пуст — это ``SubmissionError`` с причиной, и
виновата работа (результат кэшируется, повтор не нужен). Пределы проверяются до разбора и до любого
преобразования (nbformat, markdown, очистка): файл не больше ``MAX_FILE``, JSON не глубже
``MAX_DEPTH`` и не больше ``MAX_NODES`` значений (счёт по сырым байтам, ``codec.scan``), текст одной
ячейки не длиннее ``MAX_CELL``, всех ячеек вместе — ``MAX_TEXT``. Так память проверяющего на одну
работу ограничена, сколько бы слушатель ни вставил в ноутбук.

Сборка (``merge``) идёт по grade_id, как у nbgrader (``OverwriteCells``, ``DeduplicateIds``):

* тесты и ячейки только для чтения — всегда из эталона, даже если их правили;
* удалённые ячейки эталона возвращаются: тест — как можно позже (после всего, что слушатель
  написал до следующей ячейки эталона), пустое решение — как можно раньше;
* у повторённой ячейки оценивается последняя копия, у ячейки с чужим grade_id метаданные
  снимаются — она исполняется как обычная;
* если метаданных nbgrader нет совсем (ноутбук пересохранили в другом редакторе), ячейки
  сопоставляются с выданной версией по тексту (difflib).
"""

from __future__ import annotations

import copy
import difflib
import json
import re
from dataclasses import dataclass, field

import nbformat
from nbformat import NotebookNode
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_raw_cell
from nbgrader import utils as nbutils

from autograde.judge.codec import LimitError, scan
from autograde.lab.master import Master
from autograde.lab.master import gid as _gid

MAX_FILE = 16 * 1024 * 1024  # ноутбук лабораторной с выходами — единицы МБ
MAX_DEPTH = 64  # глубже JSON ноутбука не бывает; глубже — чужие данные
MAX_NODES = 500_000  # значений JSON (строк выходов, ячеек, ключей): выданный ноутбук — около тысячи
MAX_CELL = 256 * 1024  # байт текста (код или markdown) в одной ячейке: ответы лабораторных — единицы КБ
MAX_TEXT = 2 * 1024 * 1024  # байт текста во всех ячейках вместе
NBGRADER_KEYS = {"grade": bool, "solution": bool, "locked": bool, "task": bool, "grade_id": str}
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
    r"\binspect\.stack\b|\bsys\._getframe\b": "inspect.stack",
    r"^\s*(np|numpy|math|re|json|random|minirag|_ref|hashlib|dataclasses)\.[\w.]+\s*=[^=]": "подмена функций библиотек",
}


class SubmissionError(ValueError):
    """Файл сдачи нельзя проверить: сообщение — причина по-русски."""


def _nbgrader_meta(metadata) -> dict:
    """Из метаданных ячейки — только поля nbgrader простых типов (остальное сдачи не касается)."""
    meta = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    if not isinstance(meta, dict):
        return {}
    kept = {k: v for k, v in meta.items() if k in NBGRADER_KEYS and type(v) is NBGRADER_KEYS[k]}
    if isinstance(kept.get("grade_id"), str) and len(kept["grade_id"]) > 200:
        kept.pop("grade_id")
    return {"nbgrader": kept} if kept else {}


# ---------- чтение сдачи ----------
def _text(value) -> str:
    if isinstance(value, list):
        return "".join(v for v in value if isinstance(v, str))
    return value if isinstance(value, str) else ""


def read_submission(data: bytes) -> tuple[list[dict], list[str]]:
    """Ячейки сдачи как простые словари и замечания. SubmissionError, если это не ноутбук."""
    notes: list[str] = []
    if len(data) > MAX_FILE:
        raise SubmissionError(f"файл больше предела {MAX_FILE // 2**20} МБ ({len(data) / 2**20:.1f} МБ) — работа не "
                              "проверена: очистите выходы, сохраните и сдайте заново")
    if not data.strip():
        raise SubmissionError("файл пустой" + (" (0 байт)" if not data else " (одни пробелы)")
                              + ": сдайте ноутбук заново, сохранив его (Ctrl+S)")
    try:
        scan(data, MAX_FILE, MAX_DEPTH, MAX_NODES)
    except LimitError as exc:
        advice = {"depth": "это не ноутбук Jupyter",
                  "nodes": "очистите выходы (Kernel → Restart Kernel and Clear All Outputs), сохраните и сдайте заново"}
        raise SubmissionError(f"файл {exc}: {advice[exc.kind]}") from None
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
        cells.append({"cell_type": cell["cell_type"], "source": _text(cell.get("source", "")),
                      "metadata": _nbgrader_meta(cell.get("metadata"))})
    if skipped:
        notes.append(f"пропущено повреждённых ячеек: {skipped}")
    if not cells:
        raise SubmissionError("в ноутбуке нет ни одной ячейки")
    _check_sizes(cells)
    return cells, notes


def _kb(size: int) -> str:
    return f"{-(-size // 1024):,} КБ".replace(",", " ")


def _check_sizes(cells: list[dict]) -> None:
    """Текст ячеек в пределах ``MAX_CELL`` и ``MAX_TEXT`` — до сборки, markdown и очистки; иначе SubmissionError."""
    total = 0
    for number, cell in enumerate(cells, 1):
        size = len(cell["source"].encode("utf-8", "surrogatepass"))
        total += size
        if size > MAX_CELL:
            grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
            first = next((line.strip() for line in cell["source"][:200].splitlines() if line.strip()), "")
            name = f"«{grade_id}»" if grade_id else f"ячейка {number} («{first[:40]}{'…' if len(first) > 40 else ''}»)"
            what = "ответ" if grade_id else "текст ячейки"
            raise SubmissionError(f"{name}: {what} длиннее {_kb(MAX_CELL)} ({_kb(size)}) — работа не проверена: "
                                  "сократите его (картинки и данные не вставляйте в текст), сохраните и сдайте заново")
    if total > MAX_TEXT:
        raise SubmissionError(f"текст всех ячеек длиннее {_kb(MAX_TEXT)} ({_kb(total)}) — работа не проверена: "
                              "уберите лишние ячейки и вставленные данные, сохраните и сдайте заново")


# ---------- сборка проверяемого ноутбука ----------
def _new_cell(cell_type: str, source: str, metadata: dict) -> NotebookNode:
    make = {"code": new_code_cell, "markdown": new_markdown_cell, "raw": new_raw_cell}[cell_type]
    cell = make(source=source, metadata=copy.deepcopy(metadata))
    return cell


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


def merge(cells: list[dict], master: Master, released: dict | None = None) -> Merge:
    """Собрать проверяемый ноутбук: решения — из сдачи, всё остальное оцениваемое — из эталона.

    ``released`` — grade_id → тексты этой ячейки во всех выпусках задания: ячейка теста, которую
    слушатель получил в прошлом выпуске (до исправления теста), — не правка слушателя.
    """
    released = released or {}
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
                given = master.release_by_id.get(gid)
                versions = {_norm(v) for v in released.get(gid, [])} | ({_norm(given.source)} if given else set())
                if reference.cell_type == "code" and given is not None and _norm(cell["source"]) not in versions:
                    edited.append(gid)
                new = _new_cell(reference.cell_type, reference.source, reference.metadata)
            anchor_of[gid] = len(out)
            out.append(new)
        else:
            out.append(_new_cell(cell["cell_type"], cell["source"], {}))
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
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if cell["cell_type"] == "code" and not (grade_id in master.by_id and not nbutils.is_solution(master.by_id[grade_id])):
            own.append(cell["source"])
    code = "\n".join(own)
    return sorted({name for pattern, name in SUSPICIOUS.items() if re.search(pattern, code, re.MULTILINE)})

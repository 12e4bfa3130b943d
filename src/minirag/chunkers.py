"""Чанкеры, которые смотрят на содержание: смысловые границы, таблицы и код (глава 10).

Чанкинг по размеру, чанкер по умолчанию, — ``chunk`` (``chunk_text``, ``chunk_spans``, глава 4);
здесь — чанкеры, которые выбирают, где резать, по тому, что в тексте.

* ``semantic_chunks`` режет между предложениями там, где соседние предложения
  непохожи: косинус ниже нижнего квартиля всех соседних косинусов текста.
* ``code_chunks`` режет код Python между определениями верхнего уровня (по номерам
  строк из ``ast``) и никогда — внутри функции или класса.
* ``table_chunks`` режет таблицы (markdown или CSV-подобные) по строкам и повторяет
  шапку в каждом куске, чтобы строка «12 | 450» не потеряла смысл столбцов.
* ``layout_chunks`` — ``chunk_text`` для своих файлов (им режет команда ``index``): не режет
  строку таблицы, длинный кусок без точек режет по строкам, а не посреди «30 800», и не режет
  после «ул.» или инициала.

Все, кроме ``table_chunks``, как ``chunk_text``, возвращают куски исходного текста по порядку и
подключаются в ``Index.build(docs, chunker=...)``. ``table_chunks`` — нет: кусок с
повторённой шапкой не подстрока документа, поэтому у него свой тип ``TableChunk``.
Модуль не знает про индекс и не меряет размеры в токенах: ``max_chars`` — в символах.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

import numpy as np

from .chunk import chunk_spans, cut_by_words, pack_spans, sentence_spans
from .embed import Embedder, HashEmbedder
from .errors import MiniRagError
from .text import continues_sentence
from .validate import require_int, require_number, require_text
from .vectors import l2_normalize


def semantic_chunks(text: str, embedder: Embedder | None = None, *, quantile: float = 0.25) -> list[str]:
    """Разрезать текст между соседними предложениями, косинус которых ниже квантиля ``quantile``.

    По умолчанию квантиль 0.25 (нижний квартиль) и ``HashEmbedder()``; другой эмбеддер —
    через ``functools.partial(semantic_chunks, embedder=...)``. Кусок — подстрока текста.
    Пример: ``semantic_chunks("Кот спит на диване. Кот ест рыбу. Поезд едет быстро. Поезд опоздал.")``
    → ``['Кот спит на диване. Кот ест рыбу.', 'Поезд едет быстро. Поезд опоздал.']``;
    в индексе — ``Index.build(DEMO_DOCS, chunker=semantic_chunks)``. Глава 10. Разнообразие, переранжирование и чанкинг по структуре.
    """
    require_text(text)
    quantile = require_number(quantile, "quantile", 0, 1, "Нижний квартиль — 0.25.")
    spans = sentence_spans(text)
    if len(spans) < 3:  # одна соседняя пара — не с чем сравнить
        return [text[spans[0][0] : spans[-1][1]]] if spans else []
    embedder = embedder if embedder is not None else HashEmbedder()
    vectors = l2_normalize(embedder.embed([text[s:e] for s, e in spans]))
    if vectors.shape[0] != len(spans):
        raise MiniRagError(f"Эмбеддер вернул {vectors.shape[0]} векторов на {len(spans)} предложений.")
    similarity = np.sum(vectors[:-1] * vectors[1:], axis=1)  # косинус предложения i и i+1
    cut_after = np.flatnonzero(similarity < np.quantile(similarity, quantile))
    starts = [0, *(cut_after + 1).tolist()]
    ends = [*cut_after.tolist(), len(spans) - 1]
    return [text[spans[a][0] : spans[b][1]] for a, b in zip(starts, ends, strict=True)]


def code_chunks(source: str) -> list[str]:
    """Разрезать код Python между определениями верхнего уровня (def, class, с декораторами).

    Комментарии прямо над определением идут с ним; код между определениями — отдельным куском.
    Пример: ``code_chunks("import os\\n\\ndef f():\\n    return 1\\n")`` → ``['import os', 'def f():\\n    return 1']``.
    Глава 10. Разнообразие, переранжирование и чанкинг по структуре.
    """
    require_text(source, "Код")
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise MiniRagError(f"Это не код Python: синтаксическая ошибка в строке {exc.lineno}: {exc.msg}. "
                           f"Для обычного текста возьми chunk_text.") from exc
    lines = source.splitlines(keepends=True)
    line_start = np.concatenate([[0], np.cumsum([len(line) for line in lines])]).tolist()  # строка n → смещение
    cuts = {1, len(lines) + 1}  # номера строк (с 1), перед которыми режем
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            while first > 1 and lines[first - 2].startswith("#"):  # комментарий вплотную сверху
                first -= 1
            cuts |= {first, node.end_lineno + 1}
    bounds = sorted(cuts)
    pieces = (source[line_start[a - 1] : line_start[b - 1]] for a, b in zip(bounds, bounds[1:], strict=False))
    return [piece.strip() for piece in pieces if piece.strip()]


@dataclass(frozen=True)
class TableChunk:
    """Кусок из ``table_chunks``: ``text == repeated_header + source[start:end]``.

    ``repeated_header`` — повторённая шапка таблицы ("" у прозы и у первого куска таблицы,
    где шапка и так на месте); ``start``/``end`` — где этот кусок в исходном тексте.
    Пример: ``table_chunks("| a | b |\\n|---|---|\\n| 1 | 2 |\\n| 3 | 4 |", rows_per_chunk=1)[1].text``
    → ``'| a | b |\\n|---|---|\\n| 3 | 4 |'``.
    Глава 10. Разнообразие, переранжирование и чанкинг по структуре.
    """

    text: str
    start: int
    end: int
    repeated_header: str = ""


_MD_ROW_RE = re.compile(r"^\s*\|.*\|\s*$")
_MD_RULE_RE = re.compile(r"^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_DELIMITERS = ("\t", ";", ",")


def _table_at(lines: list[str], i: int) -> tuple[int, int] | None:
    """Таблица, начинающаяся со строки i: (число строк шапки, число строк всего) или None."""
    if _MD_ROW_RE.match(lines[i]) and i + 1 < len(lines) and _MD_RULE_RE.match(lines[i + 1]):
        n = 2
        while i + n < len(lines) and _MD_ROW_RE.match(lines[i + n]):
            n += 1
        return (2, n) if n > 2 else None
    for delimiter in _DELIMITERS:  # CSV-подобная: ≥ 3 строк с одинаковым числом разделителей
        count = lines[i].count(delimiter)
        if count == 0:
            continue
        n = 1
        while i + n < len(lines) and lines[i + n].strip() and lines[i + n].count(delimiter) == count:
            n += 1
        if n >= 3:
            return (1, n)
    return None


def table_chunks(text: str, *, rows_per_chunk: int = 5, max_chars: int = 220) -> list[TableChunk]:
    """Разрезать текст с таблицами: таблица — по ``rows_per_chunk`` строк с шапкой в каждом куске.

    Проза между таблицами режется как ``chunk_text(max_chars)``. Таблица — это markdown
    (строки ``| … |`` со строкой ``|---|`` под шапкой) или CSV-подобный блок (≥ 3 строк с
    одинаковым числом ``\\t``, ``;`` или ``,``: это эвристика). Ограничение: кусок с
    повторённой шапкой — не подстрока документа, поэтому в ``Index.build`` этот чанкер
    не подключается; эмбеддь ``[c.text for c in table_chunks(text)]`` сам.
    Пример: ``[c.text for c in table_chunks("Цены.\\n| товар | цена |\\n|---|---|\\n| чай | 50 |", rows_per_chunk=5)]``
    → ``['Цены.', '| товар | цена |\\n|---|---|\\n| чай | 50 |']``.
    Глава 10. Разнообразие, переранжирование и чанкинг по структуре.
    """
    require_text(text)
    rows_per_chunk = require_int(rows_per_chunk, "rows_per_chunk", 1)
    lines = text.splitlines(keepends=True)
    offset = np.concatenate([[0], np.cumsum([len(line) for line in lines])]).tolist()
    chunks: list[TableChunk] = []

    def add(start: int, end: int, header: str = "") -> None:
        piece = text[start:end].rstrip()
        if piece.strip():
            chunks.append(TableChunk(header + piece, start, start + len(piece), header))

    def add_prose(start: int, end: int) -> None:
        for s, e in chunk_spans(text[start:end], max_chars):
            add(start + s, start + e)

    prose_from, i = 0, 0
    while i < len(lines):
        table = _table_at(lines, i)
        if table is None:
            i += 1
            continue
        head, n = table
        add_prose(offset[prose_from], offset[i])
        header = "".join(lines[i : i + head]).rstrip("\r\n") + "\n"
        for first in range(i + head, i + n, rows_per_chunk):
            last = min(first + rows_per_chunk, i + n)
            if first == i + head:  # первый кусок начинается с шапки в самом тексте — её не повторяем
                add(offset[i], offset[last])
            else:
                add(offset[first], offset[last], header)
        prose_from = i = i + n
    add_prose(offset[prose_from], offset[len(lines)])
    return chunks


_CELL_RE = re.compile(r"[^|]*\|?")  # ячейка строки таблицы вместе с чертой после неё
# Конец строки, за которым не продолжение предложения со строчной буквы (перенос в абзаце — как пробел): режем после
# него; сам перевод строки остаётся в конце предыдущего куска.
_HARD_BREAK_RE = re.compile(r"(?<=\n)(?=[ \t]*[^a-zа-яё\s])")


def layout_chunks(text: str, max_chars: int = 220) -> list[str]:
    """``chunk_text`` для своих файлов: режет там же, но не посреди строки таблицы, числа или имени.

    Как в ``chunk_text``, чанк — подряд идущие предложения не длиннее ``max_chars``. Отличия:
    предложение не кончается на сокращении перед именем или инициале («ул. Садовая», «А. Г. Прохоров» —
    правило ``whole_sentences``); строка таблицы (``| … |``) не режется между предложениями; кусок
    длиннее ``max_chars`` режется сначала по строкам (но не там, где следующая строка продолжает предложение со
    строчной буквы; шапка таблицы — вместе со строкой «|---|» под ней), строка таблицы — по ячейкам, и лишь
    потом по словам. Так таблица без точек делится по строкам, а не посреди «30 800». Чанки — куски исходного
    текста по порядку (``Index.build(docs, chunker=layout_chunks)``); им режет команда ``index``.
    Пример: ``layout_chunks("| Тариф | Цена |\\n| Год | 30 800 |", max_chars=20)``
    → ``['| Тариф | Цена |', '| Год | 30 800 |']``. Глава 4. Чанкинг.
    """
    require_text(text)
    max_chars = require_int(max_chars, "max_chars", 1)
    return [text[start:end] for start, end in pack_spans(text, _layout_pieces(text, max_chars), max_chars)]


def _layout_pieces(text: str, max_chars: int) -> list[tuple[int, int]]:
    """Куски для ``layout_chunks``: целые предложения и строки таблиц; длинные — по строкам, ячейкам, словам."""
    units: list[tuple[int, int]] = []
    for start, end in sentence_spans(text):
        # правилам хватает конца предыдущего куска: хвост в 16 символов, а не весь кусок (он бывает огромной таблицей)
        if units and (continues_sentence(text[max(units[-1][0], units[-1][1] - 16) : units[-1][1]], text[start:end])
                      or "\n" not in text[units[-1][1] : start] and _in_table_row(text, start)):
            units[-1] = (units[-1][0], end)
        else:
            units.append((start, end))
    pieces: list[tuple[int, int]] = []
    for start, end in units:
        if end - start <= max_chars:
            pieces.append((start, end))
            continue
        line_start = start
        for line in _HARD_BREAK_RE.split(text[start:end]):
            s, e = line_start + len(line) - len(line.lstrip()), line_start + len(line.rstrip())
            line_start += len(line)
            if pieces and _MD_RULE_RE.match(line) and e - pieces[-1][0] <= max_chars:
                pieces[-1] = (pieces[-1][0], e)  # «|---|» — со своей шапкой
            elif e - s <= max_chars:
                pieces += [(s, e)] if e > s else []
            elif _MD_ROW_RE.match(line):
                pieces += _cut_row(text, s, e, max_chars)
            else:
                pieces += cut_by_words(text, s, e, max_chars)
    return pieces


def _in_table_row(text: str, position: int) -> bool:
    """Стоит ли позиция в строке таблицы ``| … |``."""
    line_start = text.rfind("\n", 0, position) + 1
    line_end = text.find("\n", position)
    return bool(_MD_ROW_RE.match(text[line_start : line_end if line_end >= 0 else len(text)]))


def _cut_row(text: str, start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    """Строка таблицы длиннее max_chars → куски по ячейкам (ячейка длиннее max_chars — по словам)."""
    cells = []
    for cell in _CELL_RE.finditer(text, start, end):
        s, e = cell.start() + len(cell.group()) - len(cell.group().lstrip()), cell.start() + len(cell.group().rstrip())
        if e > s:
            cells += [(s, e)] if e - s <= max_chars else cut_by_words(text, s, e, max_chars)
    return pack_spans(text, cells, max_chars)

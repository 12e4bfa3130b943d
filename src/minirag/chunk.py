"""Документ → чанки по размеру: упаковка предложений до max_chars символов (глава 4).

Это чанкер по умолчанию (``Index.build``). Чанкеры, которые смотрят на содержание — смысловые
границы, код, таблицы (глава 10), — в ``chunkers``.

Предложения складываются в чанк, пока он не длиннее ``max_chars``; предложение длиннее
``max_chars`` режется по границам слов (а слово длиннее ``max_chars`` — по символам).
Каждый чанк — непрерывный кусок исходного текста, и чанки идут в порядке текста.
``overlap`` повторяет в начале чанка последние слова предыдущего (не больше ``overlap``
символов). Все размеры — в символах. Модуль не знает про эмбеддинги и индекс.
"""

from __future__ import annotations

import re

from .errors import MiniRagError
from .text import split_sentences
from .validate import require_int, require_text

_WORD_RE = re.compile(r"\S+")


def cut_by_words(text: str, start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    """Кусок ``text[start:end]`` → куски (start, end) не длиннее max_chars по границам слов (слово длиннее — по символам)."""
    pieces: list[tuple[int, int]] = []
    piece_start = piece_end = None
    for word in _WORD_RE.finditer(text, start, end):
        w_start, w_end = word.start(), word.end()
        while w_end - w_start > max_chars:  # слово длиннее max_chars режем по символам
            if piece_start is not None:
                pieces.append((piece_start, piece_end))
                piece_start = None
            pieces.append((w_start, w_start + max_chars))
            w_start += max_chars
        if piece_start is not None and w_end - piece_start <= max_chars:
            piece_end = w_end
        else:
            if piece_start is not None:
                pieces.append((piece_start, piece_end))
            piece_start, piece_end = w_start, w_end
    if piece_start is not None:
        pieces.append((piece_start, piece_end))
    return pieces


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Где в тексте предложения ``split_sentences``: (start, end) по порядку."""
    spans, cursor = [], 0
    for sentence in split_sentences(text):
        start = text.index(sentence, cursor)
        cursor = start + len(sentence)
        spans.append((start, cursor))
    return spans


def _pieces(text: str, max_chars: int) -> list[tuple[int, int]]:
    """Куски текста (start, end): предложения, а длинные — порезанные по словам."""
    pieces: list[tuple[int, int]] = []
    for start, end in sentence_spans(text):
        pieces += [(start, end)] if end - start <= max_chars else cut_by_words(text, start, end, max_chars)
    return pieces


def chunk_spans(text: str, max_chars: int = 220, overlap: int = 0) -> list[tuple[int, int]]:
    """Границы чанков (start, end) в тексте: ``text[start:end]`` — сам чанк.

    Пример: ``chunk_spans("Одно. Два.", max_chars=5)`` → ``[(0, 5), (6, 10)]``.
    Глава 4. Чанкинг.
    """
    require_text(text)
    max_chars = require_int(max_chars, "max_chars", 1)
    overlap = require_int(overlap, "overlap", 0)
    if overlap >= max_chars:
        raise MiniRagError(
            f"overlap ({overlap}) должен быть меньше max_chars ({max_chars}): иначе чанк "
            f"состоял бы из одного повтора. Возьми overlap около 10–20% от max_chars."
        )
    return pack_spans(text, _pieces(text, max_chars), max_chars, overlap)


def pack_spans(text: str, pieces: list[tuple[int, int]], max_chars: int, overlap: int = 0) -> list[tuple[int, int]]:
    """Сложить куски (start, end), каждый не длиннее max_chars, в чанки не длиннее max_chars по порядку текста."""
    spans: list[tuple[int, int]] = []
    start = end = None
    for p_start, p_end in pieces:
        if start is not None and p_end - start <= max_chars:
            end = p_end
            continue
        if start is not None:
            spans.append((start, end))
            start = _overlap_start(text, start, end, overlap, p_end, max_chars)
        if start is None:
            start = p_start
        end = p_end
    if start is not None:
        spans.append((start, end))
    return spans


def _overlap_start(text: str, start: int, end: int, overlap: int, next_end: int, max_chars: int):
    """Начало последних слов чанка [start, end), которые влезают в overlap и в max_chars."""
    best = None
    for word in reversed(list(_WORD_RE.finditer(text, start, end))):
        w_start = word.start()
        if end - w_start > overlap or next_end - w_start > max_chars:
            break
        best = w_start
    return best


def chunk_text(text: str, max_chars: int = 220, overlap: int = 0) -> list[str]:
    """Разрезать текст на чанки не длиннее max_chars символов, сохраняя порядок текста.

    Пример: ``chunk_text("Одно. Два. Три.", max_chars=220)`` → ``['Одно. Два. Три.']``.
    Глава 4. Чанкинг.
    """
    return [text[start:end] for start, end in chunk_spans(text, max_chars, overlap)]

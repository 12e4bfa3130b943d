"""Общие типы библиотеки: документ, чанк, результат поиска и размеченный запрос.

Все — неизменяемые dataclass: их можно класть в множества и ключи словарей, а поиск не
испортит найденное у вызывающего. Чанк и результат поиска называют своё место в корпусе
парой ``key = (doc_id, chunk_id)`` — по ней сливают выдачи, убирают повторы и ставят цитаты.
Модуль ничего не проверяет и не вычисляет: проверки — в ``validate``, поиск — в ``index``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Document:
    """Документ корпуса: устойчивый ``id``, заголовок и текст.

    Пример: ``Document("vacation-1", "Отпуск", "Отпуск — 28 дней.").id`` → ``'vacation-1'``.
    Глава 4. Чанкинг.
    """

    id: str
    title: str
    text: str


class _Keyed:
    """Общее у чанка и результата поиска: имя чанка в корпусе ``key = (doc_id, chunk_id)``."""

    doc_id: str
    chunk_id: int

    @property
    def key(self) -> tuple[str, int]:
        """Имя чанка в корпусе: ``(doc_id, chunk_id)`` — по нему сливают выдачи и убирают повторы."""
        return (self.doc_id, self.chunk_id)


@dataclass(frozen=True)
class Chunk(_Keyed):
    """Кусок документа с метаданными для цитаты: откуда он и какой он по счёту.

    Пример: ``Chunk("vacation-1", 1, "Отпуск", "Отпуск — 28 дней.").key`` → ``('vacation-1', 1)``.
    Глава 4. Чанкинг.
    """

    doc_id: str
    chunk_id: int
    title: str
    text: str


@dataclass(frozen=True)
class Hit(_Keyed):
    """Результат поиска: место ``rank`` (с 1), оценка ``score`` и сам чанк.

    Пример: ``Hit(1, 0.62, "vacation-1", 1, "Отпуск", "Отпуск — 28 дней.").key`` → ``('vacation-1', 1)``.
    Глава 3. Top-k и порог.
    """

    rank: int
    score: float
    doc_id: str
    chunk_id: int
    title: str
    text: str


def renumber(hits, scores=None) -> list[Hit]:
    """Те же чанки в том же порядке с местами 1, 2, …; с ``scores`` — и с этими оценками.

    Пример: ``[h.rank for h in renumber([hit_b, hit_a])]`` → ``[1, 2]``. Глава 9. BM25 и гибридный поиск.
    """
    hits = list(hits)
    scores = [hit.score for hit in hits] if scores is None else [float(s) for s in scores]
    return [Hit(rank, score, h.doc_id, h.chunk_id, h.title, h.text)
            for rank, (h, score) in enumerate(zip(hits, scores, strict=True), start=1)]


@dataclass(frozen=True)
class LabeledQuery:
    """Размеченный запрос: текст, id документов, которые на него отвечают, категория и часть набора.

    ``relevant`` — все документы, где человек нашёл бы ответ; пустой кортеж — ответа в корпусе
    нет. ``category`` — ключ из ``CATEGORIES``. ``split`` — «dev» (на ней подбирают порог, k,
    настройки) или «test» (на ней только измеряют результат); "" — запрос вне набора.
    Пример: ``LabeledQuery("Сколько дней длится отпуск?", ("vacation-annual",), "exact").split`` → ``''``.
    Глава 7. Оценка поиска.
    """

    text: str
    relevant: tuple[str, ...]  # id документов с ответом; () — ответа в корпусе нет
    category: str  # один из ключей CATEGORIES
    split: str = ""  # "dev" — на них подбирают настройки, "test" — на них только измеряют

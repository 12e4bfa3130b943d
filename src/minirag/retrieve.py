"""Поиск для ответа: выбранный метод и порог отказа, который решает за весь вопрос.

``Retriever(index, method)`` ищет косинусом, BM25 или гибридом (RRF) и отдаёт лучшие k чанков
через ``search(query, k, threshold)`` — тот интерфейс, который ждёт ``answer``. Порог здесь — не
фильтр каждого чанка, а ворота вопроса: если лучший чанк по косинусу ниже порога, вопрос не о
корпусе и найдено ничего; если выше — отдаются лучшие k, даже те, что ниже порога. Так порог,
калиброванный по лучшим оценкам вопросов не о корпусе (``calibrate``), сравнивается ровно с тем,
что калибровалось, — с лучшей оценкой, — а генератор выбирает предложения из k кандидатов, а не
из одного-двух, переживших фильтр. Порог — всегда косинус эмбеддера индекса, при любом методе.
``term_weights`` — веса слов по чанкам этого индекса (``sentences.TermWeights``): ``answer`` отдаёт
их экстрактивному генератору, и тот меряет предложение долей веса вопроса, а не числа его слов.
Модуль не строит индекс и не пишет ответ: это ``index`` и ``generate``.
"""

from __future__ import annotations

from functools import cached_property

from .hybrid import hybrid_search, index_bm25
from .index import Index, require_index
from .sentences import TermWeights
from .text import tokenize
from .topk import top_k
from .types import Hit, renumber
from .validate import require_choice, require_k, require_threshold

METHODS = ("cosine", "bm25", "hybrid")


class Retriever:
    """Поиск методом ``method`` (cosine, bm25 или hybrid) с порогом-воротами: ``search(query, k, threshold)``.

    Пример: ``Retriever(index).search("Как приготовить борщ?", k=8, threshold=0.5)`` → ``[]``;
    ``len(Retriever(index).search("Сколько дней отпуска?", k=8, threshold=0.2))`` → ``8``.
    Глава 10. От поиска к ответу.
    """

    def __init__(self, index: Index, method: str = "cosine"):
        self.index = require_index(index)
        self.method = require_choice(method, "method", METHODS)
        self.embedder = index.embedder  # answer берёт его для запасного экстрактивного генератора
        self._bm25 = index_bm25(index) if method != "cosine" else None

    def __repr__(self) -> str:
        return f"Retriever({self.index!r}, method={self.method!r})"

    @cached_property
    def term_weights(self) -> TermWeights:
        """Веса слов (idf) по текстам чанков индекса — с заголовками, как они эмбеддились; строятся один раз."""
        return TermWeights(self.index.indexed_text(i) for i in range(len(self.index)))

    def search(self, query: str, k: int = 3, threshold: float | None = None) -> list[Hit]:
        """Лучшие k чанков методом поиска; пусто, если лучший косинус ниже ``threshold``."""
        k = require_k(k)
        scores = self.index.scores(query)
        if threshold is not None and not len(top_k(scores, 1, require_threshold(threshold))):
            return []  # лучший чанк не прошёл порог (с той же погрешностью, что у index.search)
        if self.method == "cosine":
            return [self.index.hit(int(i), scores[i], rank) for rank, i in enumerate(top_k(scores, k), start=1)]
        if self.method == "hybrid":
            return hybrid_search(self.index, query, k=k, bm25=self._bm25)
        stem = bool(getattr(self.index.embedder, "stem", False))
        found = self._bm25.search(tokenize(query, stem=stem), k)
        return renumber(self.index.hit(i, score) for i, score in found)

"""Двухэтапный поиск: быстро найти N кандидатов, затем переоценить их оценщиком пар.

Первый этап (косинус, BM25, гибрид) сравнивает запрос с чанком по отдельности посчитанным
признакам. Оценщик пар читает запрос и чанк вместе, поэтому видит больше: какие слова
запроса есть в чанке и стоят ли они рядом и по порядку. Он медленнее, поэтому получает
только N кандидатов. Оценщик — всё, у чего есть ``score(query, texts) -> scores``:

* ``LexicalPairScorer`` — прозрачный и офлайн: доля слов запроса в чанке, взвешенная по idf,
  плюс бонус за близость соседних слов запроса;
* ``CrossEncoderScorer`` — обёртка над cross-encoder из sentence-transformers (пакет
  импортируется только при создании; модель может скачаться — это решает пользователь).

Модуль не обучает оценщиков и не скачивает ничего сам.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from .errors import MiniRagError
from .index import Index, require_index
from .text import tokenize
from .types import Hit, renumber
from .validate import require_hits, require_int, require_k, require_number, require_text, require_texts


@runtime_checkable
class PairScorer(Protocol):
    """Оценщик пар: ``score(query, texts)`` — по числу на текст, больше значит релевантнее.

    Пример: ``isinstance(LexicalPairScorer(), PairScorer)`` → ``True``.
    Глава 10. Разнообразие, переранжирование и чанкинг по структуре.
    """

    def score(self, query: str, texts: Sequence[str]) -> Sequence[float]: ...


def _lucene_idf(df: int, n: int) -> float:
    return math.log(1 + (n - df + 0.5) / (df + 0.5))


class LexicalPairScorer:
    """Лексический оценщик пар: покрытие слов запроса по idf + бонус за их близость в чанке.

    ``score = coverage + proximity_weight · proximity``, где
    coverage = Σ idf найденных слов запроса / Σ idf всех слов запроса (от 0 до 1);
    proximity — среднее по соседним парам слов запроса (a, b) с весами idf(a) + idf(b):
    1/d, если b стоит через d токенов после a (d ≤ window), 0.5/d — если в обратном порядке,
    иначе 0. idf = ln(1 + (N − df + 0.5)/(df + 0.5)) по ``idf_texts``, а без них — по самим
    переоцениваемым текстам. Пример: ``LexicalPairScorer(window=3).score("срок пропуска", ["Срок пропуска — год."])``
    → ``array([1.5])`` (все слова есть, и стоят подряд).
    Глава 10. Разнообразие, переранжирование и чанкинг по структуре.
    """

    def __init__(self, idf_texts: Sequence[str] | None = None, *, proximity_weight: float = 0.5,
                 window: int = 3, stem: bool = False):
        self.proximity_weight = require_number(proximity_weight, "proximity_weight", 0)
        self.window = require_int(window, "window", 1, "Окно считается в токенах.")
        self.stem = bool(stem)
        self._df: Counter[str] | None = None
        self._n = 0
        if idf_texts is not None:
            self._df, self._n = self._doc_freqs([tokenize(t, stem=self.stem) for t in require_texts(idf_texts, "idf_texts")])

    @staticmethod
    def _doc_freqs(docs: list[list[str]]) -> tuple[Counter[str], int]:
        return Counter(term for doc in docs for term in set(doc)), len(docs)

    def _proximity(self, a: list[int], b: list[int]) -> float:
        """1/d для b через d токенов после a, 0.5/d для обратного порядка; ближайшая пара."""
        best = 0.0
        for i in a:
            for j in b:
                d = abs(j - i)
                if 0 < d <= self.window:
                    best = max(best, (1.0 if j > i else 0.5) / d)
        return best

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Оценки текстов для запроса (float64, по порядку ``texts``).

        Пример: ``LexicalPairScorer().score("срок пропуска", ["Срок пропуска — год.", "Год."])`` → ``array([1.5, 0.])``.
        Глава 10. Разнообразие, переранжирование и чанкинг по структуре.
        """
        terms = list(dict.fromkeys(tokenize(require_text(query, "Запрос"), stem=self.stem)))
        docs = [tokenize(t, stem=self.stem) for t in require_texts(texts)]
        df, n = (self._df, self._n) if self._df is not None else self._doc_freqs(docs)
        idf = {t: _lucene_idf(df.get(t, 0), n) for t in terms}
        pairs = list(zip(terms, terms[1:], strict=False))
        total_idf = sum(idf.values())
        total_pairs = sum(idf[a] + idf[b] for a, b in pairs)
        scores = np.zeros(len(docs))
        for row, doc in enumerate(docs):
            positions: dict[str, list[int]] = {}
            for position, token in enumerate(doc):
                positions.setdefault(token, []).append(position)
            coverage = sum(idf[t] for t in terms if t in positions) / total_idf if total_idf > 0 else 0.0
            closeness = sum((idf[a] + idf[b]) * self._proximity(positions.get(a, []), positions.get(b, []))
                            for a, b in pairs)
            proximity = closeness / total_pairs if total_pairs > 0 else 0.0
            scores[row] = coverage + self.proximity_weight * proximity
        return scores


class CrossEncoderScorer:
    """Оценщик пар на cross-encoder из sentence-transformers (пакет ставится отдельно).

    ``model_name`` — имя или локальный путь модели (например, многоязычная
    «cross-encoder/mmarco-mMiniLMv2-L12-H384-v1»); модель, которой нет на диске, скачается
    при создании — для офлайна передай локальный путь. ``model`` — уже загруженный объект с
    ``predict(pairs)``: тогда sentence-transformers не нужен.
    Пример: ``rerank(query, hits, k=3, scorer=CrossEncoderScorer("путь/к/модели"))``.
    Глава 10. Разнообразие, переранжирование и чанкинг по структуре.
    """

    def __init__(self, model_name: str | None = None, *, model=None):
        if model is None:
            if not isinstance(model_name, str) or not model_name.strip():
                raise MiniRagError("Укажи model_name — имя или путь cross-encoder модели — или передай model=.")
            try:
                from sentence_transformers import CrossEncoder
            except ImportError as exc:
                raise MiniRagError(
                    "Для CrossEncoderScorer нужен пакет sentence-transformers, а он не установлен: "
                    "pip install sentence-transformers. Без него используй LexicalPairScorer() — он работает офлайн."
                ) from exc
            model = CrossEncoder(model_name)
        if not callable(getattr(model, "predict", None)):
            raise MiniRagError("model должен уметь predict(pairs) — как sentence_transformers.CrossEncoder.")
        self.model = model

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Оценки cross-encoder для пар (запрос, текст). Пример: ``CrossEncoderScorer("путь/к/модели").score("отпуск", texts)``.

        Глава 10. Разнообразие, переранжирование и чанкинг по структуре.
        """
        pairs = [(require_text(query, "Запрос"), text) for text in require_texts(texts)]
        if not pairs:
            return np.zeros(0)
        return np.asarray(self.model.predict(pairs), dtype=np.float64).reshape(len(pairs))


def rerank(query: str, hits: Sequence[Hit], k: int = 3, *, scorer: PairScorer | None = None) -> list[Hit]:
    """Переоценить найденные чанки оценщиком пар и оставить лучшие k; ``score`` — оценка оценщика.

    При равных оценках сохраняется порядок первого этапа. По умолчанию ``LexicalPairScorer()``.
    Пример: ``rerank("срок пропуска", [Hit(1, 0.9, "a", 1, "А", "Год."), Hit(2, 0.5, "b", 1, "Б", "Срок пропуска — год.")],
    k=1)[0].doc_id`` → ``'b'``.
    Глава 10. Разнообразие, переранжирование и чанкинг по структуре.
    """
    k = require_k(k)
    hits = require_hits(hits)
    scorer = scorer if scorer is not None else LexicalPairScorer()
    if not callable(getattr(scorer, "score", None)):
        raise MiniRagError("scorer должен уметь score(query, texts) -> scores, как LexicalPairScorer.")
    scores = np.asarray(scorer.score(query, [hit.text for hit in hits]), dtype=np.float64)
    if scores.shape != (len(hits),) or not np.all(np.isfinite(scores)):
        raise MiniRagError(f"Оценщик вернул {scores.shape} оценок (или NaN), а ждали по одному числу "
                           f"на каждый из {len(hits)} чанков.")
    order = np.argsort(-scores, kind="stable")[:k]
    return renumber([hits[i] for i in order], scores[order])


def search_rerank(index: Index, query: str, k: int = 3, *, candidates: int = 20,
                  scorer: PairScorer | None = None) -> list[Hit]:
    """Два этапа: ``candidates`` лучших чанков по косинусу, затем ``rerank`` до k.

    Пример: ``search_rerank(index, "Сколько стоит восстановление пропуска?", k=1)[0].doc_id`` → ``'office-pass'``
    (косинус ставит его третьим).
    Глава 10. Разнообразие, переранжирование и чанкинг по структуре.
    """
    k = require_k(k)
    n = max(require_int(candidates, "candidates", 1), k)
    return rerank(query, require_index(index).search(query, k=n), k, scorer=scorer)

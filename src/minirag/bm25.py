"""BM25: лексический поиск по точным словам, два варианта формулы.

Оценка документа d для запроса q — сумма по токенам запроса (повтор в запросе считается
дважды, как в rank_bm25 и bm25s): ``idf(t) · tf_part(tf, |d|)``, где tf — сколько раз t
встречается в d, а |d| — длина d в токенах; ``K = k1·(1 − b + b·|d|/avgdl)``.

* ``variant="lucene"`` (как Lucene ≥ 8 и bm25s с method="lucene"):
  ``idf = ln(1 + (N − df + 0.5)/(df + 0.5))`` — всегда > 0; ``tf_part = tf/(tf + K)``.
* ``variant="okapi"`` (как ``BM25Okapi`` из rank_bm25):
  ``idf = ln((N − df + 0.5)/(df + 0.5))``, а отрицательный idf (слово в большей половине
  документов) заменяется на ``0.25 · средний idf словаря`` (если частых слов много, этот
  пол сам отрицателен — как и в rank_bm25); ``tf_part = tf·(k1 + 1)/(tf + K)``. Слово ровно
  в половине документов получает idf = ln 1 = 0.

Оценки каждой пары (слово, документ) считаются один раз при построении и хранятся как
«постинги» (CSC-подобно): для слова — массив номеров документов и массив готовых оценок.
Запрос складывает постинги своих слов, поэтому его цена пропорциональна длине этих
постингов, а не размеру корпуса. Модуль работает с токенами и номерами документов: он не
токенизирует (для этого ``tokenize``), не знает про чанки и ``Index`` (это ``hybrid``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .errors import MiniRagError
from .topk import top_k
from .validate import require_choice, require_k, require_number, require_tokens

VARIANTS = ("lucene", "okapi")
OKAPI_EPSILON = 0.25  # как epsilon в rank_bm25.BM25Okapi: пол для отрицательного idf


def lucene_idf(n_docs, df):
    """idf варианта Lucene: ``ln(1 + (N − df + 0.5)/(df + 0.5))`` — всегда > 0; числа или массивы numpy.

    Пример: ``round(float(lucene_idf(3, 0)), 4)`` → ``2.0794``. Глава 9. BM25 и гибридный поиск.
    """
    return np.log(1 + (n_docs - df + 0.5) / (df + 0.5))


class BM25:
    """Индекс BM25 над токенами документов: ``scores(query_tokens)`` и ``search(query_tokens, k)``.

    Пример: ``BM25([tokenize("отпуск летом"), tokenize("пропуск в офис")]).search(tokenize("отпуск"))``
    → ``[(0, 0.3046…)]``.
    Глава 9. BM25 и гибридный поиск.
    """

    def __init__(self, corpus_tokens: Sequence[Sequence[str]], *, k1: float = 1.5, b: float = 0.75,
                 variant: str = "lucene"):
        if isinstance(corpus_tokens, str) or not isinstance(corpus_tokens, Sequence):
            raise MiniRagError("corpus_tokens должен быть списком документов, каждый — список токенов: "
                               "[tokenize(text) for text in texts].")
        docs = [require_tokens(doc, f"Документ №{i}") for i, doc in enumerate(corpus_tokens)]
        self.variant = require_choice(variant, "variant", VARIANTS)
        self.k1 = require_number(k1, "k1", 0.0, hint="Обычно k1=1.5, b=0.75.")
        self.b = require_number(b, "b", 0.0, 1.0, hint="Обычно k1=1.5, b=0.75.")
        if not docs:
            raise MiniRagError("Корпус пуст: передай в BM25 хотя бы один документ (список токенов).")
        lengths = np.array([len(doc) for doc in docs], dtype=np.int64)
        if lengths.sum() == 0:
            raise MiniRagError("В корпусе нет ни одного токена: BM25 нечего считать. Проверь тексты документов.")
        self.n_docs = len(docs)
        self.avgdl = int(lengths.sum()) / self.n_docs  # как в rank_bm25: сумма длин / число документов

        # Словарь: слово → номер. Все токены корпуса — один массив номеров.
        self.vocab: dict[str, int] = {}
        term_ids = np.array([self.vocab.setdefault(t, len(self.vocab)) for doc in docs for t in doc], dtype=np.int64)
        doc_ids = np.repeat(np.arange(self.n_docs, dtype=np.int64), lengths)
        # Пары (слово, документ): np.unique по ключу слово·N + документ сортирует их по слову,
        # а внутри слова — по документу; счётчик пары — это tf.
        pairs, tf = np.unique(term_ids * self.n_docs + doc_ids, return_counts=True)
        terms, self._docs = pairs // self.n_docs, pairs % self.n_docs
        df = np.bincount(terms, minlength=len(self.vocab))
        self._indptr = np.concatenate([[0], np.cumsum(df)])  # постинги слова t: [indptr[t], indptr[t+1])

        idf = self._idf(df.astype(np.float64))
        tf = tf.astype(np.float64)
        K = self.k1 * (1 - self.b + self.b * lengths[self._docs] / self.avgdl)
        tf_part = tf * (self.k1 + 1) / (tf + K) if variant == "okapi" else tf / (tf + K)
        self._weights = idf[terms] * tf_part  # готовая оценка каждой пары (слово, документ)
        self.idf = dict(zip(self.vocab, idf.tolist(), strict=True))

    def _idf(self, df: np.ndarray) -> np.ndarray:
        n = self.n_docs
        if self.variant == "lucene":
            return lucene_idf(n, df)
        raw = np.log(n - df + 0.5) - np.log(df + 0.5)
        return np.where(raw < 0, OKAPI_EPSILON * raw.mean(), raw)

    def __len__(self) -> int:
        return self.n_docs

    def __repr__(self) -> str:
        return f"BM25({self.n_docs} документов, {len(self.vocab)} слов, variant={self.variant!r})"

    def _postings(self, query_tokens) -> tuple[np.ndarray, np.ndarray]:
        """Склеенные постинги слов запроса: номера документов и готовые оценки."""
        tokens = require_tokens(query_tokens, "Запрос")
        spans = [(self._indptr[i], self._indptr[i + 1]) for i in (self.vocab.get(t) for t in tokens) if i is not None]
        if not spans:
            return np.empty(0, dtype=np.int64), np.empty(0)
        docs = np.concatenate([self._docs[s:e] for s, e in spans])
        weights = np.concatenate([self._weights[s:e] for s, e in spans])
        return docs, weights

    def scores(self, query_tokens: Sequence[str]) -> np.ndarray:
        """Оценка BM25 каждого документа (float64, по порядку корпуса); слово вне словаря даёт 0.

        Пример: ``BM25([["кот"], ["пёс"]]).scores(["кот"]).round(4)`` → ``array([0.2773, 0.])``.
        Глава 9. BM25 и гибридный поиск.
        """
        docs, weights = self._postings(query_tokens)
        return np.bincount(docs, weights=weights, minlength=self.n_docs)

    def search(self, query_tokens: Sequence[str], k: int = 3) -> list[tuple[int, float]]:
        """Лучшие k документов как пары (номер документа, оценка) — только те, где есть слово запроса.

        Считаются лишь документы из постингов запроса; при равной оценке раньше меньший номер.
        Пример: ``BM25([["кот"], ["пёс"]]).search(["кот"], k=3)`` → ``[(0, 0.2772…)]``.
        Глава 9. BM25 и гибридный поиск.
        """
        docs, weights = self._postings(query_tokens)
        k = require_k(k)
        if docs.size == 0:
            return []
        found, where = np.unique(docs, return_inverse=True)
        totals = np.bincount(where, weights=weights)
        return [(int(found[i]), float(totals[i])) for i in top_k(totals, k)]

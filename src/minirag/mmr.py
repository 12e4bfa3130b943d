"""MMR (maximal marginal relevance): выдача, в которой меньше повторов.

Top-k по косинусу часто приносит k почти одинаковых чанков. MMR (Carbonell, Goldstein, 1998)
выбирает по одному: следующим берётся кандидат с наибольшим
``λ·cos(запрос, d) − (1 − λ)·max cos(d, уже выбранный)``. λ=1 — обычный рейтинг по
косинусу, λ=0 — только разнообразие. Первым всегда идёт самый похожий на запрос: при
пустом списке выбранных штрафа нет, а при λ=0 формула не различала бы кандидатов.
Модуль не ищет сам по всему индексу: он переупорядочивает готовых кандидатов.
"""

from __future__ import annotations

import numpy as np

from .errors import MiniRagError
from .index import Index, require_index
from .topk import top_k
from .types import Hit
from .validate import require_int, require_k, require_number
from .vectors import l2_normalize


def mmr(query_vector, candidate_vectors, k: int, lambda_: float = 0.5) -> list[int]:
    """Номера k кандидатов в порядке выбора MMR; при равенстве — меньший номер.

    Пример: ``mmr([0.8, 0, 0.6], [[1, 0, 0], [0.96, 0.28, 0], [0.6, 0, 0.8], [0, 1, 0]], k=3)`` → ``[2, 0, 3]``.
    Глава 10. Разнообразие, переранжирование и чанкинг по структуре.
    """
    k = require_k(k)
    lambda_ = require_number(lambda_, "lambda_", 0, 1, "1 — только релевантность, 0 — только разнообразие; обычно 0.5.")
    query = l2_normalize(query_vector)
    candidates = l2_normalize(candidate_vectors)
    if query.ndim != 1 or candidates.ndim != 2 or candidates.shape[1] != query.shape[0]:
        raise MiniRagError(f"Нужен вектор запроса (dim,) и матрица кандидатов (n, dim), а получены формы "
                           f"{query.shape} и {candidates.shape}. Эмбеддь всё одним эмбеддером.")
    relevance = candidates @ query
    similarity = candidates @ candidates.T
    chosen = [int(np.argmax(relevance))]
    closest = similarity[:, chosen[0]].copy()  # max cos с уже выбранными, для каждого кандидата
    while len(chosen) < min(k, len(candidates)):
        score = lambda_ * relevance - (1 - lambda_) * closest
        score[chosen] = -np.inf
        chosen.append(int(np.argmax(score)))
        closest = np.maximum(closest, similarity[:, chosen[-1]])
    return chosen


def mmr_search(index: Index, query: str, k: int = 3, *, candidates: int = 20, lambda_: float = 0.5) -> list[Hit]:
    """Лучшие ``candidates`` чанков по косинусу, из них k по MMR; ``score`` — косинус с запросом.

    Пример: ``[h.doc_id for h in mmr_search(index, "Сколько календарных дней ежегодного отпуска?", k=3)]``
    → ``['vacation-annual', 'laptop-damage', 'vacation-unpaid']`` (без MMR — дважды vacation-annual).
    Глава 10. Разнообразие, переранжирование и чанкинг по структуре.
    """
    k = require_k(k)
    query_vector = require_index(index).query_vector(query)
    scores = index.vectors @ query_vector
    pool = top_k(scores, max(require_int(candidates, "candidates", 1), k))
    chosen = pool[mmr(query_vector, index.vectors[pool], k, lambda_)]
    return [index.hit(int(i), scores[i], rank) for rank, i in enumerate(chosen, start=1)]

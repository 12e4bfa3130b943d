"""Поиск «сначала документы»: лучшие документы по вектору документа, потом лучшие чанки внутри них.

Вектор документа — нормированное среднее векторов его чанков (``doc_vectors``).
``hierarchical_search`` выбирает ``n_docs`` документов, чей вектор ближе всего к запросу, и
ищет k чанков только в них: чанки одного подходящего документа не вытесняет случайно похожий
чанк чужого. Соседние чанки найденного добавляет ``neighbors``. Модуль не строит отдельного
индекса документов: векторы документов считаются из векторов чанков ``Index`` при каждом вызове.
"""

from __future__ import annotations

import numpy as np

from .index import Index, require_index
from .topk import top_k
from .types import Hit
from .validate import require_int, require_k
from .vectors import l2_normalize


def doc_vectors(index: Index) -> np.ndarray:
    """Вектор каждого документа (по порядку ``index.docs``): нормированное среднее векторов его чанков.

    Пример: ``doc_vectors(index).shape`` → ``(len(index.docs), 96)``. Глава 10. Разнообразие, переранжирование и чанкинг по структуре.
    """
    rows = require_index(index).doc_rows
    sums = np.zeros((len(index.docs), index.vectors.shape[1]))
    np.add.at(sums, rows, index.vectors.astype(np.float64))
    return l2_normalize(sums)  # среднее и сумма смотрят в одну сторону: после нормировки равны


def hierarchical_search(index: Index, query: str, k: int = 3, *, n_docs: int = 2) -> list[Hit]:
    """Сначала ``n_docs`` лучших документов по косинусу с вектором документа, затем k лучших чанков в них.

    ``score`` — косинус чанка с запросом. Пример: ``[h.key for h in hierarchical_search(index, q, k=2, n_docs=1)]``
    → ``[('vacation-annual', 1), ('vacation-annual', 3)]``.
    Глава 10. Разнообразие, переранжирование и чанкинг по структуре.
    """
    k = require_k(k)
    n_docs = require_int(n_docs, "n_docs", 1, "Это сколько лучших документов просмотреть, например n_docs=2.")
    query_vector = require_index(index).query_vector(query)  # проверяет запрос и эмбеддер
    scores = index.vectors @ query_vector
    best_docs = top_k(doc_vectors(index) @ query_vector, n_docs)
    inside = np.flatnonzero(np.isin(index.doc_rows, best_docs))
    return [index.hit(int(inside[i]), scores[inside[i]], rank)
            for rank, i in enumerate(top_k(scores[inside], k), start=1)]

"""Соседи найденного чанка: больше контекста вокруг того, что нашёл поиск.

``expand_neighbors`` добавляет к каждому найденному чанку соседей по документу
(chunk_id − 1, − 2, … и + 1, + 2, …), пока их косинус с найденным чанком (или с запросом)
не ниже порога ``threshold``: мысль, разрезанная чанкингом, собирается обратно.
Модуль не склеивает тексты соседей в один: каждый чанк остаётся отдельным ``Hit`` со своим
(doc_id, chunk_id), чтобы на него можно было сослаться. Расширение запроса (переформулировки
генератором) — не здесь, а в ``rewrite``; поиск «сначала документы» — в ``hierarchical``.
"""

from __future__ import annotations

from collections.abc import Sequence

from .errors import MiniRagError
from .index import Index, require_index
from .topk import SCORE_TOLERANCE
from .types import Hit, renumber
from .validate import renamed, require_choice, require_hits, require_int, require_number


def expand_neighbors(index: Index, query: str, hits: Sequence[Hit], *, threshold: float = 0.3,
                     against: str = "hit", max_steps: int = 2, floor: float | None = None) -> list[Hit]:
    """Добавить к каждому найденному чанку соседей того же документа, пока их косинус ≥ threshold.

    Косинус считается с найденным чанком (``against="hit"``) или с запросом
    (``against="query"``); в каждую сторону не больше ``max_steps`` соседей, и шаг
    останавливается на первом соседе ниже порога (порог — как в ``top_k``, с допуском
    ``SCORE_TOLERANCE``). Результат: для каждого найденного — его соседи слева, он сам, соседи
    справа (в порядке документа), без повторов; ``score`` соседа — его косинус с запросом.
    ``floor`` — старое имя ``threshold``. Пример:
    ``[h.key for h in expand_neighbors(index, "отпуск", index.search("отпуск", k=1), threshold=0.0)]``
    → ``[('vacation-annual', 1), ('vacation-annual', 2), ('vacation-annual', 3)]``.
    Глава 10. Разнообразие, переранжирование и чанкинг по структуре.
    """
    require_choice(against, "against", ("hit", "query"))
    threshold = renamed(threshold, floor, default=0.3, name="threshold", old_name="floor")
    threshold = require_number(threshold, "threshold", hint="Это косинус: число от −1 до 1.")
    max_steps = require_int(max_steps, "max_steps", 1)
    require_index(index)
    hits = require_hits(hits)
    scores = index.scores(query)
    vectors = index.vectors
    result: list[Hit] = []
    seen: set[tuple[str, int]] = set()
    for hit in hits:
        center = _row(index, hit.doc_id, hit.chunk_id)
        if center is None:
            raise MiniRagError(f"Чанка {hit.doc_id}#{hit.chunk_id} нет в индексе: hits должны быть из этого индекса.")
        block: dict[int, list[int]] = {-1: [], 1: []}
        for step in (-1, 1):
            for distance in range(1, max_steps + 1):
                j = _row(index, hit.doc_id, hit.chunk_id + step * distance)
                if j is None:  # край документа
                    break
                similarity = float(scores[j]) if against == "query" else float(vectors[j] @ vectors[center])
                if similarity < threshold - SCORE_TOLERANCE:
                    break
                block[step].append(j)
        group = [index.hit(j, scores[j]) for j in reversed(block[-1])] + [hit]
        group += [index.hit(j, scores[j]) for j in block[1]]
        for h in group:
            if h.key not in seen:
                seen.add(h.key)
                result.append(h)
    return renumber(result)


def _row(index: Index, doc_id: str, chunk_id: int) -> int | None:
    """Строка матрицы для чанка или None, если такого чанка нет (край документа)."""
    try:
        return index.position(doc_id, chunk_id)
    except MiniRagError:
        return None

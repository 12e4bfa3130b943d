"""Оценка поиска на размеченных запросах: hit@k, precision@k, recall@k, MRR.

Метрики считаются по списку doc_id найденных чанков в порядке ранга (один документ
может встретиться несколько раз — разными чанками). Запросы без релевантных
документов («ответа нет») в средние метрики не входят: для них важна только
лучшая оценка, по которой калибруют порог «не найдено». Модуль не строит графиков.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from .errors import MiniRagError
from .validate import require_k


def _ranked(ranked: Sequence[str]) -> list[str]:
    if isinstance(ranked, str):
        raise MiniRagError("ranked — это список doc_id по рангу, а не одна строка: оберни её в список.")
    return list(ranked)


def _prefix(ranked: Sequence[str], k: int) -> list[str]:
    return _ranked(ranked)[: require_k(k)]


def hit_at_k(ranked: Sequence[str], relevant, k: int) -> float:
    """1.0, если среди первых k есть хоть один релевантный документ, иначе 0.0.

    Пример: ``hit_at_k(["a", "b", "c"], {"c"}, k=3)`` → ``1.0``. Глава 7. Оценка поиска.
    """
    return float(any(doc_id in set(relevant) for doc_id in _prefix(ranked, k)))


def precision_at_k(ranked: Sequence[str], relevant, k: int) -> float:
    """Доля релевантных среди первых k мест (пустые места считаются промахами).

    Пример: ``precision_at_k(["a", "b", "c"], {"a", "c"}, k=3)`` → ``0.666…``. Глава 7. Оценка поиска.
    """
    relevant = set(relevant)
    return sum(doc_id in relevant for doc_id in _prefix(ranked, k)) / k


def recall_at_k(ranked: Sequence[str], relevant, k: int) -> float:
    """Доля релевантных документов, попавших в первые k мест.

    Пример: ``recall_at_k(["a", "b", "c"], {"a", "d"}, k=3)`` → ``0.5``. Глава 7. Оценка поиска.
    """
    relevant = set(relevant)
    if not relevant:
        raise MiniRagError("У запроса нет релевантных документов: recall для него не определён. "
                           "Такие запросы оценивают порогом «не найдено», а не recall.")
    return len(relevant & set(_prefix(ranked, k))) / len(relevant)


def reciprocal_rank(ranked: Sequence[str], relevant) -> float:
    """1 / место первого релевантного документа; 0.0, если его нет в списке.

    Пример: ``reciprocal_rank(["a", "b", "c"], {"b"})`` → ``0.5``. Глава 7. Оценка поиска.
    """
    relevant = set(relevant)
    return next((1.0 / rank for rank, doc_id in enumerate(_ranked(ranked), start=1) if doc_id in relevant), 0.0)


def random_hit_at_k(index, labeled, k: int = 3) -> float:
    """Ожидаемый hit@k, если брать k чанков индекса наугад: базовая линия для любого hit@k.

    Для запроса с r чанками релевантных документов из N: ``1 − C(N − r, k) / C(N, k)``, среднее по
    запросам с ответом. Пример: ``random_hit_at_k(index, DEMO_QUERIES, k=3)`` → ``0.09…``.
    Глава 7. Оценка поиска.
    """
    k = require_k(k)
    answerable = [q for q in labeled if q.relevant]
    if not answerable:
        raise MiniRagError("Нет запросов с ответом: базовая линия hit@k для них не определена.")
    n = len(index)
    doc_ids = [chunk.doc_id for chunk in index.chunks]
    values = [1 - math.comb(n - sum(d in q.relevant for d in doc_ids), k) / math.comb(n, k) for q in answerable]
    return sum(values) / len(values)


@dataclass
class EvaluationReport:
    """Итог ``evaluate``: строка на запрос, средние по категориям и по всем запросам.

    Пример: ``evaluate(index, DEMO_QUERIES).per_category["exact"]["hit@3"]`` → ``1.0``. Глава 7. Оценка поиска.
    """

    ks: tuple[int, ...]
    per_query: list[dict] = field(default_factory=list)
    per_category: dict[str, dict[str, float]] = field(default_factory=dict)
    overall: dict[str, float] = field(default_factory=dict)

    @property
    def metrics(self) -> list[str]:
        return [f"{name}@{k}" for name in ("hit", "precision", "recall") for k in self.ks] + ["mrr", "top_score"]

    def table(self, digits: int = 2) -> str:
        """Текстовая таблица средних по категориям и по всем запросам."""
        names = ["категория", "n", *self.metrics]
        rows = [[cat, str(int(v["n"]))] + [_fmt(v.get(m), digits) for m in self.metrics]
                for cat, v in {**self.per_category, "все": self.overall}.items()]
        widths = [max(len(r[i]) for r in [names, *rows]) for i in range(len(names))]
        return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths)) for r in [names, *rows])

    def __str__(self) -> str:
        return self.table()


def _fmt(value, digits: int) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _mean(rows: list[dict], metric: str) -> float | None:
    values = [row[metric] for row in rows if row.get(metric) is not None]
    return sum(values) / len(values) if values else None


def evaluate(index, labeled, ks: Sequence[int] = (1, 3, 5), threshold: float | None = None) -> EvaluationReport:
    """Прогнать размеченные запросы через индекс и посчитать метрики по запросам и категориям.

    ``index`` — всё, у чего есть ``search_many(queries, k=, threshold=)``, обычно ``Index``;
    ``labeled`` — последовательность объектов с полями ``text``, ``relevant`` и ``category``
    (как ``DEMO_QUERIES``). Пример: ``evaluate(index, DEMO_QUERIES).overall["n"]`` → ``80``;
    таблица — ``print(evaluate(index, DEMO_QUERIES))``. Глава 7. Оценка поиска.
    """
    ks = tuple(require_k(k) for k in ks)
    if not ks:
        raise MiniRagError("ks не должен быть пустым: например, ks=(1, 3, 5).")
    labeled = list(labeled)
    if not labeled:
        raise MiniRagError("Нет размеченных запросов: передай, например, DEMO_QUERIES.")
    results = index.search_many([q.text for q in labeled], k=max(ks), threshold=threshold)
    report = EvaluationReport(ks)
    for query, hits in zip(labeled, results):
        ranked = [hit.doc_id for hit in hits]
        row = {"query": query.text, "category": query.category, "relevant": tuple(query.relevant),
               "ranked": tuple(ranked), "top_score": hits[0].score if hits else None}
        answerable = bool(query.relevant)
        for k in ks:
            row[f"hit@{k}"] = hit_at_k(ranked, query.relevant, k) if answerable else None
            row[f"precision@{k}"] = precision_at_k(ranked, query.relevant, k) if answerable else None
            row[f"recall@{k}"] = recall_at_k(ranked, query.relevant, k) if answerable else None
        row["mrr"] = reciprocal_rank(ranked, query.relevant) if answerable else None
        report.per_query.append(row)
    groups: dict[str, list[dict]] = defaultdict(list)
    for row in report.per_query:
        groups[row["category"]].append(row)
    for category, rows in groups.items():
        report.per_category[category] = {"n": len(rows), **{m: _mean(rows, m) for m in report.metrics}}
    report.overall = {"n": len(report.per_query), **{m: _mean(report.per_query, m) for m in report.metrics}}
    return report

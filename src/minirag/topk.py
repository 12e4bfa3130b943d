"""Оценки → лучшие k: сначала порог, потом k, при равенстве — меньший номер.

Одно правило отбора для всей библиотеки: ``Index.search``, BM25, MMR и поиск по документам
выбирают кандидатов через ``top_k``. Порог проходит оценка ``≥ threshold − SCORE_TOLERANCE``:
косинус, посчитанный разными способами (цикл, ``np.dot``, матрица на вектор, float32),
отличается в последних знаках, а «равная порогу оценка проходит» должно выполняться при любом
честном способе счёта. Модуль не считает оценок: он только выбирает лучшие из готовых.
"""

from __future__ import annotations

import numpy as np

from .errors import MiniRagError
from .validate import require_k, require_threshold

SCORE_TOLERANCE = 1e-6


def top_k(scores, k: int, threshold: float | None = None) -> np.ndarray:
    """Номера лучших k оценок по убыванию: сначала порог, потом k; при равенстве — меньший номер.

    Порог проходит оценка ``≥ threshold − SCORE_TOLERANCE`` (1e-6): погрешность счёта не
    отбрасывает оценку, равную порогу. Пример: ``top_k([0.2, 0.9, 0.2], k=2)`` → ``array([1, 0])``. Глава 3. Top-k и порог.
    """
    k = require_k(k)
    threshold = require_threshold(threshold)
    scores = np.asarray(scores)
    if scores.ndim != 1:
        raise MiniRagError(f"scores должны быть одномерным массивом, а форма {scores.shape}.")
    if threshold is None:
        passed, sub = None, scores
    else:
        passed = np.flatnonzero(scores >= threshold - SCORE_TOLERANCE)
        sub = scores[passed]
    if k < sub.size:
        kth = sub[np.argpartition(sub, sub.size - k)[sub.size - k]]  # k-я по величине оценка
        better = np.flatnonzero(sub > kth)
        ties = np.flatnonzero(sub == kth)[: k - better.size]  # равные — в порядке индекса
        chosen = np.concatenate([better, ties])
    else:
        chosen = np.arange(sub.size)
    chosen = chosen[np.lexsort((chosen, -sub[chosen]))]
    return chosen if passed is None else passed[chosen]

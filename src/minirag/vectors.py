"""Операции над векторами: нормализация и косинус.

Нулевой вектор (у текста без токенов) остаётся нулевым и даёт косинус 0.0 —
никогда не NaN. Модуль не хранит векторы и не ищет: это делает ``index``.
"""

from __future__ import annotations

import numpy as np

from .errors import MiniRagError


def _as_float_array(x, what: str) -> np.ndarray:
    try:
        array = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise MiniRagError(
            f"{what} должен быть вектором из чисел (список или numpy-массив): {exc}"
        ) from exc
    if array.ndim not in (1, 2) or array.size == 0:
        raise MiniRagError(
            f"{what} должен быть непустым вектором (1D) или матрицей (2D), "
            f"а получена форма {array.shape}."
        )
    if not np.all(np.isfinite(array)):
        raise MiniRagError(f"В {what} есть NaN или бесконечность: проверь, откуда он взялся.")
    return array


def l2_normalize(x) -> np.ndarray:
    """Разделить вектор (или каждую строку матрицы) на его длину ‖x‖.

    Нулевой вектор остаётся нулевым. Пример: ``l2_normalize([3, 4])`` → ``[0.6, 0.8]``.
    Глава 2. Косинус.
    """
    array = _as_float_array(x, "x")
    norms = np.linalg.norm(array, axis=-1, keepdims=True)
    return np.divide(array, norms, out=np.zeros_like(array), where=norms > 0)


def cosine(a, b) -> float:
    """Косинус угла между векторами: a·b / (‖a‖·‖b‖); для нулевого вектора 0.0.

    Пример: ``cosine([1, 0], [1, 1])`` → ``0.7071…``. Глава 2. Косинус.
    """
    a = _as_float_array(a, "a")
    b = _as_float_array(b, "b")
    if a.ndim != 1 or a.shape != b.shape:
        raise MiniRagError(
            f"cosine сравнивает два вектора одной длины, а получены формы "
            f"{a.shape} и {b.shape}. Эмбеддь оба текста одним эмбеддером."
        )
    norm = float(np.linalg.norm(a) * np.linalg.norm(b))
    if norm == 0.0:
        return 0.0
    return float(np.dot(a, b) / norm)

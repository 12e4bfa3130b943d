"""Число и существительное по-русски: «1 документ», «3 документа», «5 документов».

Одна функция на весь курс: книга, лабораторные, проверка и отчёты печатают «N
<существительное>» только через неё. Модуль не склоняет слова сам — формы передаёт
вызывающий (именительный падеж для 1, 2 и 5: «документ», «документа», «документов»).
Дробное число берёт форму для 2 («2,5 балла»), как принято в русском.
"""

from __future__ import annotations

import math
from numbers import Real

from .errors import MiniRagError


def plural_form(n: Real, one: str, few: str, many: str) -> str:
    """Форма существительного для числа ``n``: ``one`` (1, 21), ``few`` (2–4, 22) или ``many`` (5–20, 25).

    Пример: ``plural_form(22, "балл", "балла", "баллов")`` → ``'балла'``. Глава 0. Введение.
    """
    if isinstance(n, bool) or not isinstance(n, Real) or not math.isfinite(n):
        raise MiniRagError(f"plural_form ждёт конечное число, а получено {n!r}.")
    if n != int(n):
        return few
    n = abs(int(n))
    if n % 10 == 1 and n % 100 != 11:
        return one
    if 2 <= n % 10 <= 4 and not 12 <= n % 100 <= 14:
        return few
    return many


def plural(n: Real, one: str, few: str, many: str) -> str:
    """Число и существительное в нужной форме: ``plural(5, "документ", "документа", "документов")``.

    Целое печатается как есть, дробное — через ``:g`` («2.5 балла»).
    Пример: ``plural(21, "слово", "слова", "слов")`` → ``'21 слово'``. Глава 0. Введение.
    """
    form = plural_form(n, one, few, many)
    shown = str(int(n)) if n == int(n) else f"{float(n):g}"
    return f"{shown} {form}"

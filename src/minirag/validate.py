"""Проверки входа для всей библиотеки: каждая возвращает проверенное значение или бросает ``MiniRagError``.

Сообщение называет параметр так, как его передал пользователь (``n_docs``, ``max_chars``,
``candidates``), говорит, что пришло, и советует, что передать. Функции библиотеки
проверяют вход здесь, а не своими ``isinstance``: одно правило — одно сообщение.
Модуль не знает про ``Index`` (его проверяет ``index.require_index``) и ничего не вычисляет.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from .errors import MiniRagError
from .types import Document, Hit


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def require_int(value: object, name: str, minimum: int, hint: str = "") -> int:
    """Целое ≥ ``minimum`` (bool — не число) как int.

    Пример: ``require_int(np.int64(2), "n_docs", 1)`` → ``2``. Глава 3. Top-k и порог.
    """
    if not _is_int(value) or value < minimum:
        raise MiniRagError(f"{name} должен быть целым числом ≥ {minimum}, получено {value!r}." + (f" {hint}" if hint else ""))
    return int(value)


def require_k(k: object) -> int:
    """Сколько результатов вернуть: целое ≥ 1. Пример: ``require_k(3)`` → ``3``. Глава 3. Top-k и порог."""
    return require_int(k, "k", 1, "Обычно берут k=3…5.")


def require_number(value: object, name: str, low: float = -math.inf, high: float = math.inf, hint: str = "") -> float:
    """Конечное число от ``low`` до ``high`` (включительно) как float.

    Пример: ``require_number(0.5, "lambda_", 0, 1)`` → ``0.5``. Глава 10. Разнообразие, переранжирование и чанкинг по структуре.
    """
    if not _is_number(value) or not math.isfinite(value) or not low <= value <= high:
        bounds = (f" от {low:g} до {high:g}" if math.isfinite(low) and math.isfinite(high)
                  else f" ≥ {low:g}" if math.isfinite(low) else f" ≤ {high:g}" if math.isfinite(high) else "")
        raise MiniRagError(f"{name} должен быть конечным числом{bounds}, получено {value!r}." + (f" {hint}" if hint else ""))
    return float(value)


def require_threshold(threshold: object) -> float | None:
    """Порог оценки: конечное число или None (без порога).

    Пример: ``require_threshold(None)`` → ``None``. Глава 3. Top-k и порог.
    """
    if threshold is None:
        return None
    if not _is_number(threshold) or not math.isfinite(threshold):
        raise MiniRagError(f"threshold должен быть числом (косинус от -1 до 1) или None, получено {threshold!r}.")
    return float(threshold)


def require_choice(value: object, name: str, choices: Sequence[str]) -> str:
    """Одно из разрешённых значений.

    Пример: ``require_choice("hit", "against", ("hit", "query"))`` → ``'hit'``. Глава 9. BM25 и гибридный поиск.
    """
    if value not in choices:
        raise MiniRagError(f"{name} должен быть одним из {', '.join(map(repr, choices))}, получено {value!r}.")
    return value


def require_text(value: object, what: str = "текст") -> str:
    """Строка как есть; не строка — понятная ошибка. Пример: ``require_text("да")`` → ``'да'``. Глава 1. Эмбеддинги."""
    if not isinstance(value, str):
        raise MiniRagError(
            f"{what} должен быть строкой (str), а получено {type(value).__name__}: "
            f"{value!r:.60}. Передай текст в кавычках или преобразуй его через str()."
        )
    return value


def require_texts(texts: object, what: str = "texts") -> list[str]:
    """Список строк. Пример: ``require_texts(["a", "b"])`` → ``['a', 'b']``. Глава 9. BM25 и гибридный поиск."""
    if isinstance(texts, str) or not isinstance(texts, Sequence):
        raise MiniRagError(f"{what} должен быть списком текстов; одну строку оберни в список: [text].")
    return [require_text(text, f"Текст №{i}") for i, text in enumerate(texts)]


def require_tokens(tokens: object, what: str) -> list[str]:
    """Список токенов (list[str]). Пример: ``require_tokens(["кот"], "Запрос")`` → ``['кот']``. Глава 9. BM25 и гибридный поиск."""
    if isinstance(tokens, str) or not isinstance(tokens, Sequence) or not all(isinstance(t, str) for t in tokens):
        raise MiniRagError(
            f"{what} должен быть списком токенов (list[str]), а получено {type(tokens).__name__}: {tokens!r:.60}. "
            f"Разбей текст на токены: tokenize(text)."
        )
    return list(tokens)


def require_hits(hits: object) -> list[Hit]:
    """Список ``Hit`` — то, что вернул поиск. Пример: ``require_hits(())`` → ``[]``. Глава 6. Промпт и цитаты."""
    if isinstance(hits, (str, bytes)) or not isinstance(hits, Iterable):
        raise MiniRagError("hits должен быть списком Hit — тем, что вернул index.search(query, k).")
    hits = list(hits)
    if not all(isinstance(hit, Hit) for hit in hits):
        raise MiniRagError("hits должен быть списком Hit — тем, что вернул index.search(query, k).")
    return hits


def require_documents(docs: object) -> list[Document]:
    """Непустой список документов с уникальными id; словарь {'id', 'title', 'text'} тоже годится.

    Пример: ``require_documents([{"id": "a", "title": "А", "text": "Текст."}])[0].id`` → ``'a'``. Глава 5. Индекс и поиск.
    """
    if isinstance(docs, (str, bytes)) or not isinstance(docs, Iterable):
        raise MiniRagError("docs должен быть списком документов Document(id, title, text).")
    documents = [_document(doc, i) for i, doc in enumerate(docs)]
    if not documents:
        raise MiniRagError("Корпус пуст: передай в Index.build хотя бы один документ.")
    ids = [d.id for d in documents]
    repeated = sorted({doc_id for doc_id in ids if ids.count(doc_id) > 1})
    if repeated:
        raise MiniRagError(
            f"id документов должны быть уникальными, а повторяются: {', '.join(repeated)}. "
            f"Дай каждому документу свой id — по нему строятся цитаты."
        )
    return documents


def _document(doc: object, position: int) -> Document:
    if isinstance(doc, Mapping) and {"id", "title", "text"} <= set(doc):
        doc = Document(doc["id"], doc["title"], doc["text"])
    if not isinstance(doc, Document):
        raise MiniRagError(
            f"Документ №{position} должен быть Document(id, title, text) или словарём с ключами "
            f"'id', 'title', 'text', а получено {type(doc).__name__}."
        )
    if not isinstance(doc.id, str) or not doc.id.strip():
        raise MiniRagError(f"У документа №{position} id должен быть непустой строкой, получено {doc.id!r}.")
    require_text(doc.title, f"Заголовок документа {doc.id!r}")
    require_text(doc.text, f"Текст документа {doc.id!r}")
    return doc


def renamed(value, old_value, *, default, name: str, old_name: str):
    """Значение параметра, переданного новым именем ``name`` или старым ``old_name`` — но не обоими.

    Старое имя работает как раньше и без предупреждений: им ещё пользуются главы и лабораторные.
    Пример: ``renamed(60, 30, default=60, name="rank_constant", old_name="k")`` → ``30``. Глава 9. BM25 и гибридный поиск.
    """
    if old_value is None:
        return value
    if value != default:
        raise MiniRagError(f"Передай только {name}: {old_name} — его старое имя, оба сразу не нужны.")
    return old_value


def index_then_query(index, query):
    """Пара (index, query) и тогда, когда её передали в старом порядке (query, index).

    Функции над индексом принимают сначала индекс, потом запрос, как ``index.search(query)``;
    ``answer``, ``hyde``, ``expanded_search`` и ``iterative_search`` раньше принимали
    (query, index), и такие вызовы работают по-прежнему: запрос — строка, индекс — нет.
    Пример: ``index_then_query("отпуск", index)`` → ``(index, 'отпуск')``. Глава 11. Генератор и настоящие модели.
    """
    if isinstance(index, str) and not isinstance(query, str):
        return query, index
    return index, query

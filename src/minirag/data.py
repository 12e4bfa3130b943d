"""Корпус из файла: документы и размеченные запросы; демо-корпус курса и свой корпус того же формата.

Демо-корпус (правила вымышленной компании «Ладья», 42 документа и 80 запросов по 12 категориям)
лежит в ``demo/corpus.json`` рядом с модулем; формат файла и описание корпуса — в
``demo/README.md``. Свой корпус того же формата читает ``load_corpus(path)``. Модуль только
читает и проверяет данные: ошибка называет файл, место (``docs[3]``, ``queries[12]``) и что
исправить. Он ничего не ищет и не считает метрик.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .errors import MiniRagError
from .types import Document, LabeledQuery

DEMO_PATH = Path(__file__).parent / "demo" / "corpus.json"
SPLITS = ("dev", "test")  # dev — подбирать настройки, test — только измерять подобранное
_DOC_FIELDS = ("id", "title", "text")
_QUERY_FIELDS = ("text", "relevant", "category", "split")


@dataclass(frozen=True)
class Corpus:
    """Корпус из файла: документы, размеченные запросы и названия их категорий.

    Пример: ``load_corpus(DEMO_PATH).split("dev")[0].split`` → ``'dev'``. Глава 7. Оценка поиска.
    """

    docs: tuple[Document, ...]
    queries: tuple[LabeledQuery, ...] = ()
    categories: Mapping[str, str] = field(default_factory=dict)

    def split(self, name: str) -> tuple[LabeledQuery, ...]:
        """Запросы одной части набора, ``"dev"`` или ``"test"``, в порядке файла."""
        if name not in SPLITS:
            raise MiniRagError(f"Часть набора — 'dev' или 'test', получено {name!r}.")
        return tuple(q for q in self.queries if q.split == name)


def load_corpus(path: str | os.PathLike) -> Corpus:
    """Прочитать корпус из JSON-файла формата ``demo/README.md`` и проверить его.

    Пример: ``len(load_corpus(DEMO_PATH).docs)`` → ``42``. Глава 7. Оценка поиска.
    """
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MiniRagError(f"Файла корпуса {path} нет: проверь путь.") from None
    except UnicodeDecodeError:
        raise MiniRagError(f"Файл корпуса {path} не в кодировке UTF-8: пересохрани его в UTF-8.") from None
    except json.JSONDecodeError as exc:
        raise MiniRagError(f"{path} — не JSON: строка {exc.lineno}, столбец {exc.colno}: {exc.msg}. "
                           f"Частые причины — запятая после последнего элемента и кавычки «» вместо \"\".") from None
    return parse_corpus(raw, path.name)


def parse_corpus(raw: object, source: str = "корпус") -> Corpus:
    """Проверить корпус, уже прочитанный из JSON (словарь с docs, queries, categories), и собрать его.

    Пример: ``parse_corpus({"docs": [{"id": "a", "title": "А", "text": "Текст."}]}).docs[0].id`` → ``'a'``.
    Глава 7. Оценка поиска.
    """
    if not isinstance(raw, dict):
        raise MiniRagError(f"{source}: корпус — JSON-объект {{...}} с ключами docs, queries, categories, "
                           f"а в файле {_kind(raw)}.")
    _exact_keys(raw, ("docs",), ("queries", "categories"), source)
    categories = raw.get("categories", {})
    if not isinstance(categories, dict) or not all(isinstance(v, str) and v.strip() for v in categories.values()):
        raise MiniRagError(f"{source}: categories — объект «id категории: название», например "
                           f'{{"exact": "точные термины"}}.')
    docs = tuple(Document(*_fields(item, _DOC_FIELDS, f"{source}, docs[{i}]"))
                 for i, item in enumerate(_items(raw, "docs", source)))
    if not docs:
        raise MiniRagError(f"{source}: в docs нет ни одного документа.")
    ids = _unique([d.id for d in docs], f"{source}: id документов повторяются", "по id строятся цитаты")
    queries = tuple(_query(item, f"{source}, queries[{i}]", ids, categories)
                    for i, item in enumerate(_items(raw, "queries", source)))
    _unique([q.text for q in queries], f"{source}: тексты запросов повторяются", "у каждого запроса своя разметка")
    return Corpus(docs, queries, dict(categories))


def _exact_keys(item: dict, required: tuple[str, ...], optional: tuple[str, ...], where: str) -> None:
    missing = [repr(key) for key in required if key not in item]
    extra = [repr(key) for key in item if key not in required + optional]
    problems = [f"нет {'поля' if len(missing) == 1 else 'полей'} {', '.join(missing)}"] * bool(missing) + [
        f"{'лишнее поле' if len(extra) == 1 else 'лишние поля'} {', '.join(extra)} (опечатка в имени?)"] * bool(extra)
    if problems:
        raise MiniRagError(f"{where}: {'; '.join(problems)}. Нужны поля: {', '.join(required + optional)}.")


def _items(raw: dict, key: str, source: str) -> list:
    items = raw.get(key, [])
    if not isinstance(items, list):
        raise MiniRagError(f"{source}: {key} — массив [...], а получено {_kind(items)}.")
    return items


def _fields(item: object, fields: tuple[str, ...], where: str) -> list:
    """Значения полей объекта по порядку; все, кроме relevant, — непустые строки."""
    if not isinstance(item, dict):
        raise MiniRagError(f"{where}: нужен объект {{...}} с полями {', '.join(fields)}, а получено {_kind(item)}.")
    _exact_keys(item, fields, (), where)
    for key in fields:
        if key != "relevant" and (not isinstance(item[key], str) or not item[key].strip()):
            raise MiniRagError(f"{where}: {key} должен быть непустой строкой, получено {item[key]!r:.60}.")
    return [item[key] for key in fields]


def _kind(value: object) -> str:
    """Как значение записано в JSON — для сообщений об ошибке."""
    kinds = {dict: "объект {...}", list: "массив [...]", str: "строка", bool: "true/false", type(None): "null"}
    return kinds.get(type(value), "число")


def _unique(values: list[str], problem: str, why: str) -> set[str]:
    repeated = sorted({v for v in values if values.count(v) > 1})
    if repeated:
        raise MiniRagError(f"{problem}: {', '.join(map(repr, repeated))}. Сделай их разными: {why}.")
    return set(values)


def _query(item: object, where: str, ids: set[str], categories: Mapping[str, str]) -> LabeledQuery:
    text, relevant, category, split = _fields(item, _QUERY_FIELDS, where)
    if not isinstance(relevant, list) or not all(isinstance(doc_id, str) for doc_id in relevant):
        raise MiniRagError(f"{where}: relevant — массив id документов ([] — ответа нет), получено {relevant!r:.60}.")
    unknown = [doc_id for doc_id in relevant if doc_id not in ids]
    if unknown:
        raise MiniRagError(f"{where}: в relevant id, которых нет в docs: {', '.join(map(repr, unknown))}.")
    if category not in categories:
        raise MiniRagError(f"{where}: категории {category!r} нет в categories "
                           f"({', '.join(categories) or 'пусто'}): добавь её туда или исправь опечатку.")
    if split not in SPLITS:
        raise MiniRagError(f"{where}: split — 'dev' (подбирать настройки) или 'test' (только измерять), "
                           f"получено {split!r}.")
    return LabeledQuery(text, tuple(relevant), category, split)


DEMO = load_corpus(DEMO_PATH)
DEMO_DOCS: tuple[Document, ...] = DEMO.docs
DEMO_QUERIES: tuple[LabeledQuery, ...] = DEMO.queries
CATEGORIES: dict[str, str] = dict(DEMO.categories)  # id категории → русское название
DEMO_DEV = DEMO.split("dev")  # подбирать настройки — только на них
DEMO_TEST = DEMO.split("test")  # измерять подобранное — только на них

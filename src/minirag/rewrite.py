"""Переписать запрос генератором: HyDE, расширение запроса, итеративный поиск и кэш запросов.

Генератор (``generate(prompt) -> str``) помогает найти, а не отвечает: HyDE ищет по
эмбеддингу гипотетического ответа, расширение запроса (``expand_query``, ``expanded_search``) —
по нескольким переформулировкам, слитым RRF, итеративный поиск спрашивает, чего не хватает,
и ищет ещё (не больше ``max_rounds`` поисков). Если генератор упал или промолчал, функция не
бросает исключение, а ищет по исходному запросу и отмечает это в ``Retrieval.fallback``.
``QueryCache`` запоминает результаты, чтобы не звать модель дважды за одним и тем же.
Модуль не пишет ответов (это ``generate``), не переранжирует чанки моделью и не добавляет
соседние чанки к найденным (это ``neighbors``).
"""

from __future__ import annotations

import hashlib
import re
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .errors import MiniRagError
from .hybrid import rrf
from .plural import plural
from .prompt import REFUSAL
from .text import tokenize
from .types import Hit, renumber
from .validate import index_then_query, renamed, require_int, require_k, require_text

HYDE_PROMPT = (
    "Напиши короткий абзац (2–3 предложения), каким мог бы быть ответ на вопрос во внутренних "
    "документах компании. Пиши только сам абзац, без вступлений.\n\nВопрос: {query}\nАбзац:"
)
EXPAND_PROMPT = (
    "Перепиши поисковый запрос {n} разными способами: другими словами, синонимами, полными "
    "названиями вместо сокращений. Каждый вариант — в отдельной строке, без нумерации и пояснений."
    "\n\nЗапрос: {query}\nВарианты:"
)
DONE = "ГОТОВО"
MISSING_PROMPT = (
    "Ниже вопрос и найденные фрагменты. Если во фрагментах есть всё для ответа, напиши одно слово "
    f"{DONE}. Иначе напиши один короткий поисковый запрос о том, чего не хватает, и больше ничего."
    "\n\nФрагменты:\n{context}\n\nВопрос: {query}\nЗапрос:"
)
_BULLET_RE = re.compile(r"^\s*(?:[-*•–—]|\d+[.)]|[a-zа-я][.)])\s*", re.IGNORECASE)


@dataclass(frozen=True)
class Retrieval:
    """Итог поиска с генератором: чанки, запросы, по которым искали, и был ли откат к обычному поиску.

    Пример: ``hyde(index, "Сколько дней отпуска?", chat).queries`` — абзац, который написала модель.
    Глава 12. Переписать запрос: HyDE, расширение и командная строка.
    """

    hits: tuple[Hit, ...]
    queries: tuple[str, ...]
    fallback: bool = False
    reason: str = ""


def _index_digest(index) -> str:
    """Отпечаток эмбеддера плюс SHA-256 матрицы векторов: одинаков только у одинаковых индексов."""
    digest = _DIGESTS.get(index)
    if digest is None:
        digest = hashlib.sha256(index.vectors.tobytes()).hexdigest()[:16]
        _DIGESTS[index] = digest
    return f"{index.fingerprint}#{digest}"


_DIGESTS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # векторы индекса не меняются


class QueryCache:
    """Кэш результатов поиска: ключ — метод, запрос, индекс (эмбеддер и содержимое), генератор и параметры.

    Отпечатка эмбеддера мало: два корпуса с одним эмбеддером дали бы общий кэш, поэтому в
    ключ входит и хеш матрицы векторов. Старые записи вытесняются после ``maxsize``.
    Пример: ``cache = QueryCache(); hyde(index, q, chat, cache=cache)`` — второй такой вызов модель не зовёт.
    Глава 12. Переписать запрос: HyDE, расширение и командная строка.
    """

    def __init__(self, maxsize: int = 1024):
        self.maxsize = require_int(maxsize, "maxsize", 1)
        self.hits = self.misses = 0
        self._data: OrderedDict = OrderedDict()

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"QueryCache({plural(len(self), 'запись', 'записи', 'записей')}, попаданий {self.hits}, промахов {self.misses})"

    def get_or_compute(self, method: str, index, query: str, compute: Callable[[], object], **params):
        """Вернуть запомненный результат или посчитать ``compute()`` и запомнить (кроме откатов).

        Старый порядок ``(method, query, index, …)`` тоже работает.
        Пример: ``QueryCache().get_or_compute("search", index, "отпуск", lambda: "найдено", k=3)`` → ``'найдено'``.
        Глава 12. Переписать запрос: HyDE, расширение и командная строка.
        """
        index, query = index_then_query(index, query)
        key = (method, require_text(query, "Запрос"), _index_digest(index), tuple(sorted(params.items())))
        if key in self._data:
            self.hits += 1
            self._data.move_to_end(key)
            return self._data[key]
        self.misses += 1
        result = compute()
        if not getattr(result, "fallback", False):  # откат не запоминаем: сервер может ожить
            self._data[key] = result
            if len(self._data) > self.maxsize:
                self._data.popitem(last=False)
        return result


def _ask(generator, prompt: str) -> str:
    reply = generator.generate(prompt)
    if not isinstance(reply, str):
        raise MiniRagError(f"generate вернул {type(reply).__name__}, а нужна строка")
    return reply.strip()


def _fallback(index, query, k, threshold, reason: str, hits: Sequence[Hit] | None = None,
              queries: Sequence[str] = ()) -> Retrieval:
    if hits is None:
        hits = index.search(query, k=k, threshold=threshold)
    return Retrieval(tuple(renumber(hits)), tuple(queries) or (query,), True, reason)


def _cached(cache, method, index, query, generator, compute, **params):
    if cache is None:
        return compute()
    return cache.get_or_compute(method, index, query, compute, generator=repr(generator), **params)


def hyde(index, query: str, generator, k: int = 3, threshold: float | None = None, *,
         cache: QueryCache | None = None) -> Retrieval:
    """HyDE: генератор пишет гипотетический ответ, и поиск идёт по его эмбеддингу, а не по вопросу.

    Гипотетический ответ похож на документ больше, чем короткий вопрос; его факты могут быть
    выдуманы, но ищем мы по словам и смыслу, а не верим им. Старый порядок ``(query, index, …)``
    тоже работает. Пример: ``hyde(index, "Сколько дней отпуска?", OllamaChat()).hits``.
    Глава 12. Переписать запрос: HyDE, расширение и командная строка.
    """
    index, query = index_then_query(index, query)
    require_text(query, "Запрос")
    require_k(k)

    def compute() -> Retrieval:
        try:
            hypothetical = _ask(generator, HYDE_PROMPT.format(query=query.strip()))
        except Exception as exc:  # noqa: BLE001 — любая ошибка генератора ведёт к обычному поиску
            return _fallback(index, query, k, threshold, f"{type(generator).__name__}: {exc}")
        if not tokenize(hypothetical) or REFUSAL.rstrip(".").lower() in hypothetical.lower():
            return _fallback(index, query, k, threshold, "генератор не написал гипотетический ответ")
        return Retrieval(tuple(renumber(index.search(hypothetical, k=k, threshold=threshold))), (hypothetical,))

    return _cached(cache, "hyde", index, query, generator, compute, k=k, threshold=threshold)


def expand_query(query: str, generator, n: int = 3) -> list[str]:
    """Исходный запрос и до n его переформулировок от генератора (без нумерации, повторов и пустых).

    Пример: ``expand_query("ДМС", chat, n=2)`` → ``['ДМС', 'добровольное медицинское страхование', …]``.
    Глава 12. Переписать запрос: HyDE, расширение и командная строка.
    """
    require_text(query, "Запрос")
    require_int(n, "n", 1, "Это сколько переформулировок попросить, например n=3.")
    reply = _ask(generator, EXPAND_PROMPT.format(n=n, query=query.strip()))
    variants = [query.strip()]
    for line in reply.splitlines():
        line = _BULLET_RE.sub("", line).strip().strip("\"'«»“”").strip()
        if tokenize(line) and line.casefold() not in {v.casefold() for v in variants}:
            variants.append(line)
    return variants[: n + 1]


def expanded_search(index, query: str, generator, k: int = 3, threshold: float | None = None, *, n: int = 3,
                    candidates: int = 10, rank_constant: float = 60, cache: QueryCache | None = None,
                    rrf_k: float | None = None) -> Retrieval:
    """Поиск по запросу и его переформулировкам: лучшие ``candidates`` каждого, слитые RRF, top-k.

    Порог отсекает кандидатов каждого запроса по косинусу; ``score`` результата — оценка RRF
    с константой ``rank_constant`` (``rrf_k`` — её старое имя). Старый порядок
    ``(query, index, …)`` тоже работает. Пример: ``expanded_search(index, "ДМС", chat, k=3).hits``.
    Глава 12. Переписать запрос: HyDE, расширение и командная строка.
    """
    index, query = index_then_query(index, query)
    require_text(query, "Запрос")
    k = require_k(k)
    candidates = max(require_int(candidates, "candidates", 1), k)
    rank_constant = renamed(rank_constant, rrf_k, default=60, name="rank_constant", old_name="rrf_k")

    def compute() -> Retrieval:
        try:
            queries = expand_query(query, generator, n)
        except Exception as exc:  # noqa: BLE001
            return _fallback(index, query, k, threshold, f"{type(generator).__name__}: {exc}")
        found = {}
        rankings = []
        for hits in index.search_many(queries, k=candidates, threshold=threshold):
            rankings.append([h.key for h in hits])
            found.update({h.key: h for h in hits})
        fused = rrf(rankings, rank_constant)[:k]
        return Retrieval(tuple(renumber([found[key] for key, _ in fused], [score for _, score in fused])),
                         tuple(queries))

    return _cached(cache, "expanded", index, query, generator, compute, k=k, threshold=threshold, n=n,
                   candidates=candidates, rank_constant=rank_constant)


def iterative_search(index, query: str, generator, k: int = 3, threshold: float | None = None, *,
                     max_rounds: int = 3, cache: QueryCache | None = None) -> Retrieval:
    """Итеративный поиск: найти k чанков, спросить генератор, чего не хватает, искать снова.

    Останавливается, когда генератор ответил ``ГОТОВО``, повторил запрос, новых чанков не
    нашлось или сделано ``max_rounds`` поисков. Чанки копятся без повторов в порядке
    находки. Старый порядок ``(query, index, …)`` тоже работает.
    Пример: ``iterative_search(index, "Кто согласует отпуск и когда?", chat).queries``.
    Глава 12. Переписать запрос: HyDE, расширение и командная строка.
    """
    index, query = index_then_query(index, query)
    require_text(query, "Запрос")
    require_k(k)
    require_int(max_rounds, "max_rounds", 1)

    def compute() -> Retrieval:
        queries = [query]
        found = {h.key: h for h in index.search(query, k=k, threshold=threshold)}
        for _ in range(max_rounds - 1):
            context = "\n".join(f"[{n}] {h.text}" for n, h in enumerate(found.values(), start=1)) or "(ничего)"
            try:
                reply = _ask(generator, MISSING_PROMPT.format(context=context, query=query.strip()))
            except Exception as exc:  # noqa: BLE001 — найденное до сбоя не теряем
                return _fallback(index, query, k, threshold, f"{type(generator).__name__}: {exc}",
                                 list(found.values()), queries)
            lines = [line.strip().strip("\"'«»“”").strip() for line in reply.splitlines() if tokenize(line)]
            if not lines or DONE.lower() in reply.lower() or lines[0].casefold() in {q.casefold() for q in queries}:
                break
            queries.append(lines[0])
            new = [h for h in index.search(lines[0], k=k, threshold=threshold) if h.key not in found]
            if not new:
                break
            found.update({h.key: h for h in new})
        return Retrieval(tuple(renumber(found.values())), tuple(queries))

    return _cached(cache, "iterative", index, query, generator, compute, k=k, threshold=threshold,
                   max_rounds=max_rounds)

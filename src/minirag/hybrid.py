"""Гибридный поиск: косинус + BM25, слитые по RRF, и принудительные точные совпадения.

Косинус ловит смысл (насколько его видит эмбеддер), BM25 — точные слова. Их оценки
несравнимы (косинус от −1 до 1, BM25 от 0 до ∞), поэтому сливаются не оценки, а места:
reciprocal rank fusion (RRF), с константой ``rank_constant`` (так её зовёт и Elasticsearch).
Чанки двух списков сопоставляются по имени (doc_id, chunk_id), а не по позиции в списке. Фраза в кавычках или номер «№ 8821» в запросе
ставит чанки, где она есть, в начало выдачи. Модуль не обучает веса слияния и не
нормирует оценки: RRF устроен так, чтобы это было не нужно.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence

from .bm25 import BM25
from .errors import MiniRagError
from .index import Index, require_index
from .text import tokenize
from .topk import top_k
from .types import Hit, renumber
from .validate import renamed, require_hits, require_int, require_k, require_number, require_text

# «…», "…", “…”, „…“ — фраза; № 8821 (пробел после № не обязателен) — номер.
_QUOTED_RE = re.compile(r"«([^«»]+)»|\"([^\"]+)\"|“([^”]+)”|„([^“”]+)[“”]")
_NUMBER_RE = re.compile(r"№\s*([0-9][0-9a-zа-яё/\-]*)", re.IGNORECASE)


def rrf(rankings: Sequence[Sequence[Hashable]], rank_constant: float = 60, *,
        k: float | None = None) -> list[tuple[Hashable, float]]:
    """Слить несколько ранжированных списков: оценка = Σ 1/(rank_constant + место), место считается с 1.

    Так в статье Cormack, Clarke, Büttcher (2009), константа 60. В версии с местами от 0 первый
    получает 1/c вместо 1/(c+1) — то же самое, что места с 1 и константа c−1: порядок почти
    всегда тот же, числа чуть другие. При равных оценках раньше тот, кто раньше встретился,
    если читать списки по очереди. ``k`` — старое имя ``rank_constant``.
    Пример: ``rrf([["a", "b"], ["b", "c"]])[0]`` → ``('b', 0.0325…)``. Глава 9. BM25 и гибридный поиск.
    """
    if isinstance(rankings, (str, bytes)) or not isinstance(rankings, Sequence):
        raise MiniRagError("rankings должен быть списком ранжированных списков, например [[\"a\", \"b\"], [\"b\"]].")
    rank_constant = renamed(rank_constant, k, default=60, name="rank_constant", old_name="k")
    rank_constant = require_number(rank_constant, "rank_constant", 0, hint="Это константа RRF (раньше — k); обычно 60.")
    scores: dict[Hashable, float] = {}
    for n, ranking in enumerate(rankings):
        if isinstance(ranking, (str, bytes)) or not isinstance(ranking, Sequence):
            raise MiniRagError(f"Список №{n} должен быть последовательностью ключей, а получено {ranking!r:.60}.")
        if len(set(ranking)) != len(ranking):
            raise MiniRagError(f"В списке №{n} есть повторы: у каждого ключа одно место. Убери дубликаты.")
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (rank_constant + rank)
    # sorted устойчив: при равной оценке ключи остаются в порядке первого появления
    return sorted(scores.items(), key=lambda item: -item[1])


def _stem_of(index: Index) -> bool:
    """Токенизировать так же, как эмбеддер индекса: со стеммингом, если он у эмбеддера включён."""
    return bool(getattr(index.embedder, "stem", False))


def index_bm25(index: Index, *, k1: float = 1.5, b: float = 0.75, variant: str = "lucene") -> BM25:
    """BM25 над чанками индекса (по порядку матрицы), токены — как у эмбеддера индекса.

    Читает тот же текст, что эмбеддился (``index.indexed_text``): у индекса с ``headers`` — с заголовком.
    Построй один раз и передавай в ``hybrid_search(..., bm25=...)`` для многих запросов.
    Пример: ``len(index_bm25(index)) == len(index)`` → ``True``. Глава 9. BM25 и гибридный поиск.
    """
    require_index(index)
    stem = _stem_of(index)
    return BM25([tokenize(index.indexed_text(i), stem=stem) for i in range(len(index))], k1=k1, b=b, variant=variant)


def exact_phrases(query: str) -> list[str]:
    """Фразы в кавычках («…», "…", “…”) и номера вида «№ 8821» из запроса, по порядку.

    Пример: ``exact_phrases('приказ № 8821 про «удалённую работу»')`` → ``['удалённую работу', '8821']``.
    Глава 9. BM25 и гибридный поиск.
    """
    require_text(query, "Запрос")
    quoted = [next(g for g in m.groups() if g is not None) for m in _QUOTED_RE.finditer(query)]
    numbers = _NUMBER_RE.findall(query)
    return [phrase for phrase in quoted + numbers if tokenize(phrase)]


def _contains(tokens: list[str], phrase: list[str]) -> bool:
    """Есть ли фраза в токенах подряд (сравнение по токенам: регистр и знаки не важны)."""
    joined = " " + " ".join(tokens) + " "
    return " " + " ".join(phrase) + " " in joined


def force_exact(index: Index, query: str, hits: Sequence[Hit], k: int = 3) -> list[Hit]:
    """Поставить в начало выдачи чанки, где есть фраза в кавычках или номер из запроса.

    Такие чанки идут первыми (в их порядке в ``hits``, затем новые — в порядке индекса),
    за ними остальные ``hits`` в прежнем порядке; всего не больше k. Совпадение — по
    токенам подряд без стемминга; просматриваются все чанки индекса (для учебных корпусов
    это быстро). Чанк, которого не было в ``hits``, получает score 0.0: он попал в выдачу
    только по точному совпадению.
    Пример: ``force_exact(index, "шаблон № 8821", index.search("шаблон № 8821", k=3))[0].doc_id`` → ``'vpn-connect'``.
    Глава 9. BM25 и гибридный поиск.
    """
    k = require_k(k)
    require_index(index)
    phrases = [tokenize(p) for p in exact_phrases(query)]
    hits = require_hits(hits)
    if phrases:
        chunks = index.chunks
        matched = [i for i, c in enumerate(chunks) if any(_contains(tokenize(c.text), p) for p in phrases)]
        matched_keys = {chunks[i].key for i in matched}
        known = {h.key for h in hits}
        forced = [h for h in hits if h.key in matched_keys]
        forced += [index.hit(i, 0.0) for i in matched if chunks[i].key not in known]
        hits = forced + [h for h in hits if h.key not in matched_keys]
    return renumber(hits[:k])


def hybrid_search(index: Index, query: str, k: int = 3, *, candidates: int = 20, rank_constant: float = 60,
                  bm25: BM25 | None = None, exact: bool = True, rrf_k: float | None = None) -> list[Hit]:
    """Гибридный поиск: лучшие ``candidates`` по косинусу и по BM25, слитые RRF.

    ``score`` у результата — оценка RRF с константой ``rank_constant`` (``rrf_k`` — её старое
    имя). ``exact=True`` ставит вперёд чанки с фразой в кавычках или номером из запроса
    (``force_exact``). ``bm25`` — готовый ``index_bm25(index)``; без него BM25 строится заново
    при каждом вызове. Пример: ``hybrid_search(index, "Что за шаблон № 8821?", k=3)[0].doc_id`` → ``'vpn-connect'``.
    Глава 9. BM25 и гибридный поиск.
    """
    k = require_k(k)
    n = max(require_int(candidates, "candidates", 1), k)
    rank_constant = renamed(rank_constant, rrf_k, default=60, name="rank_constant", old_name="rrf_k")
    require_index(index)
    bm25 = bm25 if bm25 is not None else index_bm25(index)
    if not isinstance(bm25, BM25) or len(bm25) != len(index):
        raise MiniRagError(f"bm25 должен быть BM25 над чанками этого индекса ({len(index)} чанков): "
                           f"построй его как index_bm25(index).")
    # оба списка — номера чанков в индексе: номер однозначно называет (doc_id, chunk_id)
    by_cosine = top_k(index.scores(query), n).tolist()
    by_bm25 = [i for i, _ in bm25.search(tokenize(query, stem=_stem_of(index)), n)]
    fused = [index.hit(i, score, rank)
             for rank, (i, score) in enumerate(rrf([by_cosine, by_bm25], rank_constant), start=1)]
    if exact:
        return force_exact(index, query, fused, k)
    return fused[:k]

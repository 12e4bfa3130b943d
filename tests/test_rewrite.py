"""Поиск с генератором: HyDE, расширение запроса с RRF, итеративный поиск и кэш запросов."""

from __future__ import annotations

import pytest
from fakes import Scripted

from minirag import (
    REFUSAL,
    Document,
    HashEmbedder,
    Index,
    MiniRagError,
    QueryCache,
    expand_query,
    expanded_search,
    hyde,
    iterative_search,
    rrf,
)

DOCS = [
    Document("vacation", "Отпуск", "Ежегодный оплачиваемый отпуск длится 28 календарных дней. Его делят на части."),
    Document("per-diem", "Суточные", "Суточные в командировке — 700 рублей в день по России."),
    Document("vpn", "VPN", "Для работы из дома подключитесь к VPN через клиент «Фарватер»."),
    Document("dms", "Медицинская страховка", "Добровольное медицинское страхование — после испытательного срока."),
    Document("pass", "Пропуск", "Пропуск в офис выдают в кабинете 318."),
]
INDEX = Index.build(DOCS, HashEmbedder())


def test_hyde_searches_with_the_hypothetical_answer():
    query = "Сколько отдыхаем летом?"
    assert INDEX.search(query, k=1)[0].doc_id != "vacation"  # у вопроса нет общих слов с ответом
    hypothetical = "Ежегодный оплачиваемый отпуск длится 28 календарных дней."
    generator = Scripted(hypothetical)
    result = hyde(INDEX, query, generator, k=2)
    assert result.queries == (hypothetical,) and not result.fallback
    assert result.hits[0].doc_id == "vacation" and result.hits == tuple(INDEX.search(hypothetical, k=2))
    assert query in generator.prompts[0]


@pytest.mark.parametrize("reply", [RuntimeError("сервер упал"), REFUSAL, "  ", None])
def test_hyde_falls_back_to_the_plain_query(reply):
    result = hyde(INDEX, "VPN из дома", Scripted(reply), k=2)
    assert result.fallback and result.reason and result.queries == ("VPN из дома",)
    assert result.hits == tuple(INDEX.search("VPN из дома", k=2))


def test_expand_query_cleans_the_generators_list():
    reply = ("1. добровольное медицинское страхование\n- ДМС\n\n«страховка для сотрудников»\n"
             "2) Добровольное медицинское страхование\nлишний")
    assert expand_query("ДМС", Scripted(reply), n=2) == ["ДМС", "добровольное медицинское страхование",
                                                          "страховка для сотрудников"]


def test_expanded_search_fuses_the_rewrites_with_rrf():
    rewrites = ["медицинское страхование", "добровольное страхование"]
    result = expanded_search(INDEX, "ДМС", Scripted("\n".join(rewrites)), k=3, candidates=4)
    assert result.queries == ("ДМС", *rewrites)
    rankings = [[(h.doc_id, h.chunk_id) for h in INDEX.search(q, k=4)] for q in result.queries]
    expected = rrf(rankings, rank_constant=60)[:3]
    assert [((h.doc_id, h.chunk_id), h.score) for h in result.hits] == expected
    assert result.hits[0].doc_id == "dms" and [h.rank for h in result.hits] == [1, 2, 3]
    # «dms» первый во всех трёх списках: 3/(60 + 1), посчитано вручную
    assert result.hits[0].score == pytest.approx(3 / 61)


def test_iterative_search_asks_what_is_missing_and_searches_again():
    generator = Scripted("суточные в командировке", "ГОТОВО")
    result = iterative_search(INDEX, "Сколько календарных дней отпуск и сколько платят в поездке?", generator, k=1)
    assert result.queries == ("Сколько календарных дней отпуск и сколько платят в поездке?", "суточные в командировке")
    assert [h.doc_id for h in result.hits] == ["vacation", "per-diem"] and [h.rank for h in result.hits] == [1, 2]
    assert len(generator.prompts) == 2 and "[1] Ежегодный оплачиваемый отпуск" in generator.prompts[0]
    assert "[2] Суточные в командировке" in generator.prompts[1]


def test_iterative_search_stops_at_max_rounds_repeats_and_failures():
    silent = Scripted()
    assert iterative_search(INDEX, "отпуск", silent, k=1, max_rounds=1).queries == ("отпуск",)
    assert silent.prompts == []
    repeated = iterative_search(INDEX, "отпуск", Scripted("Отпуск"), k=1, max_rounds=5)
    assert repeated.queries == ("отпуск",) and not repeated.fallback
    broken = iterative_search(INDEX, "отпуск", Scripted("VPN из дома", TimeoutError("долго")), k=1, max_rounds=5)
    assert broken.fallback and "долго" in broken.reason
    assert [h.doc_id for h in broken.hits] == ["vacation", "vpn"]  # найденное до сбоя не потеряно


def test_the_cache_calls_the_generator_once_per_query_and_index():
    cache = QueryCache()
    generator = Scripted("Отпуск длится 28 дней.", "Пропуск выдают в кабинете.")
    first = hyde(INDEX, "отпуск", generator, k=2, cache=cache)
    assert hyde(INDEX, "отпуск", generator, k=2, cache=cache) is first
    assert (cache.hits, cache.misses, len(generator.prompts)) == (1, 1, 1)
    # другой корпус с тем же эмбеддером: отпечаток эмбеддера тот же, но кэш не общий
    other = Index.build(DOCS[1:], HashEmbedder())
    assert other.fingerprint == INDEX.fingerprint
    hyde(other, "отпуск", generator, k=2, cache=cache)
    assert (cache.misses, len(generator.prompts)) == (2, 2)


def test_fallbacks_are_not_cached():
    cache = QueryCache()
    generator = Scripted(ConnectionError("нет сети"), "Отпуск длится 28 дней.")
    assert hyde(INDEX, "отпуск", generator, cache=cache).fallback
    assert not hyde(INDEX, "отпуск", generator, cache=cache).fallback and len(cache) == 1


def test_the_cache_evicts_the_oldest_entry_and_caches_plain_search_too():
    cache = QueryCache(maxsize=1)
    for query in ("отпуск", "VPN", "отпуск"):
        cache.get_or_compute("search", INDEX, query, lambda q=query: INDEX.search(q, k=1), k=1)
    assert (cache.hits, cache.misses, len(cache)) == (0, 3, 1)
    with pytest.raises(MiniRagError, match="maxsize"):
        QueryCache(maxsize=0)

"""Старые имена и старый порядок аргументов, которыми ещё пишут главы и лабораторные, работают как новые.

Они работают молча: pytest превращает DeprecationWarning из minirag в ошибку, а предупреждение в
выводе ячейки попало бы на страницу книги, поэтому старое имя — простой синоним, а не
предупреждение. Новое и старое имя сразу — ошибка.
"""

import warnings

import pytest

from minirag import (
    DEMO_DOCS,
    ExtractiveGenerator,
    Index,
    MiniRagError,
    QueryCache,
    answer,
    expand_neighbors,
    expanded_search,
    hybrid_search,
    hyde,
    iterative_search,
    rrf,
)

INDEX = Index.build(DEMO_DOCS[:12])


class Scripted:
    def generate(self, prompt):
        return "отпуск сотрудника\nпропуск в офис" if "Перепиши" in prompt else "Отпуск длится 28 календарных дней."


@pytest.fixture(autouse=True)
def no_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield


@pytest.mark.parametrize("function", [hyde, expanded_search, iterative_search])
def test_the_old_query_index_order_gives_the_same_retrieval(function):
    query = "Сколько дней отпуска?"
    assert function(query, INDEX, Scripted(), k=3) == function(INDEX, query, Scripted(), k=3)


def test_the_old_query_index_order_gives_the_same_answer():
    query = "Сколько дней отпуска?"
    old, new = answer(query, INDEX, k=3), answer(INDEX, query, k=3)
    assert (old.text, old.hits, old.prompt) == (new.text, new.hits, new.prompt)
    assert answer(query=query, index=INDEX).text == new.text
    with pytest.raises(MiniRagError, match="index должен уметь search"):
        answer(query, "ещё одна строка")


def test_the_old_cache_argument_order_finds_the_same_entry():
    cache = QueryCache()
    first = cache.get_or_compute("search", INDEX, "отпуск", lambda: INDEX.search("отпуск"), k=3)
    assert cache.get_or_compute("search", "отпуск", INDEX, lambda: [], k=3) is first and cache.hits == 1


def test_rank_constant_has_its_old_names():
    rankings = [["a", "b", "c"], ["c", "a"]]
    assert rrf(rankings, k=10) == rrf(rankings, rank_constant=10) == rrf(rankings, 10)
    assert rrf(rankings, k=10) != rrf(rankings)
    query = "приказ № 8821 про VPN"
    assert hybrid_search(INDEX, query, rrf_k=5) == hybrid_search(INDEX, query, rank_constant=5)
    assert expanded_search(INDEX, query, Scripted(), rrf_k=5) == expanded_search(INDEX, query, Scripted(), rank_constant=5)
    with pytest.raises(MiniRagError, match="Передай только rank_constant: k — его старое имя"):
        rrf(rankings, rank_constant=10, k=20)


def test_threshold_has_its_old_names():
    hits = INDEX.search("отпуск", k=2)
    loose = expand_neighbors(INDEX, "отпуск", hits, floor=-1)
    assert loose == expand_neighbors(INDEX, "отпуск", hits, threshold=-1)
    assert len(loose) > len(expand_neighbors(INDEX, "отпуск", hits)) == len(hits)
    generator = ExtractiveGenerator(min_score=0.2)
    assert generator.threshold == generator.min_score == 0.2
    with pytest.raises(MiniRagError, match="Передай только threshold: floor"):
        expand_neighbors(INDEX, "отпуск", hits, threshold=0.5, floor=0.1)

"""Проверки входа: одно правило на всю библиотеку, а сообщение называет тот параметр, который передали."""

import numpy as np
import pytest

from minirag import (
    BM25,
    DEMO_DOCS,
    ExtractiveGenerator,
    HashEmbedder,
    Index,
    LexicalPairScorer,
    MiniRagError,
    QueryCache,
    chunk_text,
    expand_neighbors,
    expand_query,
    expanded_search,
    hierarchical_search,
    hybrid_search,
    iterative_search,
    mmr_search,
    search_rerank,
    table_chunks,
    top_k,
)
from minirag.validate import require_int, require_number, require_threshold


@pytest.fixture(scope="module")
def index():
    return Index.build(DEMO_DOCS[:5])


class Silent:
    def generate(self, prompt):
        return "ГОТОВО"


# (вызов с плохим значением, имя параметра, которое должно стоять в начале сообщения)
BAD_CALLS = [
    (lambda ix: hierarchical_search(ix, "отпуск", k=3, n_docs=0), "n_docs"),
    (lambda ix: hybrid_search(ix, "отпуск", k=3, candidates=0), "candidates"),
    (lambda ix: mmr_search(ix, "отпуск", k=3, candidates=-1), "candidates"),
    (lambda ix: search_rerank(ix, "отпуск", k=3, candidates=True), "candidates"),
    (lambda ix: expand_neighbors(ix, "отпуск", ix.search("отпуск"), max_steps=0), "max_steps"),
    (lambda ix: expanded_search(ix, "отпуск", Silent(), candidates=0), "candidates"),
    (lambda ix: iterative_search(ix, "отпуск", Silent(), max_rounds=0), "max_rounds"),
    (lambda ix: expand_query("отпуск", Silent(), n=0), "n"),
    (lambda ix: ix.search("отпуск", k=0), "k"),
    (lambda ix: top_k([0.1, 0.2], k=1.5), "k"),
    (lambda ix: chunk_text("Текст.", max_chars=0), "max_chars"),
    (lambda ix: table_chunks("a", rows_per_chunk=0), "rows_per_chunk"),
    (lambda ix: HashEmbedder(dim=0), "dim"),
    (lambda ix: QueryCache(maxsize=0), "maxsize"),
    (lambda ix: ExtractiveGenerator(max_sentences=0), "max_sentences"),
    (lambda ix: LexicalPairScorer(window=0), "window"),
    (lambda ix: BM25([["а"]], b=2), "b"),
]


@pytest.mark.parametrize("call, name", BAD_CALLS)
def test_a_bad_value_is_reported_under_its_own_name(index, call, name):
    with pytest.raises(MiniRagError, match=rf"^{name} должен быть"):
        call(index)


def test_integers_are_ints_of_any_kind_but_not_bools():
    assert require_int(np.int64(3), "k", 1) == 3 and type(require_int(np.int64(3), "k", 1)) is int
    for bad in (True, 2.0, "2", None, 0):
        with pytest.raises(MiniRagError, match="k должен быть целым числом ≥ 1, получено"):
            require_int(bad, "k", 1)


def test_numbers_are_finite_and_within_bounds():
    assert require_number(np.float32(0.5), "lambda_", 0, 1) == 0.5
    for bad, bounds in ((1.5, "от 0 до 1"), (float("nan"), "от 0 до 1"), (False, "от 0 до 1")):
        with pytest.raises(MiniRagError, match=f"lambda_ должен быть конечным числом {bounds}"):
            require_number(bad, "lambda_", 0, 1)
    with pytest.raises(MiniRagError, match="k1 должен быть конечным числом ≥ 0, получено inf. Обычно"):
        require_number(float("inf"), "k1", 0, hint="Обычно k1=1.5.")
    assert require_threshold(None) is None and require_threshold(np.float64(0.25)) == 0.25
    with pytest.raises(MiniRagError, match="threshold должен быть числом"):
        require_threshold("0.2")

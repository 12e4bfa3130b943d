"""BM25 против двух библиотек, которые писали не мы: rank_bm25 (okapi) и bm25s (lucene).

Обе получают те же токены, что и minirag. bm25s считается в float64, чтобы сравнивать до 1e-9.
"""

import math

import bm25s
import numpy as np
import pytest
import rank_bm25
from hypothesis import given, settings
from hypothesis import strategies as st

from minirag import BM25, MiniRagError, tokenize


def reference_scores(variant, corpus, query, k1=1.5, b=0.75, dtype="float64"):
    """Оценки эталонной библиотеки для того же корпуса токенов."""
    if variant == "okapi":
        with np.errstate(invalid="ignore"):  # rank_bm25 делит 0/0 для пустого документа при b=1
            return np.asarray(rank_bm25.BM25Okapi(corpus, k1=k1, b=b).get_scores(query))
    retriever = bm25s.BM25(method="lucene", k1=k1, b=b, dtype=dtype)
    retriever.index(corpus, show_progress=False)
    if not query:  # bm25s.get_scores не принимает пустой список
        return np.zeros(len(corpus))
    return np.asarray(retriever.get_scores(query), dtype=np.float64)


VARIANTS = ["okapi", "lucene"]
TEXTS = [
    "Отпуск длится 28 календарных дней, отпуск можно делить на части.",
    "Заявление на отпуск подают за две недели до начала.",
    "VPN нужен для работы из дома; пароль от VPN меняют раз в квартал.",
    "Командировочные расходы возмещают по чекам.",
]
CORPUS = [tokenize(text) for text in TEXTS]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("query", ["отпуск", "отпуск на две недели", "пароль vpn vpn", "чеки", ""])
def test_scores_match_reference_on_real_tokens(variant, query):
    tokens = tokenize(query)
    ours = BM25(CORPUS, variant=variant).scores(tokens)
    assert ours.shape == (len(CORPUS),)
    np.testing.assert_allclose(ours, reference_scores(variant, CORPUS, tokens), rtol=0, atol=1e-9)


def test_hand_worked_lucene_two_documents():
    # N=2, df("кот")=1: idf = ln(1 + 1.5/1.5) = ln 2; |d| = avgdl = 1: tf/(tf + k1) = 1/2.5 = 0.4.
    bm25 = BM25([["кот"], ["пёс"]], variant="lucene")
    np.testing.assert_allclose(bm25.scores(["кот"]), [math.log(2) * 0.4, 0.0])
    assert bm25.scores(["кот"])[0] == pytest.approx(0.2772588722)
    assert bm25.search(["кот"], k=3) == [(0, pytest.approx(0.2772588722))]


def test_hand_worked_okapi_term_in_half_the_documents_scores_zero():
    # N=4, df=2: okapi idf = ln((4 − 2 + 0.5)/(2 + 0.5)) = ln 1 = 0 — не отрицательный, пол eps не включается.
    corpus = [["кот", "ест"], ["кот", "спит"], ["пёс", "ест"], ["ёж"]]
    okapi, lucene = BM25(corpus, variant="okapi"), BM25(corpus, variant="lucene")
    assert okapi.idf["кот"] == 0.0
    np.testing.assert_array_equal(okapi.scores(["кот"]), [0.0, 0.0, 0.0, 0.0])
    assert lucene.idf["кот"] == pytest.approx(math.log(2))  # ln(1 + 2.5/2.5)
    for variant, bm25 in (("okapi", okapi), ("lucene", lucene)):
        np.testing.assert_allclose(bm25.scores(["кот"]), reference_scores(variant, corpus, ["кот"]), atol=1e-12)


def test_okapi_epsilon_floor_in_two_document_corpus_matches_rank_bm25():
    # "а" во всех документах: ln(0.5/2.5) < 0 → заменяется на 0.25 · средний idf словаря.
    corpus = [["а", "б"], ["а", "в"]]
    raw = {"а": math.log(0.5 / 2.5), "б": 0.0, "в": 0.0}
    eps = 0.25 * sum(raw.values()) / 3
    bm25 = BM25(corpus, variant="okapi")
    assert bm25.idf["а"] == pytest.approx(eps)
    assert eps < 0  # средний idf тоже отрицательный: rank_bm25 даёт отрицательную оценку — и мы тоже
    # tf = 1, |d| = avgdl = 2: tf·(k1+1)/(tf + k1) = 2.5/2.5 = 1
    np.testing.assert_allclose(bm25.scores(["а"]), [eps, eps])
    np.testing.assert_allclose(bm25.scores(["а"]), reference_scores("okapi", corpus, ["а"]), atol=1e-12)
    lucene = BM25(corpus, variant="lucene")
    np.testing.assert_allclose(lucene.scores(["а", "б"]), reference_scores("lucene", corpus, ["а", "б"]), atol=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
def test_unknown_term_adds_nothing(variant):
    bm25 = BM25(CORPUS, variant=variant)
    np.testing.assert_array_equal(bm25.scores(["абракадабра"]), np.zeros(len(CORPUS)))
    assert bm25.search(["абракадабра"], k=3) == []
    with_unknown = bm25.scores(["отпуск", "абракадабра"])
    np.testing.assert_array_equal(with_unknown, bm25.scores(["отпуск"]))
    np.testing.assert_allclose(with_unknown, reference_scores(variant, CORPUS, ["отпуск", "абракадабра"]), atol=1e-9)


@pytest.mark.parametrize("variant", VARIANTS)
def test_repeated_query_term_counts_twice_like_the_references(variant):
    bm25 = BM25(CORPUS, variant=variant)
    once, twice = bm25.scores(["vpn"]), bm25.scores(["vpn", "vpn"])
    np.testing.assert_allclose(twice, 2 * once)
    assert twice.max() > 0
    np.testing.assert_allclose(twice, reference_scores(variant, CORPUS, ["vpn", "vpn"]), atol=1e-9)


def test_lucene_matches_bm25s_defaults_in_float32():
    tokens = tokenize("отпуск на две недели")
    np.testing.assert_allclose(BM25(CORPUS).scores(tokens), reference_scores("lucene", CORPUS, tokens, dtype="float32"),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("variant", VARIANTS)
def test_non_default_k1_and_b_match_reference(variant):
    tokens = tokenize("отпуск vpn")
    ours = BM25(CORPUS, k1=0.9, b=0.4, variant=variant).scores(tokens)
    np.testing.assert_allclose(ours, reference_scores(variant, CORPUS, tokens, k1=0.9, b=0.4), atol=1e-9)


def test_search_returns_only_matching_documents_best_first_ties_by_index():
    bm25 = BM25([["кот", "ёж"], ["пёс", "ёж"], ["кот", "ёж"], ["кот", "кот"]])  # длины равны: решает tf
    hits = bm25.search(["кот"], k=10)
    assert [doc for doc, _ in hits] == [3, 0, 2]  # документ 1 без слова «кот» не возвращается
    assert hits[1][1] == hits[2][1]  # равные оценки — по номеру документа
    assert bm25.search(["кот"], k=1) == hits[:1]
    scores = bm25.scores(["кот"])
    assert [score for _, score in hits] == pytest.approx(scores[[3, 0, 2]].tolist())


def test_postings_hold_precomputed_scores_per_term():
    bm25 = BM25([["кот", "ест"], ["пёс"], ["кот"]])
    docs, weights = bm25._postings(["кот"])  # постинги слова — только его документы
    assert docs.tolist() == [0, 2]
    np.testing.assert_allclose(weights, bm25.scores(["кот"])[[0, 2]])


words = st.sampled_from(["а", "б", "в", "г", "д", "е"])


@settings(max_examples=150, deadline=None)
@given(
    corpus=st.lists(st.lists(words, max_size=8), min_size=1, max_size=7).filter(lambda c: any(c)),
    query=st.lists(st.one_of(words, st.just("неизвестное")), max_size=5),
    k1=st.sampled_from([0.5, 1.2, 1.5, 2.0]),
    b=st.sampled_from([0.0, 0.5, 0.75, 1.0]),
)
def test_property_all_scores_match_references(corpus, query, k1, b):
    for variant in VARIANTS:
        bm25 = BM25(corpus, k1=k1, b=b, variant=variant)
        ours = bm25.scores(query)
        reference = reference_scores(variant, corpus, query, k1=k1, b=b)
        empty = np.array([not doc for doc in corpus])
        assert not np.isnan(reference[~empty]).any()
        reference[empty] = np.nan_to_num(reference[empty])  # NaN rank_bm25 у пустых документов: см. тест ниже
        np.testing.assert_allclose(ours, reference, rtol=0, atol=1e-6)
        matching = [i for i, doc in enumerate(corpus) if set(doc) & set(query)]
        hits = bm25.search(query, k=len(corpus))
        assert sorted(doc for doc, _ in hits) == matching
        assert [score for _, score in hits] == sorted((score for _, score in hits), reverse=True)


def test_empty_document_scores_zero_where_rank_bm25_gives_nan():
    # |d| = 0 и b = 1: K = k1·(1 − b + b·0/avgdl) = 0, и rank_bm25 считает tf·(k1+1)/(tf+K) = 0/0 = NaN.
    # В документе нет слова запроса — честная оценка 0; bm25s тоже даёт 0.
    corpus = [[], ["а"]]
    assert np.isnan(reference_scores("okapi", corpus, ["а"], b=1.0)[0])
    assert BM25(corpus, b=1.0, variant="okapi").scores(["а"])[0] == 0.0
    assert BM25(corpus, b=1.0, variant="lucene").scores(["а"])[0] == reference_scores("lucene", corpus, ["а"], b=1.0)[0] == 0


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"corpus_tokens": ["отпуск длится 28 дней"]}, "tokenize"),
        ({"corpus_tokens": "отпуск"}, "списком документов"),
        ({"corpus_tokens": []}, "Корпус пуст"),
        ({"corpus_tokens": [[], []]}, "нет ни одного токена"),
        ({"corpus_tokens": [["а"]], "variant": "bm25+"}, "variant"),
        ({"corpus_tokens": [["а"]], "k1": -1}, "k1"),
        ({"corpus_tokens": [["а"]], "b": 1.5}, "b должен"),
    ],
)
def test_bad_input_raises_russian_error(kwargs, message):
    with pytest.raises(MiniRagError, match=message):
        BM25(**kwargs)


def test_bad_query_raises_russian_error():
    bm25 = BM25(CORPUS)
    with pytest.raises(MiniRagError, match="tokenize"):
        bm25.scores("отпуск")
    with pytest.raises(MiniRagError, match="k должен"):
        bm25.search(["отпуск"], k=0)

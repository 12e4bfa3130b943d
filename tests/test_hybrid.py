"""RRF, гибридный поиск, точные совпадения, соседние чанки и поиск «сначала документы».

Где важны конкретные косинусы, эмбеддер — словарь «текст → вектор», заданный в тесте:
так числа считаются вручную и не зависят от хешей.
"""

import math

import numpy as np
import pytest

from minirag import (
    BM25,
    Document,
    HashEmbedder,
    Hit,
    Index,
    MiniRagError,
    doc_vectors,
    exact_phrases,
    expand_neighbors,
    force_exact,
    hierarchical_search,
    hybrid_search,
    index_bm25,
    l2_normalize,
    mmr_search,
    rrf,
    search_rerank,
    tokenize,
)


class DictEmbedder:
    """Эмбеддер-таблица: вектор каждого текста задан заранее (для чисел, посчитанных руками)."""

    fingerprint = "DictEmbedder/test"

    def __init__(self, table):
        self.table = {text: np.asarray(vector, dtype=np.float64) for text, vector in table.items()}

    def embed(self, texts):
        return l2_normalize(np.array([self.table[text] for text in texts]))


def one_chunk_per_doc(text):
    return [text]


def by_slash(text):
    return text.split(" / ")


# ---------- RRF ----------
def test_rrf_hand_worked_example():
    fused = rrf([["a", "b", "c"], ["b", "c", "d"]], rank_constant=60)
    assert [key for key, _ in fused] == ["b", "c", "a", "d"]
    scores = dict(fused)
    assert scores["b"] == pytest.approx(1 / 62 + 1 / 61) == pytest.approx(0.0325224749)
    assert scores["c"] == pytest.approx(1 / 63 + 1 / 62) == pytest.approx(0.0320020481)
    assert scores["a"] == pytest.approx(1 / 61) == pytest.approx(0.0163934426)
    assert scores["d"] == pytest.approx(1 / 63) == pytest.approx(0.0158730159)


def test_rrf_zero_based_ranks_equal_one_based_with_k_minus_one():
    rankings = [["a", "b", "c"], ["c", "a"]]
    zero_based = {}
    for ranking in rankings:
        for rank0, key in enumerate(ranking):
            zero_based[key] = zero_based.get(key, 0.0) + 1 / (60 + rank0)
    assert dict(rrf(rankings, rank_constant=59)) == pytest.approx(zero_based)
    assert dict(rrf(rankings, rank_constant=60))["a"] == pytest.approx(1 / 61 + 1 / 62)  # места с 1: первый получает 1/61


def test_rrf_ties_keep_order_of_first_appearance():
    assert [key for key, _ in rrf([["x", "y"], ["z", "w"]])] == ["x", "z", "y", "w"]


@pytest.mark.parametrize(
    ("rankings", "k", "message"),
    [(["a", "b"], 60, "последовательностью"), ([["a", "a"]], 60, "повторы"), ([["a"]], -1, "rank_constant должен"),
     ("ab", 60, "списком")],
)
def test_rrf_bad_input(rankings, k, message):
    with pytest.raises(MiniRagError, match=message):
        rrf(rankings, rank_constant=k)


# ---------- гибридный поиск ----------
HYBRID_DOCS = [
    Document("d1", "Бюро", "пропуск оформляют в бюро"),
    Document("d2", "Утеря", "пропуск пропуск пропуск утерян"),
    Document("d3", "Вход", "карта доступа для входа"),
]
HYBRID_EMBEDDER = DictEmbedder({
    "пропуск": [1.0, 0.0, 0.0],
    "карта доступа для входа": [0.9, 0.1, 0.0],  # «по смыслу» ближе всех, хотя слова «пропуск» нет
    "пропуск оформляют в бюро": [0.5, 0.5, 0.0],
    "пропуск пропуск пропуск утерян": [0.1, 0.9, 0.0],
})


def test_hybrid_fuses_by_chunk_identity_not_by_position():
    index = Index.build(HYBRID_DOCS, HYBRID_EMBEDDER, chunker=one_chunk_per_doc)
    by_cosine = [(h.doc_id, h.chunk_id) for h in index.search("пропуск", k=3)]
    by_bm25 = [(index.chunk(i).doc_id, index.chunk(i).chunk_id) for i, _ in index_bm25(index).search(["пропуск"], k=3)]
    assert by_cosine == [("d3", 1), ("d1", 1), ("d2", 1)]
    assert by_bm25 == [("d2", 1), ("d1", 1)]  # d3 без слова «пропуск» в BM25 не попадает
    hits = hybrid_search(index, "пропуск", k=3)
    assert [(h.doc_id, h.chunk_id) for h in hits] == [("d2", 1), ("d1", 1), ("d3", 1)]
    assert [h.rank for h in hits] == [1, 2, 3]
    # d2: 3-й по косинусу и 1-й по BM25; d1: 2-й и 2-й; d3: только 1-й по косинусу
    assert [h.score for h in hits] == pytest.approx([1 / 63 + 1 / 61, 2 / 62, 1 / 61])
    assert hits[0].text == "пропуск пропуск пропуск утерян" and hits[0].title == "Утеря"


def test_hybrid_with_prebuilt_bm25_is_the_same_and_checks_its_size():
    index = Index.build(HYBRID_DOCS, HYBRID_EMBEDDER, chunker=one_chunk_per_doc)
    assert hybrid_search(index, "пропуск", k=2, bm25=index_bm25(index)) == hybrid_search(index, "пропуск", k=2)
    with pytest.raises(MiniRagError, match="index_bm25"):
        hybrid_search(index, "пропуск", k=2, bm25=BM25([["пропуск"]]))


def test_hybrid_tokenizes_like_the_embedder():
    docs = [Document("a", "Отпуск", "Отпуск длится 28 дней."), Document("b", "VPN", "VPN для работы из дома.")]
    index = Index.build(docs, HashEmbedder(stem=True))
    bm25 = index_bm25(index)
    assert "отпуск" in bm25.vocab and bm25.scores(tokenize("отпуска", stem=True))[0] > 0
    assert hybrid_search(index, "отпуска", k=1)[0].doc_id == "a"


# ---------- точные совпадения ----------
def test_exact_phrases_from_quotes_and_numbers():
    query = 'приказ № 8821 и №17-Б про «удалённую работу» и "режим дня"'
    assert exact_phrases(query) == ["удалённую работу", "режим дня", "8821", "17-Б"]
    assert exact_phrases("просто вопрос без кавычек") == []
    assert exact_phrases("пустые «» кавычки и «!!!»") == []


EXACT_DOCS = [
    Document("a", "Отпуск", "Отпуск длится 28 дней. / Отпуск делят на части."),
    Document("b", "Приказы", "Приказ № 8821 о переносе отпуска. / Приказ 17 про отпуск."),
    Document("c", "Справка", "Номер 8821 указан в справке. / Про отпуск и приказ 8821."),
]


def test_force_exact_puts_matching_chunks_first_keeping_their_order():
    index = Index.build(EXACT_DOCS, chunker=by_slash)
    hits = [Hit(1, 0.9, "a", 1, "Отпуск", "Отпуск длится 28 дней."),
            Hit(2, 0.8, "c", 2, "Справка", "Про отпуск и приказ 8821."),
            Hit(3, 0.7, "a", 2, "Отпуск", "Отпуск делят на части.")]
    forced = force_exact(index, "отпуск по приказу № 8821", hits, k=4)
    # c#2 уже был в выдаче — идёт первым со своей оценкой; b#1 и c#1 добавлены в порядке индекса, score 0.0;
    # остальные — в прежнем порядке, пока не наберётся k.
    assert [(h.doc_id, h.chunk_id) for h in forced] == [("c", 2), ("b", 1), ("c", 1), ("a", 1)]
    assert [h.score for h in forced] == [0.8, 0.0, 0.0, 0.9]
    assert [h.rank for h in forced] == [1, 2, 3, 4]
    assert force_exact(index, "отпуск", hits, k=2) == hits[:2]  # нет кавычек и номеров — ничего не меняется


def test_force_exact_matches_quoted_phrase_as_consecutive_tokens():
    index = Index.build(EXACT_DOCS, chunker=by_slash)
    forced = force_exact(index, "что про «ПЕРЕНОСЕ отпуска»?", [], k=3)
    assert [(h.doc_id, h.chunk_id) for h in forced] == [("b", 1)]
    assert force_exact(index, "«отпуска переносе»", [], k=3) == []  # порядок слов важен


def test_hybrid_search_forces_exact_number():
    index = Index.build(EXACT_DOCS, chunker=by_slash)
    query = "сколько длится отпуск по № 8821"
    plain = hybrid_search(index, query, k=3, exact=False)
    assert [(h.doc_id, h.chunk_id) for h in plain] == [("a", 1), ("c", 2), ("a", 2)]  # без правила номер теряется
    hits = hybrid_search(index, query, k=3)
    # все три чанка с «8821»: c#2 (был в выдаче), затем b#1 и c#1 по порядку слияния — они были среди кандидатов
    assert [(h.doc_id, h.chunk_id) for h in hits] == [("c", 2), ("b", 1), ("c", 1)]
    assert all("8821" in h.text for h in hits) and all(h.score > 0 for h in hits)


# ---------- соседние чанки ----------
# a3 — найденный чанк; косинусы соседей с ним: a2 0.8, a1 0.5, a4 0.2, a5 0.9 (но за a4, ниже порога).
NEIGHBOR_TABLE = {
    "a1": [0.5, 0.0, math.sqrt(0.75), 0, 0, 0],
    "a2": [0.8, 0.6, 0, 0, 0, 0],
    "a3": [1.0, 0, 0, 0, 0, 0],
    "a4": [0.2, 0, 0, math.sqrt(0.96), 0, 0],
    "a5": [0.9, 0, 0, 0, math.sqrt(0.19), 0],
    "b1": [0.95, 0, 0, 0, 0, math.sqrt(1 - 0.95**2)],
    "вопрос": [1.0, 0, 0, 0, 0, 0],
    "другой вопрос": [0.0, 1.0, 0, 0, 0, 0],
}
NEIGHBOR_DOCS = [Document("a", "A", "a1 / a2 / a3 / a4 / a5"), Document("b", "B", "b1")]


def neighbor_index():
    return Index.build(NEIGHBOR_DOCS, DictEmbedder(NEIGHBOR_TABLE), chunker=by_slash)


def test_expand_neighbors_walks_while_similarity_stays_above_floor():
    index = neighbor_index()
    hits = index.search("вопрос", k=1)
    assert [(h.doc_id, h.chunk_id) for h in hits] == [("a", 3)]
    expanded = expand_neighbors(index, "вопрос", hits, threshold=0.4)
    assert [h.text for h in expanded] == ["a1", "a2", "a3"]  # a4 (0.2) ниже порога, до a5 шаг не доходит
    assert [h.rank for h in expanded] == [1, 2, 3]
    assert [h.score for h in expanded] == pytest.approx([0.5, 0.8, 1.0])  # косинус с запросом
    assert [h.text for h in expand_neighbors(index, "вопрос", hits, threshold=0.4, max_steps=1)] == ["a2", "a3"]
    assert [h.text for h in expand_neighbors(index, "вопрос", hits, threshold=0.1)] == ["a1", "a2", "a3", "a4", "a5"]
    assert [h.text for h in expand_neighbors(index, "вопрос", hits, threshold=0.1, max_steps=1)] == ["a2", "a3", "a4"]


def test_expand_neighbors_against_query_and_without_duplicates():
    index = neighbor_index()
    a3 = index.search("вопрос", k=1)
    # с «другим вопросом» (ось 2) похож только a2 (0.6): соседи a3 по запросу — только a2
    assert [h.text for h in expand_neighbors(index, "другой вопрос", a3, threshold=0.5, against="query")] == ["a2", "a3"]
    best_two = index.search("вопрос", k=2)
    assert [h.text for h in best_two] == ["a3", "b1"]
    expanded = expand_neighbors(index, "вопрос", best_two + index.search("другой вопрос", k=1), threshold=0.7)
    assert [h.text for h in expanded] == ["a2", "a3", "b1"]  # a2 — сосед a3 и сам найден: один раз


def test_expand_neighbors_bad_input():
    index = neighbor_index()
    with pytest.raises(MiniRagError, match="against"):
        expand_neighbors(index, "вопрос", [], against="doc")
    with pytest.raises(MiniRagError, match="нет в индексе"):
        expand_neighbors(index, "вопрос", [Hit(1, 1.0, "zzz", 1, "", "")])


# ---------- поиск «сначала документы» ----------
def test_doc_vectors_are_normalised_means_of_chunks():
    index = neighbor_index()
    vectors = doc_vectors(index)
    expected_a = l2_normalize(index.vectors[:5].astype(np.float64).mean(axis=0))
    np.testing.assert_allclose(vectors[0], expected_a, atol=1e-6)
    np.testing.assert_allclose(vectors[1], index.vectors[5], atol=1e-6)


def test_hierarchical_search_picks_documents_first():
    table = {"x1": [1.0, 0.0], "x2": [0.0, 1.0], "y1": [0.9, -0.2], "y2": [0.9, 0.2], "вопрос": [1.0, 0.0]}
    docs = [Document("x", "X", "x1 / x2"), Document("y", "Y", "y1 / y2")]
    index = Index.build(docs, DictEmbedder(table), chunker=by_slash)
    assert index.search("вопрос", k=1)[0].text == "x1"  # лучший чанк — в документе x,
    # но документ x в среднем про другое: cos(вопрос, x) = 0.707 < cos(вопрос, y) = 0.976
    hits = hierarchical_search(index, "вопрос", k=2, n_docs=1)
    assert [h.text for h in hits] == ["y1", "y2"]
    assert [h.score for h in hits] == pytest.approx([0.9 / math.hypot(0.9, 0.2)] * 2, abs=1e-6)
    assert [h.text for h in hierarchical_search(index, "вопрос", k=2, n_docs=2)] == ["x1", "y1"]
    with pytest.raises(MiniRagError, match="^n_docs должен быть целым числом ≥ 1, получено 0"):
        hierarchical_search(index, "вопрос", k=2, n_docs=0)
    with pytest.raises(MiniRagError, match="^k должен"):
        hierarchical_search(index, "вопрос", k=0, n_docs=2)


@pytest.mark.parametrize(
    "call",
    [
        lambda: hybrid_search(["не индекс"], "вопрос"),
        lambda: index_bm25(["не индекс"]),
        lambda: force_exact(["не индекс"], "«вопрос»", []),
        lambda: expand_neighbors(["не индекс"], "вопрос", []),
        lambda: doc_vectors(["не индекс"]),
        lambda: hierarchical_search(["не индекс"], "вопрос"),
        lambda: mmr_search(["не индекс"], "вопрос"),
        lambda: search_rerank(["не индекс"], "вопрос"),
    ],
)
def test_search_helpers_reject_something_that_is_not_an_index(call):
    with pytest.raises(MiniRagError, match="Index.build"):
        call()

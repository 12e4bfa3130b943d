"""MMR и двухэтапный поиск с оценщиком пар: ручные примеры с числами и подключаемый оценщик."""

import sys

import numpy as np
import pytest

from minirag import (
    CrossEncoderScorer,
    Document,
    Hit,
    Index,
    LexicalPairScorer,
    MiniRagError,
    PairScorer,
    l2_normalize,
    mmr,
    mmr_search,
    rerank,
    search_rerank,
    top_k,
)

# ---------- MMR ----------
# Запрос q = (0.8, 0, 0.6). Косинусы с запросом: c0 0.8, c1 0.768, c2 0.96, c3 0.
# Косинусы между кандидатами: c0·c1 0.96, c0·c2 0.6, c1·c2 0.576, c1·c3 0.28, c0·c3 = c2·c3 = 0.
QUERY = [0.8, 0.0, 0.6]
CANDIDATES = [[1.0, 0.0, 0.0], [0.96, 0.28, 0.0], [0.6, 0.0, 0.8], [0.0, 1.0, 0.0]]


def test_mmr_lambda_one_is_the_plain_ranking():
    assert mmr(QUERY, CANDIDATES, k=4, lambda_=1.0) == [2, 0, 1, 3]
    rng = np.random.default_rng(7)
    for _ in range(20):
        query, candidates = rng.normal(size=8), rng.normal(size=(30, 8))
        cosines = l2_normalize(candidates) @ l2_normalize(query)
        assert mmr(query, candidates, k=10, lambda_=1.0) == top_k(cosines, 10).tolist()
        assert mmr(query, candidates, k=10, lambda_=1.0) == np.argsort(-cosines, kind="stable")[:10].tolist()


def test_mmr_lambda_zero_picks_the_most_diverse():
    # первым — самый релевантный c2; дальше — наименьший max косинус с выбранными:
    # c3 (0), затем c1 (max(0.576, 0.28) = 0.576 < c0: 0.6), затем c0.
    assert mmr(QUERY, CANDIDATES, k=4, lambda_=0.0) == [2, 3, 1, 0]


def test_mmr_hand_worked_half():
    # после c2: c0 = 0.5·0.8 − 0.5·0.6 = 0.1; c1 = 0.5·0.768 − 0.5·0.576 = 0.096; c3 = 0 → c0;
    # затем c1 = 0.384 − 0.5·0.96 = −0.096 < c3 = 0 → c3, последним c1.
    assert mmr(QUERY, CANDIDATES, k=4, lambda_=0.5) == [2, 0, 3, 1]
    assert mmr(QUERY, CANDIDATES, k=2, lambda_=0.5) == [2, 0]
    assert mmr(QUERY, CANDIDATES, k=10, lambda_=0.5) == [2, 0, 3, 1]  # k больше числа кандидатов


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((QUERY, CANDIDATES, 2), {"lambda_": 1.5}, "lambda_"),
        ((QUERY, CANDIDATES, 0), {}, "k должен"),
        (([1.0, 0.0], CANDIDATES, 2), {}, "формы"),
        ((QUERY, [[]], 2), {}, "непустым"),
    ],
)
def test_mmr_bad_input(args, kwargs, message):
    with pytest.raises(MiniRagError, match=message):
        mmr(*args, **kwargs)


DOCS = [
    Document("pass", "Пропуск", "Срок действия пропуска — один год. Пропуск продлевают в бюро пропусков."),
    Document("lost", "Утеря", "Если пропуск утерян, срок выдачи нового пропуска — три дня."),
    Document("vpn", "VPN", "VPN нужен для работы из дома. Пароль от VPN меняют раз в квартал."),
]


def test_mmr_search_with_lambda_one_equals_search():
    index = Index.build(DOCS, chunker=lambda text: [text])
    assert mmr_search(index, "срок действия пропуска", k=3, lambda_=1.0) == index.search("срок действия пропуска", k=3)


# ---------- оценщик пар ----------
def test_lexical_scorer_hand_worked():
    # idf_texts: каждое слово запроса в 1 из 4 текстов → у всех idf = ln(1 + 3.5/1.5) — веса равны,
    # coverage = доля слов запроса, proximity — среднее по парам (срок, действия), (действия, пропуска).
    scorer = LexicalPairScorer(["срок", "действия", "пропуска", "прочее"], proximity_weight=0.5, window=3)
    texts = [
        "Срок действия пропуска — один год.",  # 3/3; обе пары рядом по порядку: 1 → 1 + 0.5·1 = 1.5
        "Действия пропуска не ограничены, срок уточняйте.",  # 3/3; (срок, действия) через 4 > 3: 0 → 1 + 0.5·0.5
        "Пропуска срок",  # 2/3; пары без «действия» → 0.6667
        "Действия срок",  # 2/3; (срок, действия) в обратном порядке рядом: 0.5 → 2/3 + 0.5·0.25
        "Про отпуск.",  # 0
    ]
    np.testing.assert_allclose(scorer.score("срок действия пропуска", texts), [1.5, 1.25, 2 / 3, 0.7916666667, 0.0])


def test_lexical_scorer_weights_words_by_idf_of_the_candidates():
    # без idf_texts idf считается по самим текстам: «пропуск» в 1 из 4 (ln(1 + 3.5/1.5) = 1.204),
    # «отпуска» в 3 из 4 (ln(1 + 1.5/3.5) = 0.357): редкое слово весит больше.
    scores = LexicalPairScorer().score("пропуск отпуска", ["пропуск", "отпуска", "отпуска", "отпуска"])
    np.testing.assert_allclose(scores, [0.7714571117, 0.2285428883, 0.2285428883, 0.2285428883])


def test_rerank_orders_by_scorer_and_keeps_first_stage_order_on_ties():
    hits = [Hit(i + 1, 0.9 - i / 10, f"d{i}", 1, "", text)
            for i, text in enumerate(["Про отпуск.", "Пропуска срок", "Срок действия пропуска — один год.", "Срок пропуска"])]
    scorer = LexicalPairScorer(["срок", "действия", "пропуска", "прочее"])
    reranked = rerank("срок действия пропуска", hits, k=3, scorer=scorer)
    assert [h.doc_id for h in reranked] == ["d2", "d1", "d3"]  # d1 и d3 равны (2/3): порядок первого этапа
    assert [h.rank for h in reranked] == [1, 2, 3]
    assert reranked[0].score == pytest.approx(1.5)


class LengthScorer:
    """Чужой оценщик: чем короче текст, тем лучше — чтобы видеть, что rerank зовёт именно его."""

    def __init__(self):
        self.calls = []

    def score(self, query, texts):
        self.calls.append((query, list(texts)))
        return [-len(text) for text in texts]


def test_two_stage_search_uses_the_pluggable_scorer():
    index = Index.build(DOCS)
    scorer = LengthScorer()
    assert isinstance(scorer, PairScorer)
    hits = search_rerank(index, "срок пропуска", k=2, candidates=5, scorer=scorer)
    first_stage = index.search("срок пропуска", k=5)
    assert scorer.calls == [("срок пропуска", [h.text for h in first_stage])]
    expected = sorted(first_stage, key=lambda h: len(h.text))[:2]
    assert [(h.doc_id, h.chunk_id) for h in hits] == [(h.doc_id, h.chunk_id) for h in expected]
    assert [h.score for h in hits] == [-len(h.text) for h in expected]


def test_two_stage_search_default_scorer_is_lexical_and_offline():
    index = Index.build(DOCS)
    hits = search_rerank(index, "срок действия пропуска", k=1, candidates=10)
    assert hits[0].doc_id == "pass" and hits[0].text.startswith("Срок действия пропуска")


def test_rerank_rejects_a_scorer_with_wrong_number_of_scores():
    class Broken:
        def score(self, query, texts):
            return [1.0]

    hits = [Hit(1, 0.5, "a", 1, "", "текст"), Hit(2, 0.4, "b", 1, "", "другой")]
    with pytest.raises(MiniRagError, match="по одному числу"):
        rerank("запрос", hits, k=2, scorer=Broken())
    with pytest.raises(MiniRagError, match="score"):
        rerank("запрос", hits, k=2, scorer=object())


def test_cross_encoder_without_sentence_transformers_raises_russian_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # импорт упадёт, как без пакета
    with pytest.raises(MiniRagError, match="sentence-transformers"):
        CrossEncoderScorer("cross-encoder/mmarco-mMiniLMv2-L12-H384-v1")


def test_cross_encoder_adapter_passes_pairs_to_the_model():
    class FakeModel:
        def predict(self, pairs):
            return np.array([len(text) for _, text in pairs], dtype=np.float32)

    scorer = CrossEncoderScorer(model=FakeModel())
    assert isinstance(scorer, PairScorer)
    np.testing.assert_array_equal(scorer.score("запрос", ["аа", "а"]), [2.0, 1.0])
    assert [h.text for h in rerank("запрос", [Hit(1, 0.1, "a", 1, "", "а"), Hit(2, 0.1, "b", 1, "", "ааа")],
                                   k=1, scorer=scorer)] == ["ааа"]
    with pytest.raises(MiniRagError, match="model_name"):
        CrossEncoderScorer()


@pytest.mark.parametrize(
    ("kwargs", "message"), [({"window": 0}, "window"), ({"proximity_weight": -1}, "proximity_weight")]
)
def test_lexical_scorer_bad_settings(kwargs, message):
    with pytest.raises(MiniRagError, match=message):
        LexicalPairScorer(**kwargs)
    with pytest.raises(MiniRagError, match="списком текстов"):
        LexicalPairScorer().score("запрос", "одна строка")

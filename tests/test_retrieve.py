"""Retriever: поиск для ответа, где порог — ворота вопроса по лучшему чанку, а не фильтр каждого."""

import pytest

from minirag import DEMO_DOCS, HashEmbedder, Index, MiniRagError, Retriever, answer, hybrid_search

INDEX = Index.build(DEMO_DOCS, HashEmbedder(4096, stem=True, char_ngrams=(3, 5)), headers=True)
QUERY = "Сколько дней длится ежегодный отпуск?"


def test_the_threshold_is_compared_with_the_best_chunk_only():
    scores = sorted(INDEX.scores(QUERY), reverse=True)
    threshold = float(scores[0] + scores[1]) / 2  # проходит только лучший чанк
    assert len(INDEX.search(QUERY, k=5, threshold=threshold)) == 1  # фильтр каждого чанка оставил бы один
    hits = Retriever(INDEX).search(QUERY, k=5, threshold=threshold)
    assert [h.key for h in hits] == [h.key for h in INDEX.search(QUERY, k=5)]  # ворота пройдены: все пять лучших
    assert Retriever(INDEX).search(QUERY, k=5, threshold=float(scores[0]) + 0.01) == []
    assert Retriever(INDEX).search(QUERY, k=5, threshold=float(scores[0])) != []  # равный порогу — проходит


@pytest.mark.parametrize("method", ["bm25", "hybrid"])
def test_other_methods_rank_their_way_behind_the_same_cosine_gate(method):
    best = float(INDEX.scores(QUERY).max())
    retriever = Retriever(INDEX, method)
    assert retriever.search(QUERY, k=3, threshold=best + 0.01) == []
    hits = retriever.search(QUERY, k=3, threshold=best)
    assert len(hits) == 3 and [h.rank for h in hits] == [1, 2, 3]
    if method == "hybrid":
        assert hits == hybrid_search(INDEX, QUERY, k=3)


def test_answer_with_a_retriever_refuses_below_the_gate_and_quotes_above_it():
    best = float(INDEX.scores(QUERY).max())
    assert answer(Retriever(INDEX), QUERY, k=5, threshold=best + 0.01).text == "В контексте ответа нет."
    result = answer(Retriever(INDEX), QUERY, k=5, threshold=best)
    assert "28 календарных дней [1]" in result.text and len(result.hits) == 5 and result.citations.ok


def test_the_evidence_gate_opens_a_question_below_the_threshold_when_one_sentence_holds_its_words():
    best = float(INDEX.scores(QUERY).max())
    hits = Retriever(INDEX).search(QUERY, k=5)
    share = Retriever(INDEX).evidence_of(QUERY, hits)
    assert 0.5 < share <= 1.0  # «отпуск», «длится», «ежегодный», «дней» стоят в одном предложении
    assert Retriever(INDEX, evidence=share).search(QUERY, k=5, threshold=best + 0.01) == hits
    assert Retriever(INDEX, evidence=min(1.0, share + 0.01)).search(QUERY, k=5, threshold=best + 0.01) == []
    # вопрос не о корпусе: ни косинуса, ни слов в одном предложении
    off = "Как сварить гречневую кашу на воде?"
    assert Retriever(INDEX, evidence=0.5).search(off, k=5, threshold=best) == []
    assert "evidence=0.5" in repr(Retriever(INDEX, evidence=0.5))


def test_a_refusal_names_both_gates_when_the_second_is_set():
    best = float(INDEX.scores(QUERY).max())
    gated = answer(Retriever(INDEX, evidence=1.0), "Как сварить гречневую кашу на воде?", k=5, threshold=best)
    assert gated.text == "В контексте ответа нет." and "100% веса слов вопроса (вторые ворота)" in gated.reason
    plain = answer(Retriever(INDEX), "Как сварить гречневую кашу на воде?", k=5, threshold=best)
    assert "порог" in plain.reason and "вторые ворота" not in plain.reason


def test_an_evidence_share_outside_zero_to_one_is_explained():
    with pytest.raises(MiniRagError, match="evidence"):
        Retriever(INDEX, evidence=1.5)


def test_an_unknown_method_is_explained():
    with pytest.raises(MiniRagError, match="method должен быть одним из 'cosine', 'bm25', 'hybrid'"):
        Retriever(INDEX, "bm42")


def test_the_familiar_gate_lets_through_a_question_whose_words_are_all_in_the_corpus_and_only_that():
    best = float(INDEX.scores(QUERY).max())
    familiar = Retriever(INDEX, familiar=True)
    assert familiar.knows(QUERY) and len(familiar.search(QUERY, k=4, threshold=best + 0.5)) == 4
    assert Retriever(INDEX).search(QUERY, k=4, threshold=best + 0.5) == []  # без третьих ворот — отказ
    stranger = "Сколько дней длится ежегодный отпуск на Марсе?"  # «Марс» корпусу незнаком
    assert not familiar.knows(stranger)
    assert familiar.search(stranger, k=4, threshold=float(INDEX.scores(stranger).max()) + 0.01) == []
    assert not familiar.knows("Как и где?")  # одни служебные слова: знать нечего, решает порог
    assert "familiar=True" in repr(familiar) and "familiar" not in repr(Retriever(INDEX))

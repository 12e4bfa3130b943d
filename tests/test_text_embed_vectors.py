"""Токенизация, hash-эмбеддер и векторы: эталон, numpy как независимая проверка, плохой вход."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minirag import HashEmbedder, MiniRagError, cosine, l2_normalize, split_sentences, tokenize
from minirag.embed import char_ngrams_of, hash_features

texts = st.text(alphabet=st.sampled_from(list("абвгдеёжзклмнопрстуфхцчшщыэюяabcxyz0129 .,!?_-ЁКVPN")), max_size=80)


def test_tokenize_lowercases_and_keeps_only_letters_and_digits():
    assert tokenize("VPN: подключение к VPN") == ["vpn", "подключение", "к", "vpn"]
    assert tokenize("abc_def 123 x9") == ["abc", "def", "123", "x9"]
    assert tokenize("Ёлка и ёлка") == ["ёлка", "и", "ёлка"]
    assert tokenize("!!! ...") == []


def test_stemming_merges_word_forms_in_russian_and_english():
    assert tokenize("отпуска отпуском", stem=True) == ["отпуск", "отпуск"]
    assert tokenize("connecting connected", stem=True) == ["connect", "connect"]
    assert tokenize("2024", stem=True) == ["2024"]


def test_split_sentences_keeps_order_and_punctuation():
    assert split_sentences("Одно. Два! Три? Четыре… Пять") == ["Одно.", "Два!", "Три?", "Четыре…", "Пять"]
    assert split_sentences("Он сказал «Да.» Потом ушёл. (Так.) Ещё!") == ["Он сказал «Да.»", "Потом ушёл.", "(Так.)", "Ещё!"]
    assert split_sentences("  ") == []


def test_a_citation_detached_by_the_full_stop_stays_with_the_sentence_before_it():
    assert split_sentences("Отпуск длится 28 дней. [1] Его можно перенести.") == [
        "Отпуск длится 28 дней. [1]", "Его можно перенести."]
    assert split_sentences("Раз. [1]. Два! [2, 3] [4] Три.") == ["Раз. [1].", "Два! [2, 3] [4]", "Три."]
    assert split_sentences("Раз.\n[1]") == ["Раз.\n[1]"]
    # ссылка в начале текста или внутри предложения — часть своего предложения, а не конец чужого
    assert split_sentences("[2] Отпуск 28 дней. Делить можно [1] на части.") == [
        "[2] Отпуск 28 дней.", "Делить можно [1] на части."]


@given(st.lists(st.sampled_from([*"аб .!?…»)\"\n[]1", "[1]", "[2, 3]"]), max_size=40).map("".join))
@settings(max_examples=300, deadline=None)
def test_split_sentences_loses_only_whitespace(text):
    sentences = split_sentences(text)
    joined = "".join(sentences)
    assert "".join(joined.split()) == "".join(text.split())
    cursor = 0
    for sentence in sentences:  # каждое предложение — кусок исходного текста, по порядку (на этом стоит чанкер)
        cursor = text.index(sentence, cursor) + len(sentence)


@pytest.mark.parametrize("bad", [None, 42, b"bytes", ["список"]])
def test_non_string_text_is_rejected_in_russian(bad):
    with pytest.raises(MiniRagError, match="строкой"):
        tokenize(bad)


def test_hash_embedder_reproduces_reference_vectors(reference):
    embedder = HashEmbedder(dim=reference["dim"])
    cases = reference["cases"]
    matrix = embedder.embed([case["text"] for case in cases])
    for case, row in zip(cases, matrix):
        expected = np.zeros(reference["dim"])
        for position, value in case["nonzero"]:
            expected[position] = value
        np.testing.assert_allclose(row, expected, atol=1e-9, err_msg=case["text"])
        np.testing.assert_allclose(embedder.embed_one(case["text"]), expected, atol=1e-9)


def test_hash_features_worked_example():
    # «кошка» → SHA-256 → позиции 24, 58, 79, 49 и знаки −, +, −, −; после нормализации ±0.5
    assert hash_features("кошка", 96) == ((24, 58, 79, 49), (-1.0, 1.0, -1.0, -1.0))
    vector = HashEmbedder().embed_one("кошка")
    assert vector[24] == -0.5 and vector[58] == 0.5 and np.count_nonzero(vector) == 4


def test_token_cache_does_not_change_vectors():
    embedder = HashEmbedder()
    first = embedder.embed(["Регламент отпуска", "отпуск"])
    second = embedder.embed(["Регламент отпуска", "отпуск"])
    assert np.array_equal(first, second)
    assert np.array_equal(first, HashEmbedder().embed(["Регламент отпуска", "отпуск"]))


def test_options_change_vectors_and_fingerprint():
    plain, stem, grams = HashEmbedder(), HashEmbedder(stem=True), HashEmbedder(char_ngrams=(3, 5))
    assert len({plain.fingerprint, stem.fingerprint, grams.fingerprint, HashEmbedder(dim=64).fingerprint}) == 4
    # стемминг сводит словоформы в один вектор, а без него это разные слова
    assert cosine(stem.embed_one("отпуска"), stem.embed_one("отпуском")) == pytest.approx(1.0)
    assert cosine(plain.embed_one("отпуска"), plain.embed_one("отпуском")) == 0.0
    # n-граммы делают опечатку похожей на слово
    assert cosine(plain.embed_one("регламент"), plain.embed_one("реглмаент")) == 0.0
    assert cosine(grams.embed_one("регламент"), grams.embed_one("реглмаент")) > 0.3


def test_char_ngrams_mark_word_boundaries():
    assert char_ngrams_of("кот", 3, 3) == ["<ко", "кот", "от>"]
    assert char_ngrams_of("да", 3, 5) == ["<да", "да>", "<да>"]


@given(st.lists(texts, max_size=6))
@settings(max_examples=60, deadline=None)
def test_rows_are_unit_or_zero(batch):
    matrix = HashEmbedder().embed(batch)
    assert matrix.shape == (len(batch), 96)
    norms = np.linalg.norm(matrix, axis=1)
    for text, norm in zip(batch, norms):
        counts = np.zeros(96)  # сумма знаков по позициям до нормировки, посчитанная заново
        for token in tokenize(text):
            positions, signs = hash_features(token, 96)
            np.add.at(counts, list(positions), signs)
        expected = 1.0 if counts.any() else 0.0
        assert norm == pytest.approx(expected, abs=1e-12)


def test_a_word_whose_positions_cancel_gets_the_zero_vector():
    """У «гбоэ» четыре позиции совпали попарно, с разными знаками, и погасили друг друга: вектор нулевой,
    косинус с ним 0.0, не NaN (так устроен хеш курса, эталонные векторы от этого не меняются)."""
    assert hash_features("гбоэ", 96) == ((34, 52, 34, 52), (-1.0, -1.0, 1.0, 1.0))
    vector = HashEmbedder().embed_one("гбоэ")
    assert not vector.any()
    assert cosine(vector, HashEmbedder().embed_one("отпуск")) == 0.0


@pytest.mark.parametrize("kwargs", [{"dim": 0}, {"dim": -5}, {"dim": 2.5}, {"char_ngrams": (5, 3)}, {"char_ngrams": 3}])
def test_bad_embedder_settings_are_rejected(kwargs):
    with pytest.raises(MiniRagError):
        HashEmbedder(**kwargs)


def test_embed_rejects_a_bare_string_and_non_strings():
    with pytest.raises(MiniRagError, match="embed_one"):
        HashEmbedder().embed("одна строка")
    with pytest.raises(MiniRagError, match="№1"):
        HashEmbedder().embed(["ок", 7])


def test_cosine_worked_example():
    # a=(1,2,2), b=(2,0,1): a·b = 4, ‖a‖ = 3, ‖b‖ = √5 → 4/(3√5) ≈ 0.596285
    assert cosine([1, 2, 2], [2, 0, 1]) == pytest.approx(0.596285, abs=1e-6)
    assert l2_normalize([3, 4]).tolist() == [0.6, 0.8]


@given(st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=20).flatmap(
    lambda a: st.tuples(st.just(a), st.lists(st.floats(-1e3, 1e3), min_size=len(a), max_size=len(a)))))
@settings(max_examples=100, deadline=None)
def test_cosine_matches_numpy(pair):
    a, b = (np.asarray(v) for v in pair)
    denominator = np.linalg.norm(a) * np.linalg.norm(b)
    expected = 0.0 if denominator == 0 else float(a @ b / denominator)
    assert cosine(a, b) == pytest.approx(expected, abs=1e-9)


def test_zero_vector_stays_zero_and_scores_zero():
    assert l2_normalize([0.0, 0.0]).tolist() == [0.0, 0.0]
    assert l2_normalize([[0, 0], [0, 2]]).tolist() == [[0, 0], [0, 1]]
    assert cosine([0, 0], [1, 1]) == 0.0


@pytest.mark.parametrize("a, b", [([1, 2], [1, 2, 3]), ([[1, 2]], [[1, 2]]), ([], []), (["x"], [1]), ([np.nan], [1.0])])
def test_cosine_rejects_bad_vectors(a, b):
    with pytest.raises(MiniRagError):
        cosine(a, b)

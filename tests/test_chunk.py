"""Чанкинг: эталонные случаи, порядок текста, перекрытие, плохие параметры."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minirag import MiniRagError, chunk_spans, chunk_text

words = st.sampled_from(["отпуск", "VPN", "заявка", "руководитель", "дни", "ключ", "пропуск", "28", "офис", "доступ"])
sentences = st.lists(words, min_size=1, max_size=12).map(lambda w: " ".join(w).capitalize() + ".")
documents = st.lists(sentences, min_size=1, max_size=12).map(" ".join)


def test_reference_chunk_cases(reference):
    for case in reference["chunk_cases"]:
        assert chunk_text(case["text"], max_chars=case["max_chars"]) == case["chunks"]


def test_sentences_are_packed_greedily_worked_example():
    text = "Один два. Три четыре. Пять шесть семь."
    # 9 + 1 + 11 = 21 ≤ 22, а третье предложение уже не влезает
    assert chunk_text(text, max_chars=22) == ["Один два. Три четыре.", "Пять шесть семь."]


def test_long_sentence_is_split_after_the_pending_chunk():
    text = "Коротко. " + " ".join(["слово"] * 10) + ". Хвост."
    chunks = chunk_text(text, max_chars=20)
    assert chunks[0] == "Коротко."
    assert chunks[1].startswith("слово")
    assert all(len(c) <= 20 for c in chunks)


def test_a_word_longer_than_max_chars_is_cut_by_characters():
    assert chunk_text("а" * 25, max_chars=10) == ["а" * 10, "а" * 10, "а" * 5]


def test_overlap_repeats_the_tail_words_worked_example():
    text = "Альфа бета гамма. Дельта эпсилон дзета."
    assert chunk_text(text, max_chars=30, overlap=0) == ["Альфа бета гамма.", "Дельта эпсилон дзета."]
    assert chunk_text(text, max_chars=30, overlap=6) == ["Альфа бета гамма.", "гамма. Дельта эпсилон дзета."]


@given(documents, st.integers(20, 300))
@settings(max_examples=150, deadline=None)
def test_chunking_keeps_every_word_in_order(text, max_chars):
    chunks = chunk_text(text, max_chars=max_chars)
    assert " ".join(chunks).split() == text.split()
    assert all(0 < len(c) <= max_chars for c in chunks)


@given(documents, st.integers(20, 300), st.integers(0, 19))
@settings(max_examples=150, deadline=None)
def test_chunks_with_overlap_are_ordered_spans_of_the_text(text, max_chars, overlap):
    spans = chunk_spans(text, max_chars=max_chars, overlap=overlap)
    assert all(0 < e - s <= max_chars for s, e in spans)
    # границы чанков — границы слов, а между соседними чанками нет пропущенного текста
    assert all((s == 0 or text[s - 1].isspace()) and (e == len(text) or text[e].isspace()) for s, e in spans)
    assert spans[0][0] == 0 and spans[-1][1] == len(text.rstrip())
    for (s1, e1), (s2, e2) in zip(spans, spans[1:]):
        assert s1 < s2 and e1 < e2, "чанки идут по порядку текста"
        assert s2 <= e1 or text[e1:s2].isspace(), "между чанками не теряется текст"
        assert e1 - s2 <= overlap, "повтор не длиннее overlap"


def test_empty_text_gives_no_chunks():
    assert chunk_text("") == [] and chunk_text("   ") == []


@pytest.mark.parametrize("kwargs, message", [
    ({"max_chars": 0}, "max_chars"), ({"max_chars": 10, "overlap": 10}, "overlap"),
    ({"max_chars": 10, "overlap": -1}, "overlap"), ({"max_chars": "220"}, "max_chars"),
])
def test_bad_chunk_parameters_are_rejected(kwargs, message):
    with pytest.raises(MiniRagError, match=message):
        chunk_text("Текст.", **kwargs)

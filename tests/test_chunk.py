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


def _check_in_order(text, chunks):
    """Каждый чанк — непрерывный кусок слов текста, куски идут по порядку и покрывают всё."""
    all_words = text.split()
    covered, previous_start = 0, -1
    for chunk in chunks:
        piece = chunk.split()
        starts = [s for s in range(previous_start + 1, covered + 1) if all_words[s : s + len(piece)] == piece]
        assert starts, f"чанк {chunk!r} не найден по порядку"
        previous_start = starts[-1]
        covered = max(covered, previous_start + len(piece))
    assert covered == len(all_words)


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
    assert all(text[s:e] == text[s:e].strip() and 0 < e - s <= max_chars for s, e in spans)
    assert [s for s, _ in spans] == sorted({s for s, _ in spans})
    _check_in_order(text, [text[s:e] for s, e in spans])


def test_empty_text_gives_no_chunks():
    assert chunk_text("") == [] and chunk_text("   ") == []


@pytest.mark.parametrize("kwargs, message", [
    ({"max_chars": 0}, "max_chars"), ({"max_chars": 10, "overlap": 10}, "overlap"),
    ({"max_chars": 10, "overlap": -1}, "overlap"), ({"max_chars": "220"}, "max_chars"),
])
def test_bad_chunk_parameters_are_rejected(kwargs, message):
    with pytest.raises(MiniRagError, match=message):
        chunk_text("Текст.", **kwargs)

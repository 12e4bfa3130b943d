"""Чанкеры по смыслу, таблицам и коду: границы на ручных примерах, каждое слово на месте и по порядку."""

import ast
import functools
import math
import textwrap

import numpy as np
import pytest

from minirag import (
    Document,
    HashEmbedder,
    Index,
    MiniRagError,
    TableChunk,
    chunk_text,
    code_chunks,
    layout_chunks,
    semantic_chunks,
    split_sentences,
    table_chunks,
    tokenize,
)


def words_in_order(pieces):
    return [token for piece in pieces for token in tokenize(piece)]


# ---------- смысловой чанкинг ----------
class AngleEmbedder:
    """Предложение i → единичный вектор на плоскости под углом angles[i]: косинус соседей = cos(Δугла)."""

    fingerprint = "AngleEmbedder/test"

    def __init__(self, sentences, neighbour_cosines):
        angles = np.concatenate([[0.0], np.cumsum(np.arccos(neighbour_cosines))])
        self.table = {s: np.array([math.cos(a), math.sin(a)]) for s, a in zip(sentences, angles, strict=True)}

    def embed(self, texts):
        return np.array([self.table[text] for text in texts])


SENTENCES = ["Отпуск длится 28 дней.", "Его можно делить на части.", "VPN нужен для работы из дома.",
             "Пароль от VPN меняют раз в квартал.", "Пароль не сообщают коллегам."]
TEXT = " ".join(SENTENCES)


def test_semantic_chunks_cut_below_lower_quartile_hand_worked():
    # косинусы соседей 0.9, 0.1, 0.8, 0.7; нижний квартиль (np.quantile, линейно) = 0.1 + 0.75·(0.7 − 0.1) = 0.55:
    # ниже него только 0.1 — режем между вторым и третьим предложением.
    embedder = AngleEmbedder(SENTENCES, [0.9, 0.1, 0.8, 0.7])
    assert np.quantile([0.9, 0.1, 0.8, 0.7], 0.25) == pytest.approx(0.55)
    chunks = semantic_chunks(TEXT, embedder)
    assert chunks == [" ".join(SENTENCES[:2]), " ".join(SENTENCES[2:])]
    # с квантилем 0.5 (медиана 0.75) режем ещё и перед последним предложением (0.7 < 0.75)
    assert semantic_chunks(TEXT, embedder, quantile=0.5) == [" ".join(SENTENCES[:2]), " ".join(SENTENCES[2:4]),
                                                               SENTENCES[4]]


def test_semantic_chunks_keep_every_word_in_order_and_plug_into_index():
    text = "Первый абзац про отпуск.  Ещё строка!\nVPN нужен дома? Да… Пароль меняют. Конец текста."
    chunks = semantic_chunks(text)
    assert words_in_order(chunks) == tokenize(text)
    assert all(chunk in text for chunk in chunks)
    index = Index.build([Document("a", "A", text)], chunker=semantic_chunks)
    assert [c.text for c in index.chunks] == chunks
    custom = functools.partial(semantic_chunks, embedder=HashEmbedder(dim=32))
    custom_chunks = [c.text for c in Index.build([Document("a", "A", text)], chunker=custom).chunks]
    assert custom_chunks == custom(text) and words_in_order(custom_chunks) == tokenize(text)


def test_semantic_chunks_short_texts():
    assert semantic_chunks("") == []
    assert semantic_chunks("Одно предложение.") == ["Одно предложение."]
    assert semantic_chunks("  Раз. Два.  ") == ["Раз. Два."]
    assert split_sentences("Раз. Два.") == ["Раз.", "Два."]


# ---------- код ----------
SOURCE = '''"""Модуль для примера."""

import os

LIMIT = 3


# комментарий про функцию
@functools.cache
def first(x):
    """Первая."""

    return x + LIMIT


class Second:
    def method(self):

        return os.sep


async def third():
    return 3
print(first(1))
'''


def test_code_chunks_split_between_top_level_definitions():
    chunks = code_chunks(SOURCE)
    assert chunks == [
        '"""Модуль для примера."""\n\nimport os\n\nLIMIT = 3',
        '# комментарий про функцию\n@functools.cache\ndef first(x):\n    """Первая."""\n\n    return x + LIMIT',
        "class Second:\n    def method(self):\n\n        return os.sep",
        "async def third():\n    return 3",
        "print(first(1))",
    ]
    for chunk in chunks:  # каждый кусок — целый код, ни одно определение не разрезано
        ast.parse(chunk)
    assert words_in_order(chunks) == tokenize(SOURCE)


def test_code_chunks_plug_into_index():
    index = Index.build([Document("mod", "module.py", SOURCE)], chunker=code_chunks)
    assert [c.text for c in index.chunks] == code_chunks(SOURCE)
    assert [c.chunk_id for c in index.chunks] == [1, 2, 3, 4, 5]


def test_code_chunks_reject_non_python():
    with pytest.raises(MiniRagError, match="синтаксическая ошибка в строке 1"):
        code_chunks("def (: нет")
    assert code_chunks("") == []


# ---------- таблицы ----------
MARKDOWN = """Цены на канцелярию.

| Товар | Цена | Склад |
|---|---:|---|
| ручка | 12 | А |
| карандаш | 8 | А |
| блокнот | 45 | Б |
| папка | 30 | Б |
| скрепки | 5 | В |

Цены без НДС. Обновляются раз в месяц.
"""


def test_table_chunks_repeat_the_header_in_every_table_chunk():
    chunks = table_chunks(MARKDOWN, rows_per_chunk=2)
    header = "| Товар | Цена | Склад |\n|---|---:|---|\n"
    assert [c.text for c in chunks] == [
        "Цены на канцелярию.",
        header + "| ручка | 12 | А |\n| карандаш | 8 | А |",
        header + "| блокнот | 45 | Б |\n| папка | 30 | Б |",
        header + "| скрепки | 5 | В |",
        "Цены без НДС. Обновляются раз в месяц.",
    ]
    table = [c for c in chunks if "|" in c.text]
    assert len(table) == 3 and all(c.text.startswith(header) for c in table)
    # первый кусок таблицы — подстрока текста (шапка на своём месте), остальные — с повторённой шапкой
    assert [c.repeated_header for c in table] == ["", header, header]
    for c in chunks:
        assert c.text == c.repeated_header + MARKDOWN[c.start : c.end]
    assert words_in_order(MARKDOWN[c.start : c.end] for c in chunks) == tokenize(MARKDOWN)


def test_table_chunks_csv_like():
    text = "Отчёт по складу\nтовар;цена;склад\nручка;12;А\nкарандаш;8;А\nблокнот;45;Б\nКонец отчёта."
    chunks = table_chunks(text, rows_per_chunk=2)
    assert [c.text for c in chunks] == ["Отчёт по складу", "товар;цена;склад\nручка;12;А\nкарандаш;8;А",
                                        "товар;цена;склад\nблокнот;45;Б", "Конец отчёта."]
    assert all(c.text.startswith("товар;цена;склад\n") for c in chunks[1:3])
    assert words_in_order(text[c.start : c.end] for c in chunks) == tokenize(text)


def test_table_chunks_cannot_plug_into_index_build():
    # задокументированное ограничение: кусок с повторённой шапкой — не подстрока документа
    assert isinstance(table_chunks(MARKDOWN)[0], TableChunk)
    with pytest.raises(MiniRagError):
        Index.build([Document("t", "Таблица", MARKDOWN)], chunker=table_chunks)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: table_chunks(MARKDOWN, rows_per_chunk=0), "rows_per_chunk"),
        (lambda: table_chunks(None), "строкой"),
        (lambda: semantic_chunks(TEXT, quantile=2), "quantile"),
        (lambda: semantic_chunks(42), "строкой"),
        (lambda: code_chunks(b"def f(): pass"), "строкой"),
        (lambda: layout_chunks(TEXT, max_chars=0), "max_chars"),
        (lambda: layout_chunks(["| a |"]), "строкой"),
    ],
)
def test_chunkers_bad_input_raise_russian_error(call, message):
    with pytest.raises(MiniRagError, match=message):
        call()


# ---------- чанкер команды index: таблицы, числа и имена целиком ----------
PRICES = """# Абонементы

| Тариф | Месяц | Полугодие | Год |
|---|---|---|---|
| Детский | 3 200 | 16 800 | 30 800 |
| Взрослый | 4 500 | 24 000 | 44 500 |
| Семейный. Для двоих | 7 000 | 38 000 | 70 000 |

Мы находимся по адресу: ул. Садовая, д. 5. Директор — А. Г. Прохоров. Звоните по будням."""
ROWS = [line for line in PRICES.splitlines() if line.startswith("| ")]


def test_layout_chunks_never_cut_a_table_row_or_a_number_in_it():
    # chunk_text режет таблицу без точек по словам: «30» в одном чанке, «800» в другом — так пользователь получил
    # «Цена за полугодие: 30 [1]»; и режет строку после «Семейный.»
    assert any(chunk.endswith("| Семейный.") for chunk in chunk_text(PRICES, max_chars=220))
    for max_chars in (40, 60, 80, 120, 220):
        chunks = layout_chunks(PRICES, max_chars=max_chars)
        assert all(0 < len(chunk) <= max_chars for chunk in chunks)
        for row in ROWS:
            if row == ROWS[0] and len(row) + 18 <= max_chars:  # шапка не отрывается от «|---|» под ней
                assert any(row + "\n|---|---|---|---|" in chunk for chunk in chunks), max_chars
            if len(row) <= max_chars:
                assert any(row in chunk for chunk in chunks), (max_chars, row)
            else:  # строка длиннее чанка делится по ячейкам: каждое число целиком в одном чанке
                for number in ("7 000", "38 000", "70 000"):
                    assert any(number in chunk for chunk in chunks), (max_chars, number)


def test_layout_chunks_keep_a_street_and_initials_with_their_sentence():
    assert layout_chunks(PRICES, max_chars=80)[-2:] == [
        "Мы находимся по адресу: ул. Садовая, д. 5. Директор — А. Г. Прохоров.", "Звоните по будням."]
    assert "Садовая, д. 5. Директор — А. Г. Прохоров. Звоните по будням." not in chunk_text(PRICES, max_chars=80)


def test_layout_chunks_cut_a_long_unpunctuated_text_at_lines_before_words():
    lines = [f"Пункт {n}: выдача книг с {n + 8}:00" for n in range(1, 9)]
    chunks = layout_chunks("\n".join(lines), max_chars=70)
    assert all(len(chunk) <= 70 for chunk in chunks)
    assert [line for chunk in chunks for line in chunk.split("\n")] == lines


def test_layout_chunks_are_ordered_pieces_of_the_text_and_plug_into_index():
    docs = [Document("prices", "Цены", PRICES), Document("prose", "Проза", TEXT)]
    index = Index.build(docs, HashEmbedder(dim=64), chunker=functools.partial(layout_chunks, max_chars=60))
    texts = [index.chunk(i).text for i in range(len(index))]
    assert words_in_order(texts) == words_in_order([PRICES, TEXT])
    assert any("| Детский | 3 200 | 16 800 | 30 800 |" in text for text in texts)


def test_layout_chunks_cut_a_table_of_twenty_thousand_rows_by_rows():
    rows = "\n".join(f"| {n} | {n * 7} 000 |" for n in range(20_000))
    chunks = layout_chunks(rows, max_chars=220)
    assert "".join(chunks).replace("\n", "") == rows.replace("\n", "")
    assert all(chunk.startswith("| ") and chunk.endswith(" 000 |") for chunk in chunks)


def test_layout_chunks_treat_a_line_break_inside_a_sentence_as_a_space():
    # перенос строки в абзаце (текст, свёрстанный по 60 символов) — не граница: длинное предложение режется по
    # словам, как у chunk_text, а не на концах строк, где обрывок вроде «…вопрос о цене билета на поезд не находит»
    # стал бы отдельным «предложением» чанка
    sentence = ("Доля бывает взвешенной: каждая основа получает вес по своему корпусу, и чем в меньшем числе чанков "
                "слово, тем оно весомее, а слово, которого в корпусе нет, весомее всех, и тогда вопрос о цене билета "
                "на поезд не находит ответа в предложении, где с ним совпало одно частое слово.")
    wrapped = "Короткое начало.\n" + "\n".join(textwrap.wrap(sentence, 60)) + "\nДальше новый абзац."
    assert layout_chunks(wrapped, max_chars=120) == chunk_text(wrapped, max_chars=120)
    listed = "Цены\n" + "\n".join(f"Стрижка модельная {n} — {n} 500 руб" for n in range(1, 9))
    assert all(chunk.endswith("500 руб") for chunk in layout_chunks(listed, max_chars=120))

"""Экстрактивный генератор, протокол генератора и ``answer`` с запасным ответом."""

from __future__ import annotations

import math
import re
import socket

import pytest
from fakes import Scripted
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from minirag import (
    REFUSAL,
    Answer,
    ExtractiveGenerator,
    Generator,
    HashEmbedder,
    Hit,
    Index,
    MiniRagError,
    OpenAIChat,
    Retriever,
    answer,
    build_prompt,
    check_citations,
    tokenize,
)
from minirag.bm25 import lucene_idf
from minirag.data import DEMO_DOCS, DEMO_QUERIES
from minirag.generate import WEIGHTED_COVERAGE, WEIGHTED_RUNNER_UP
from minirag.sentences import candidate_sentences, headings
from minirag.terms import TermWeights, _same, about_code, match, question_terms
from minirag.text import whole_sentences

HITS = [
    Hit(1, 0.8, "vacation", 1, "Отпуск", "Ежегодный отпуск длится 28 дней. Его можно делить на части."),
    Hit(2, 0.5, "vacation", 2, "Отпуск", "Заявку на отпуск подают за две недели."),
    Hit(3, 0.2, "vpn", 1, "VPN", "VPN нужен для доступа из дома."),
]
INDEX = Index.build(DEMO_DOCS, HashEmbedder())
WORDS = sorted({word for doc in DEMO_DOCS for word in tokenize(doc.text)})


def test_hand_worked_answer_quotes_the_sentence_with_the_question_terms():
    # основы вопроса «Сколько дней длится отпуск?» — дне, длит, отпуск («сколько» — вопросительное слово);
    # «Ежегодный отпуск длится 28 дней.» содержит все три на местах 1, 2, 4: доля 1, кучность 3/4,
    # оценка 1 · (0.9 + 0.1 · 3/4) = 0.975; «Заявку на отпуск…» — одна основа из трёх: 1/3 · 1.0 = 0.333,
    # это меньше 0.9 от лучшей, и в ответ оно не идёт
    query = "Сколько дней длится отпуск?"
    assert question_terms(query) == ["дне", "длит", "отпуск"]
    assert match(question_terms(query), "Ежегодный отпуск длится 28 дней.").score == pytest.approx(0.975)
    assert match(question_terms(query), "Заявку на отпуск подают за две недели.").score == pytest.approx(1 / 3)
    text = ExtractiveGenerator().answer_from(query, HITS)
    assert text == "Ежегодный отпуск длится 28 дней [1]."
    assert ExtractiveGenerator().answer_from("Когда подают заявку на отпуск?", HITS) == \
        "Заявку на отпуск подают за две недели [2]."
    assert check_citations(text, HITS).ok


def test_two_equally_good_sentences_are_both_quoted_up_to_max_sentences():
    hits = [Hit(1, 0.5, "a", 1, "А", "Отпуск длится 28 дней."), Hit(2, 0.4, "b", 1, "Б", "Отпуск длится 28 дней всегда.")]
    assert ExtractiveGenerator().answer_from("Сколько длится отпуск?", hits) == \
        "Отпуск длится 28 дней [1]. Отпуск длится 28 дней всегда [2]."
    assert ExtractiveGenerator(max_sentences=1).answer_from("Сколько длится отпуск?", hits) == "Отпуск длится 28 дней [1]."


def test_headings_list_markers_and_code_are_not_quoted_unless_the_question_is_about_code():
    chunk = "Итоги главы\n\n1. Отпуск длится 28 дней.\n2. Его можно делить.\n\n```python\nprint(days_of_vacation)\n```"
    hits = [Hit(1, 0.5, "a", 1, "А", chunk)]
    assert candidate_sentences(chunk) == ["Отпуск длится 28 дней.", "Его можно делить."]
    assert ExtractiveGenerator().answer_from("Сколько дней длится отпуск?", hits) == "Отпуск длится 28 дней [1]."
    assert ExtractiveGenerator().answer_from("Итоги главы?", hits) == REFUSAL  # заголовок — не ответ
    assert about_code("Какой код печатает days_of_vacation?")
    assert "print(days_of_vacation) [1]." in ExtractiveGenerator().answer_from("Какой код печатает days_of_vacation?", hits)
    # пункт списка кончается «;» — в ответе он кончается цитатой и точкой, без «; [1].»
    items = [Hit(1, 0.5, "q", 1, "Тихие часы", "- в будни — с 23:00 до 7:00;\n- в выходные — с 22:00 до 10:00;")]
    assert ExtractiveGenerator(max_sentences=1).answer_from("Тихие часы в выходные?", items) == \
        "в выходные — с 22:00 до 10:00 [1]."
    # чанк начался внутри блока кода: первая голая ``` закрывает его, строки выше — код
    assert candidate_sentences("x = compute(1, 2)\n```\n\nПосле кода текст.") == ["После кода текст."]


def test_a_table_row_is_read_with_its_header_and_the_answer_names_the_columns():
    chunk = ("Тарифы\n\n| Зона | Города | Срок |\n|---|---|---:|\n| 5 | Новосибирск, Красноярск | 8–14 дней |\n"
             "| 6 | Якутск |  |\n\nПосле таблицы текст.\n| без | шапки |")
    assert candidate_sentences(chunk) == ["Зона: 5; Города: Новосибирск, Красноярск; Срок: 8–14 дней",
                                          "Зона: 6; Города: Якутск", "После таблицы текст.", "без | шапки"]
    hits = [Hit(1, 0.5, "t", 1, "Тарифы", chunk)]
    answer = ExtractiveGenerator().answer_from("Какой срок доставки в Новосибирск?", hits)
    assert answer == "Зона: 5; Города: Новосибирск, Красноярск; Срок: 8–14 дней [1]."  # «срок» — из шапки


def test_an_abbreviation_does_not_end_the_quoted_sentence():
    assert whole_sentences("Звоните диспетчеру (доб. 412) или на линию. См. ниже. Отпуск 28 дней. 2024 год.") == [
        "Звоните диспетчеру (доб. 412) или на линию.", "См. ниже.", "Отпуск 28 дней.", "2024 год."]
    hits = [Hit(1, 0.5, "f", 1, "Топливные карты", "Потеряли карту — звоните диспетчеру (доб. 412).")]
    answer = ExtractiveGenerator().answer_from("Куда звонить, если потеряли карту?", hits)
    assert answer == "Потеряли карту — звоните диспетчеру (доб. 412) [1]."
    assert check_citations(answer, hits).ok


def test_a_street_a_town_and_initials_do_not_end_the_quoted_sentence():
    """«ул. Садовая», «г. Заречный», «им. А. Г. Прохорова» — одно предложение; год в конце предложения его кончает."""
    assert whole_sentences("Мы на ул. Садовой, д. 12. Библиотека им. А. Г. Прохорова — в г. Заречный. Приказ от "
                           "20 января 2025 г. Следующий пункт.") == [
        "Мы на ул. Садовой, д. 12.", "Библиотека им. А. Г. Прохорова — в г. Заречный.", "Приказ от 20 января 2025 г.",
        "Следующий пункт."]
    hits = [Hit(1, 0.5, "contacts", 1, "Контакты", "Клиника находится по адресу: ул. Садовая, д. 12, 2 этаж. "
                                                   "Парковка во дворе.")]
    answer = ExtractiveGenerator().answer_from("Какой адрес у клиники?", hits)
    assert answer == "Клиника находится по адресу: ул. Садовая, д. 12, 2 этаж [1]."
    assert check_citations(answer, hits).ok


def test_a_faq_question_is_quoted_with_the_answer_that_follows_it():
    """В FAQ слова вопроса — в предложении-вопросе; сам он не ответ, поэтому за ним цитируется следующее."""
    hits = [Hit(1, 0.5, "faq", 1, "Вопросы", "Как часто нужно приходить на осмотр? Раз в полгода, если нет жалоб. "
                                            "Можно ли лечиться во время беременности? Можно, лучше во втором триместре.")]
    answer = ExtractiveGenerator().answer_from("Как часто нужно приходить на осмотр?", hits)
    assert answer == "Как часто нужно приходить на осмотр [1]? Раз в полгода, если нет жалоб [1]."
    assert check_citations(answer, hits).ok
    # ответ, который и так в ответе, не повторяется; вопрос без следующего предложения остаётся как есть
    last = [Hit(1, 0.5, "faq", 1, "Вопросы", "Есть ли парковка? Есть, во дворе дома 12.")]
    assert ExtractiveGenerator(runner_up=0).answer_from("Есть ли парковка во дворе?", last).count("во дворе") == 1
    alone = [Hit(1, 0.5, "faq", 1, "Вопросы", "Когда откроется новый филиал?")]
    assert ExtractiveGenerator().answer_from("Когда откроется новый филиал?", alone) == "Когда откроется новый филиал [1]?"


def test_function_words_are_dropped_as_words_not_as_stems():
    """«У нас всего около» — служебные; «меню» и «приём» — нет, хотя основы у них те же, что у «меня» и «при»."""
    assert question_terms("Сколько у нас всего мест около офиса?") == ["мест", "офис"]
    assert question_terms("Что есть в меню кафе?") == ["мен", "каф"]
    assert question_terms("Во сколько приём у врача?") == ["при", "врач"]
    assert question_terms("Как?") == ["как"]  # из одних служебных — все слова


def test_a_typo_and_a_longer_word_form_still_match():
    terms = question_terms("сколько стоит востановление hash")
    assert match(terms, "Восстановление стоит 500 рублей, а HashEmbedder бесплатен.").coverage == 1.0


def test_for_how_many_questions_a_sentence_with_a_number_comes_first():
    hits = [Hit(1, 0.5, "a", 1, "А", "Отпуск длится долго, отпуск — это отдых. В году отпуск длится 28 дней.")]
    assert ExtractiveGenerator(max_sentences=1).answer_from("Сколько длится отпуск?", hits) == \
        "В году отпуск длится 28 дней [1]."


def test_a_question_no_sentence_shares_terms_with_is_refused():
    assert ExtractiveGenerator().answer_from("Как подключить принтер в переговорной?", HITS) == REFUSAL


def test_the_generator_reads_the_same_prompt_a_model_would():
    hits = [*HITS, Hit(4, 0.1, "odd", 1, "Странный", "[2] Заголовок (x, чанк 1)\nСм. пункт [2] правил.\n\nВопрос: нет")]
    query = "Какой пункт правил про отпуск?"
    generator = ExtractiveGenerator(max_sentences=4)
    assert isinstance(generator, Generator)
    text = generator.generate(build_prompt(query, hits))
    assert text == generator.answer_from(query, hits)
    assert "(2)" in text and check_citations(text, hits).ok  # [2] из текста чанка — не ссылка
    assert generator.generate("Просто вопрос без контекста") == REFUSAL


def test_nothing_to_quote_is_an_honest_refusal():
    assert ExtractiveGenerator().answer_from("Сколько дней длится отпуск?", []) == REFUSAL
    assert ExtractiveGenerator().answer_from("?!", HITS) == REFUSAL  # у вопроса без слов нет основ


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    query=st.one_of(st.lists(st.sampled_from(WORDS), max_size=6).map(" ".join), st.text(max_size=40),
                    st.sampled_from([q.text for q in DEMO_QUERIES])),
    k=st.integers(1, 6),
    threshold=st.one_of(st.none(), st.floats(-0.2, 0.7)),
)
def test_extractive_answers_on_the_demo_corpus_always_pass_the_citation_check(query, k, threshold):
    result = answer(INDEX, query, k=k, threshold=threshold)
    assert result.citations.ok, (query, result.text, str(result.citations))
    assert not result.fallback
    if not result.hits:
        assert result.text == REFUSAL
        return
    assert result.text == ExtractiveGenerator(INDEX.embedder).answer_from(query, result.hits)
    for claim in re.findall(r"[^\[]+\[\d+\][.!?…]*", result.text):  # каждая цитата — из своего источника
        n = int(re.search(r"\[(\d+)\]", claim).group(1))
        quoted = re.sub(r" \[\d+\]", "", claim).strip()
        source = " ".join(result.hits[n - 1].text.split())
        assert quoted in source or quoted.rstrip(".") in source, (claim, source)


@settings(max_examples=80, deadline=None)
@given(texts=st.lists(st.text(alphabet="абв ABC 12[],.!?…»()\nВопрос:чанк", max_size=60), min_size=1, max_size=4),
       query=st.text(alphabet="абв ABC 12[].?\n", max_size=20))
def test_any_chunk_text_gives_checkable_citations(texts, query):
    hits = [Hit(n, 0.5, f"d{n}", 1, "Т", text) for n, text in enumerate(texts, start=1)]
    generator = ExtractiveGenerator(max_sentences=3)
    text = generator.answer_from(query, hits)
    assert check_citations(text, hits).ok, (text, str(check_citations(text, hits)))
    if query.strip():
        assert generator.generate(build_prompt(query, hits)) == text


def test_answer_returns_data_the_learner_can_check():
    result = answer(INDEX, DEMO_QUERIES[0].text, k=3)
    assert isinstance(result, Answer) and len(result.hits) == 3 and not result.fallback
    assert result.prompt == build_prompt(DEMO_QUERIES[0].text, list(result.hits))
    assert result.citations == check_citations(result.text, result.hits)
    assert result.text in str(result)


def test_with_nothing_above_the_threshold_the_generator_is_not_called():
    generator = Scripted()
    result = answer(INDEX, "Сколько дней отпуска?", generator, threshold=0.99)
    assert result.text == REFUSAL and result.hits == () and generator.prompts == []
    assert result.citations.ok and result.citations.refusal and "порог" in result.reason


def test_a_failing_generator_gives_a_fallback_answer_with_everything_retrieved():
    query = DEMO_QUERIES[0].text
    failing = Scripted(ConnectionError("сеть упала"))
    result = answer(INDEX, query, failing, k=3)
    assert result.fallback and "сеть упала" in result.reason and "Scripted" in result.reason
    assert result.hits == tuple(INDEX.search(query, k=3)) and failing.prompts == [result.prompt]
    assert result.text == ExtractiveGenerator().answer_from(query, result.hits) and result.citations.ok
    assert "Запасной ответ" in str(result)


def test_generators_are_tried_in_order_until_one_answers():
    first, second = Scripted(TimeoutError("долго")), Scripted("Отпуск 28 дней [1].")
    result = answer(INDEX, "Сколько дней отпуска?", [first, second])
    assert result.text == "Отпуск 28 дней [1]." and not result.fallback and result.citations.ok
    assert "долго" in result.reason, "отказ первого генератора не прячется, даже если второй ответил"
    result = answer(INDEX, "Сколько дней отпуска?", [Scripted(None), Scripted(RuntimeError("x"))])
    assert result.fallback and "NoneType" in result.reason and "RuntimeError" not in result.reason
    assert "x" in result.reason.split("; ")[1]


def test_a_model_answer_that_breaks_the_rules_is_reported_not_hidden():
    result = answer(INDEX, "Сколько дней отпуска?", Scripted("Отпуск 28 дней. Так сказал мне друг [9]."))
    assert not result.fallback and not result.citations.ok and result.citations.unknown == (9,)


def test_an_unreachable_model_server_falls_back_and_names_the_url():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    result = answer(INDEX, "Сколько дней отпуска?", OpenAIChat("qwen2.5:7b", url, retries=0))
    assert result.fallback and url in result.reason and "OpenAIChat" in result.reason
    assert result.citations.ok and len(result.hits) == 3


def test_bad_arguments_are_explained():
    with pytest.raises(MiniRagError, match="generate"):
        answer(INDEX, "вопрос", object())
    with pytest.raises(MiniRagError, match="пуст"):
        answer(INDEX, "вопрос", [])
    with pytest.raises(MiniRagError, match="max_sentences"):
        ExtractiveGenerator(max_sentences=0)
    with pytest.raises(MiniRagError, match="доля слов вопроса"):
        ExtractiveGenerator(threshold=2)
    with pytest.raises(MiniRagError, match="Hit"):
        ExtractiveGenerator().answer_from("вопрос", ["не Hit"])


def test_headings_are_short_standalone_lines_and_never_code_or_list_items():
    text = ("# Руководство\n\nВводный абзац.\n\n## Пропуск в офис\n\nОформляют за день.\n\n"
            "```\n# комментарий\n\nx = 1\n```\n\n- пункт без точки\n\nСтрока, которая\nпродолжается ниже.\n\nИтоги\n")
    assert [h for _, h in headings(text)] == ["Руководство", "Пропуск в офис", "Итоги"]
    assert all(text[offset:].lstrip("# ").startswith(h) for offset, h in headings(text))


def test_a_sentence_is_read_with_the_title_of_its_source_but_needs_a_question_word_itself():
    terms = question_terms("Кто согласует заявку на доступ к системе?")  # соглас, заявк, доступ, систем
    rule = "Заявку согласуют руководитель и владелец."
    assert match(terms, rule).coverage == 0.5
    assert match(terms, rule, "Доступ к системам").coverage == 1.0  # «доступ», «систем» — из заголовка
    assert match(terms, "Срок — три дня.", "Доступ к системам").coverage == 0.0  # своих слов вопроса нет


def test_with_context_the_generator_prefers_the_sentence_from_the_right_section():
    # оба предложения содержат «заявк» и «соглас»; раздел первого — про отпуск, второго — про доступ
    hits = [Hit(1, 0.6, "rules.md", 3, "Правила › Отпуск", "Заявку согласует руководитель за две недели."),
            Hit(2, 0.5, "rules.md", 7, "Правила › Доступ к системам", "Заявку согласует владелец за день.")]
    query = "Кто согласует заявку на доступ к системе?"
    assert ExtractiveGenerator(max_sentences=1).answer_from(query, hits) == "Заявку согласует владелец за день [2]."
    assert ExtractiveGenerator(max_sentences=1, context=False).answer_from(query, hits) == \
        "Заявку согласует руководитель за две недели [1]."
    generator = ExtractiveGenerator(max_sentences=1)
    assert generator.generate(build_prompt(query, hits)) == generator.answer_from(query, hits)  # заголовок — из промпта


OFFICE = ["Пропуск в офис выдаёт охрана на первом этаже.", "Новый пропуск при утере стоит 300 рублей.",
          "Ежегодный отпуск длится 28 календарных дней.", "Отпуск можно делить на части.",
          "Заявку на отпуск подают за две недели."]


def test_term_weights_are_idf_and_a_word_the_corpus_never_saw_weighs_most():
    weights = TermWeights(OFFICE)
    frequent, rare, unseen = weights(question_terms("отпуск пропуск поезд"))
    assert unseen > rare > 0 and unseen > frequent > 0  # «поезд» нет нигде, «пропуск» — в двух, «отпуск» — в трёх
    assert rare > frequent
    assert weights.weight("отпуск") == pytest.approx(math.log(1 + (5 - 3 + 0.5) / (3 + 0.5)), abs=1e-12)
    assert weights.weight("поезд") == pytest.approx(math.log(1 + 5.5 / 0.5), abs=1e-12)


def _near_words(term: str) -> list[str]:
    """Слова рядом с основой: её начала, продолжения, одна замена, вставка или удаление буквы."""
    letters = "бвгдк"
    edits = [term[:i] + c + term[i + 1:] for i in range(len(term)) for c in letters]
    edits += [term[:i] + c + term[i:] for i in range(len(term) + 1) for c in letters]
    edits += [term[:i] + term[i + 1:] for i in range(len(term))]
    return [term[:i] for i in range(1, len(term))] + [term + c for c in letters] + [term + "дд"] + edits


@settings(max_examples=200, deadline=None)
@given(data=st.data(), term=st.text("бвгдк", min_size=1, max_size=8))
def test_term_weights_find_every_word_match_would_count_without_scanning_the_vocabulary(data, term):
    # согласные не срезает стеммер; тексты — по одному слову рядом с основой (все) и случайные по три слова
    words = data.draw(st.lists(st.text("бвгдк", min_size=1, max_size=8), max_size=15))
    texts = _near_words(term) + [" ".join(words[i:i + 3]) for i in range(0, len(words), 3)]
    weights = TermWeights(texts)
    found = {i for i, text in enumerate(texts) if any(_same(term, word) for word in tokenize(text, stem=True))}
    assert weights.weight(term) == pytest.approx(float(lucene_idf(len(texts), len(found))), abs=1e-12)


def test_with_corpus_weights_one_common_shared_word_does_not_make_an_answer():
    hits = [Hit(i, 0.5, f"office{i}", 1, "Офис", text) for i, text in enumerate(OFFICE, start=1)]
    off_topic = "Сколько стоит билет на поезд до Казани?"  # общее с корпусом только «стоит»
    unweighted = ExtractiveGenerator().answer_from(off_topic, hits)
    assert unweighted == "Новый пропуск при утере стоит 300 рублей [2]."  # четверть слов вопроса — и это «ответ»
    weighted = ExtractiveGenerator(weights=TermWeights(OFFICE))
    assert weighted.threshold == WEIGHTED_COVERAGE
    assert weighted.answer_from(off_topic, hits) == REFUSAL  # «билет», «поезд», «казан» весят больше «стоит»
    assert weighted.answer_from("Сколько стоит новый пропуск?", hits) == "Новый пропуск при утере стоит 300 рублей [2]."


def test_with_corpus_weights_a_second_sentence_at_half_the_best_score_joins_the_answer():
    hits = [Hit(i, 0.5, f"office{i}", 1, "Офис", text) for i, text in enumerate(OFFICE, start=1)]
    query = "Где выдают новый пропуск при утере?"  # лучшее — о цене нового пропуска, второе — кто выдаёт
    best, second = "Новый пропуск при утере стоит 300 рублей [2].", "Пропуск в офис выдаёт охрана на первом этаже [1]."
    weighted = ExtractiveGenerator(weights=TermWeights(OFFICE), threshold=0.3)
    assert weighted.runner_up == WEIGHTED_RUNNER_UP == 0.5 and "runner_up=0.5" in repr(weighted)
    assert weighted.answer_from(query, hits) == f"{best} {second}"  # оценка второго — больше половины лучшей
    assert ExtractiveGenerator(weights=TermWeights(OFFICE), threshold=0.3, runner_up=0.9).answer_from(query, hits) == best
    assert ExtractiveGenerator(threshold=0.3).answer_from(query, hits) == best  # без весов — 0.9 от лучшей, как в главе 11


def test_answer_through_a_retriever_weighs_question_words_by_its_corpus():
    retriever = Retriever(INDEX)
    assert retriever.term_weights is retriever.term_weights and retriever.term_weights.n_texts == len(INDEX)
    query = "Сколько дней длится ежегодный отпуск?"
    result = answer(retriever, query, k=5)
    expected = ExtractiveGenerator(INDEX.embedder, weights=retriever.term_weights).answer_from(query, result.hits)
    assert result.text == expected and "28 календарных дней" in result.text
    with pytest.raises(ValueError, match="вес на каждую основу"):
        match(["отпуск", "дн"], "Отпуск 28 дней.", weights=[1.0])
    with pytest.raises(MiniRagError, match="weights должен"):
        ExtractiveGenerator(weights=[1.0, 2.0])


def test_least_lets_weaker_sentences_into_an_answer_but_does_not_decide_whether_to_answer():
    hits = [Hit(1, 0.9, "a", 0, "Отпуск", "Ежегодный отпуск длится 28 дней. Отпуск переносят заявлением.")]
    query = "Сколько дней длится ежегодный отпуск?"
    strict = ExtractiveGenerator(threshold=0.5, runner_up=0.0).answer_from(query, hits)
    loose = ExtractiveGenerator(threshold=0.5, least=0.2, runner_up=0.0).answer_from(query, hits)
    assert strict == "Ежегодный отпуск длится 28 дней [1]."
    assert loose == "Ежегодный отпуск длится 28 дней [1]. Отпуск переносят заявлением [1]."
    # ни одно предложение не набрало threshold — отказ, как бы мала ни была least
    assert ExtractiveGenerator(threshold=0.9, least=0.1).answer_from("Сколько дней длится отпуск на Марсе?", hits) \
        == REFUSAL
    with pytest.raises(MiniRagError, match="least.*не больше threshold = 0.5"):
        ExtractiveGenerator(threshold=0.5, least=0.6)

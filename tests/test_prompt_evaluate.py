"""Промпт с источниками, проверка цитат и метрики поиска на примерах, посчитанных вручную."""

from dataclasses import dataclass

import pytest

from minirag import Document, Hit, Index, MiniRagError
from minirag.evaluate import evaluate, hit_at_k, precision_at_k, recall_at_k, reciprocal_rank
from minirag.prompt import REFUSAL, build_prompt, check_citations, parse_citations, parse_prompt, parse_sources

HITS = [
    Hit(1, 0.8, "vacation", 1, "Отпуск", "Ежегодный отпуск длится 28 дней."),
    Hit(2, 0.5, "vacation", 2, "Отпуск", "Заявку подают за две недели."),
    Hit(3, 0.2, "vpn", 1, "VPN", "VPN нужен для доступа."),
]


def test_prompt_numbers_sources_and_states_the_rules():
    prompt = build_prompt("Сколько дней отпуска?", HITS)
    assert "[1] Отпуск (vacation, чанк 1)\nЕжегодный отпуск длится 28 дней." in prompt
    assert "[3] VPN (vpn, чанк 1)" in prompt and "[4]" not in prompt
    assert REFUSAL in prompt and "только по контексту" in prompt
    assert prompt.rstrip().endswith("Вопрос: Сколько дней отпуска?\nОтвет:")


def test_prompt_without_hits_still_has_the_refusal_rule():
    prompt = build_prompt("Какая погода?", [])
    assert "ничего не нашёл" in prompt and REFUSAL in prompt


def test_parse_prompt_reads_back_what_build_prompt_wrote():
    tricky = Hit(4, 0.1, "faq", 3, "FAQ", "Строка как заголовок:\n[9] Не источник (x, чанк 1)\n\nИ ещё абзац.")
    for query, hits in (("Сколько дней отпуска?", HITS), ("  Пусто?  ", []), ("Вопрос", [*HITS, tricky])):
        assert parse_prompt(build_prompt(query, hits)) == (query.strip(), [hit.text for hit in hits])


def test_parse_prompt_refuses_a_prompt_of_another_shape():
    assert parse_prompt("Просто скажи, сколько дней отпуска.") is None


def test_parse_citations_in_order_with_groups():
    assert parse_citations("Отпуск 28 дней [1]. Заявка за две недели [2, 3][1].") == [1, 2, 3, 1]
    assert parse_citations("Без ссылок.") == []


def test_check_citations_accepts_a_fully_cited_answer():
    report = check_citations("Отпуск длится 28 дней [1]. Заявку подают за две недели [2].", HITS)
    assert report.ok and report.cited == (1, 2) and not report.unknown and not report.uncited_sentences


def test_check_citations_reports_unknown_numbers_and_uncited_sentences():
    report = check_citations("Отпуск длится 28 дней [1]. Зарплату платят дважды в месяц. VPN нужен [7].", HITS)
    assert not report.ok
    assert report.unknown == (7,)
    assert report.uncited_sentences == ("Зарплату платят дважды в месяц.",)
    assert "[7]" in str(report) and "Зарплату" in str(report)


def test_a_citation_after_the_period_belongs_to_its_sentence():
    assert check_citations("Отпуск длится 28 дней. [1]", HITS).ok
    # глава 6: оторванная ссылка посреди ответа — у предложения до неё, а следующее предложение без ссылки
    cited_then_uncited = check_citations("Отпуск длится 28 дней. [1] Его можно перенести.", HITS)
    assert cited_then_uncited.uncited_sentences == ("Его можно перенести.",)
    assert check_citations("Отпуск длится 28 дней. [1] Его можно перенести. [2]", HITS).ok


def test_an_honest_refusal_passes_and_an_empty_answer_does_not():
    assert check_citations(REFUSAL, []).ok and check_citations(REFUSAL, []).refusal
    assert not check_citations("", HITS).ok


def test_prompt_functions_reject_bad_input():
    with pytest.raises(MiniRagError):
        build_prompt(None, HITS)
    with pytest.raises(MiniRagError, match="Hit"):
        build_prompt("вопрос", ["строка"])
    with pytest.raises(MiniRagError):
        check_citations(42, HITS)


def test_metrics_worked_example():
    ranked = ["b", "a", "b", "c", "d"]
    relevant = {"a", "c"}
    assert hit_at_k(ranked, relevant, 1) == 0.0 and hit_at_k(ranked, relevant, 2) == 1.0
    assert precision_at_k(ranked, relevant, 3) == pytest.approx(1 / 3)
    assert precision_at_k(ranked, relevant, 5) == pytest.approx(2 / 5)
    assert recall_at_k(ranked, relevant, 3) == 0.5 and recall_at_k(ranked, relevant, 4) == 1.0
    assert reciprocal_rank(ranked, relevant) == 0.5
    assert reciprocal_rank(ranked, {"z"}) == 0.0
    # пустые места (порог отсёк кандидатов) — промахи: precision делится на k, а не на число найденных
    assert precision_at_k(["a"], relevant, 3) == pytest.approx(1 / 3)


def test_metrics_reject_bad_input():
    with pytest.raises(MiniRagError, match="recall"):
        recall_at_k(["a"], set(), 3)
    with pytest.raises(MiniRagError, match="k"):
        precision_at_k(["a"], {"a"}, 0)
    with pytest.raises(MiniRagError, match="список"):
        hit_at_k("abc", {"a"}, 1)


@dataclass(frozen=True)
class Q:
    text: str
    relevant: tuple
    category: str


def test_evaluate_reports_per_query_and_per_category():
    docs = [Document("vpn", "VPN", "Подключение к VPN идёт через приложение."),
            Document("pass", "Пропуск", "Пропуск в офис выдаёт охрана."),
            Document("vacation", "Отпуск", "Ежегодный отпуск длится 28 дней.")]
    index = Index.build(docs)
    queries = [Q("отпуск 28 дней", ("vacation",), "exact"), Q("подключение к VPN", ("vpn",), "exact"),
               Q("каникулы", ("vacation",), "synonym"), Q("погода на Марсе", (), "unanswerable")]
    report = evaluate(index, queries, ks=(1, 3))
    assert [row["category"] for row in report.per_query] == ["exact", "exact", "synonym", "unanswerable"]
    assert report.per_category["exact"]["hit@1"] == 1.0
    assert report.per_category["exact"]["mrr"] == 1.0
    # у «каникулы» нет общих слов с корпусом: все оценки 0, и первым идёт первый чанк — не отпуск
    assert report.per_query[2]["ranked"][0] == "vpn" and report.per_query[2]["top_score"] == 0.0
    assert report.per_category["synonym"]["hit@1"] == 0.0 and report.per_category["synonym"]["hit@3"] == 1.0
    assert report.per_category["unanswerable"]["hit@1"] is None  # для «ответа нет» метрик нет
    assert report.per_category["unanswerable"]["n"] == 1
    assert report.overall["hit@1"] == pytest.approx(2 / 3)
    assert "exact" in report.table() and "все" in str(report)
    with pytest.raises(MiniRagError):
        evaluate(index, [], ks=(1,))


def test_parse_sources_reads_the_titles_too_even_with_brackets_in_a_title():
    hits = [*HITS, Hit(4, 0.1, "faq/old.md", 2, "FAQ (архив) › Пропуск", "Пропуск выдаёт охрана.")]
    query, sources = parse_sources(build_prompt("Кто выдаёт пропуск?", hits))
    assert query == "Кто выдаёт пропуск?"
    assert sources == [(hit.title, hit.text) for hit in hits]

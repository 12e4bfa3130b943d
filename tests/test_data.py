"""Демо-корпус и размеченные запросы: форма данных и то поведение, на котором стоят главы и лабораторные."""

from collections import Counter

import pytest

from minirag import CATEGORIES, DEMO_DOCS, DEMO_QUERIES, Document, HashEmbedder, Index, evaluate

FAILURE_KINDS = ["paraphrase", "synonym", "abbreviation", "typo", "negation", "pronoun", "homonym"]


@pytest.fixture(scope="module")
def plain_report():
    return evaluate(Index.build(DEMO_DOCS), DEMO_QUERIES, ks=(1, 3, 5))


def test_corpus_shape():
    assert len(DEMO_DOCS) >= 24
    assert all(isinstance(d, Document) for d in DEMO_DOCS)
    ids = [d.id for d in DEMO_DOCS]
    assert len(set(ids)) == len(ids)
    assert len({doc_id.split("-")[0] for doc_id in ids}) >= 6, "нужно не меньше 6 тем"
    assert all(200 <= len(d.text) <= 700 and d.title for d in DEMO_DOCS)


def test_queries_cover_every_category_and_point_at_real_documents():
    ids = {d.id for d in DEMO_DOCS}
    assert len(DEMO_QUERIES) >= 40
    counts = Counter(q.category for q in DEMO_QUERIES)
    assert set(counts) == set(CATEGORIES) and min(counts.values()) >= 5
    for query in DEMO_QUERIES:
        assert set(query.relevant) <= ids, query.text
        assert bool(query.relevant) == (query.category != "unanswerable"), query.text
    assert len({q.text for q in DEMO_QUERIES}) == len(DEMO_QUERIES)


def test_exact_queries_are_found(plain_report):
    assert plain_report.per_category["exact"]["hit@3"] == 1.0


@pytest.mark.parametrize("kind", FAILURE_KINDS)
def test_each_failure_kind_really_fails_for_the_hash_embedder(plain_report, kind):
    failures = [row for row in plain_report.per_query if row["category"] == kind and row["hit@3"] == 0.0]
    assert len(failures) >= 3, f"{kind}: глава 8 и лабораторная 4 показывают не меньше трёх провалов"


def test_char_ngrams_fix_typos():
    report = evaluate(Index.build(DEMO_DOCS, HashEmbedder(char_ngrams=(3, 5))), DEMO_QUERIES, ks=(3,))
    fixed = [row for row in report.per_query if row["category"] == "typo" and row["hit@3"] == 1.0]
    assert len(fixed) >= 3


def test_a_threshold_separates_exact_from_unanswerable_queries(plain_report):
    exact = [r["top_score"] for r in plain_report.per_query if r["category"] == "exact"]
    unanswerable = [r["top_score"] for r in plain_report.per_query if r["category"] == "unanswerable"]
    assert max(unanswerable) < min(exact)

"""Демо-корпус и размеченные запросы: форма данных и то поведение, на котором стоят главы и лабораторные."""

from collections import Counter

import pytest

from minirag import (
    CATEGORIES,
    DEMO_DOCS,
    DEMO_QUERIES,
    Document,
    HashEmbedder,
    Index,
    doc_vectors,
    evaluate,
    force_exact,
    hit_at_k,
    index_bm25,
    mmr_search,
    tokenize,
)

FAILURE_KINDS = ["paraphrase", "synonym", "abbreviation", "typo", "negation", "pronoun", "homonym"]


NEAR_DUPLICATE = 0.75  # косинус векторов документов: выше — почти повтор (глава 9)


@pytest.fixture(scope="module")
def plain_report():
    return evaluate(Index.build(DEMO_DOCS), DEMO_QUERIES, ks=(1, 3, 5))


@pytest.fixture(scope="module")
def plain_index():
    return Index.build(DEMO_DOCS)


def queries(category):
    return [q for q in DEMO_QUERIES if q.category == category]


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


def test_bm25_finds_every_code_query_while_cosine_misses_some(plain_index):
    bm25 = index_bm25(plain_index)
    code = queries("code")
    by_bm25 = [[plain_index.chunk(i).doc_id for i, _ in bm25.search(tokenize(q.text), 3)] for q in code]
    by_cosine = [[hit.doc_id for hit in plain_index.search(q.text, k=3)] for q in code]
    assert all(hit_at_k(ranked, q.relevant, 3) for ranked, q in zip(by_bm25, code)), "BM25 находит каждый код"
    misses = [q.text for ranked, q in zip(by_cosine, code) if not hit_at_k(ranked, q.relevant, 3)]
    assert len(misses) >= 3, "глава 9 показывает, что косинус теряет коды и номера"


def test_forcing_exact_matches_puts_every_quoted_phrase_first(plain_index):
    quoted = queries("quoted")
    for q in quoted:
        forced = force_exact(plain_index, q.text, plain_index.search(q.text, k=3), k=3)
        assert forced[0].doc_id in q.relevant, q.text
    misses = [q.text for q in quoted if not hit_at_k([h.doc_id for h in plain_index.search(q.text, k=3)], q.relevant, 3)]
    assert misses, "без точных совпадений косинус теряет хотя бы одну фразу в кавычках"


def test_near_duplicates_crowd_the_top_and_mmr_spreads_it(plain_index):
    ids = [d.id for d in plain_index.docs]
    similarity = doc_vectors(plain_index) @ doc_vectors(plain_index).T
    pairs = {frozenset((ids[i], ids[j])) for i in range(len(ids)) for j in range(i + 1, len(ids))
             if similarity[i, j] > NEAR_DUPLICATE}
    assert pairs == {frozenset(p) for p in [("vacation-annual", "vacation-annual-2024"),
                                            ("sick-notify", "sick-notify-memo"),
                                            ("remote-hybrid", "remote-hybrid-2024")]}
    family = {doc_id: min([doc_id, *(o for p in pairs if doc_id in p for o in p)]) for doc_id in ids}

    def rules(hits):  # сколько разных правил в выдаче: чанки одного документа и его почти повтора — одно
        return len({family[hit.doc_id] for hit in hits})

    duplicate = queries("duplicate")
    plain = [rules(plain_index.search(q.text, k=5)) for q in duplicate]
    diverse = [rules(mmr_search(plain_index, q.text, k=5)) for q in duplicate]
    assert max(plain) < 5, "без MMR в top-5 каждого такого запроса есть повтор"
    assert sum(diverse) > sum(plain), "MMR даёт в top-5 больше разных правил"


def test_dev_and_test_split_every_category_without_overlap():
    from minirag import DEMO_DEV, DEMO_TEST

    assert {q.split for q in DEMO_QUERIES} == {"dev", "test"}
    assert set(DEMO_DEV) | set(DEMO_TEST) == set(DEMO_QUERIES) and not set(DEMO_DEV) & set(DEMO_TEST)
    for category in CATEGORIES:
        dev = [q for q in DEMO_DEV if q.category == category]
        test = [q for q in DEMO_TEST if q.category == category]
        assert dev and test and abs(len(dev) - len(test)) <= 1, category

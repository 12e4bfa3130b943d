"""Демо-корпус и размеченные запросы: форма данных и то поведение, на котором стоят главы и лабораторные."""

import json
from collections import Counter

import pytest

from minirag import (
    CATEGORIES,
    DEMO_DEV,
    DEMO_DOCS,
    DEMO_QUERIES,
    DEMO_TEST,
    Document,
    HashEmbedder,
    Index,
    LabeledQuery,
    MiniRagError,
    doc_vectors,
    evaluate,
    force_exact,
    hit_at_k,
    index_bm25,
    load_corpus,
    mmr_search,
    tokenize,
)
from minirag.data import DEMO_PATH

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
    assert {q.split for q in DEMO_QUERIES} == {"dev", "test"}
    assert set(DEMO_DEV) | set(DEMO_TEST) == set(DEMO_QUERIES) and not set(DEMO_DEV) & set(DEMO_TEST)
    for category in CATEGORIES:
        dev = [q for q in DEMO_DEV if q.category == category]
        test = [q for q in DEMO_TEST if q.category == category]
        assert dev and test and abs(len(dev) - len(test)) <= 1, category


# ---------- корпус из файла: демо и замена преподавателя ----------

OWN_CORPUS = {
    "categories": {"exact": "точные термины", "unanswerable": "ответа нет"},
    "docs": [
        {"id": "canteen", "title": "Столовая", "text": "Столовая работает с 12:00 до 15:00. Обед стоит 350 рублей."},
        {"id": "parking", "title": "Парковка", "text": "Парковка у офиса бесплатная. Место бронируют накануне."},
        {"id": "library", "title": "Библиотека", "text": "Книги из библиотеки берут на месяц. Продлить можно дважды."},
    ],
    "queries": [
        {"text": "Сколько стоит обед в столовой?", "relevant": ["canteen"], "category": "exact", "split": "dev"},
        {"text": "Как забронировать парковку?", "relevant": ["parking"], "category": "exact", "split": "test"},
        {"text": "Где заказать такси?", "relevant": [], "category": "unanswerable", "split": "test"},
    ],
}


def write_json(path, data):
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def test_demo_corpus_is_the_shipped_file_with_its_split():
    demo = load_corpus(DEMO_PATH)
    assert demo.docs == DEMO_DOCS and demo.queries == DEMO_QUERIES and demo.categories == CATEGORIES
    assert (demo.split("dev"), demo.split("test")) == (DEMO_DEV, DEMO_TEST)
    # разметка dev/test записана в файле: через один внутри категории, первый — dev
    for category in CATEGORIES:
        assert [q.split for q in DEMO_QUERIES if q.category == category][:4] == ["dev", "test", "dev", "test"]


def test_an_instructors_corpus_in_the_same_format_loads_and_is_searchable(tmp_path):
    corpus = load_corpus(write_json(tmp_path / "наш_корпус.json", OWN_CORPUS))
    assert [d.id for d in corpus.docs] == ["canteen", "parking", "library"]
    assert corpus.queries[0] == LabeledQuery("Сколько стоит обед в столовой?", ("canteen",), "exact", "dev")
    assert [q.text for q in corpus.split("test")] == ["Как забронировать парковку?", "Где заказать такси?"]
    index = Index.build(corpus.docs)
    assert index.search("обед в столовой", k=1)[0].doc_id == "canteen"
    report = evaluate(index, corpus.split("dev"), ks=(1,))
    assert report.overall["hit@1"] == 1.0


def test_a_corpus_without_queries_is_just_documents(tmp_path):
    corpus = load_corpus(write_json(tmp_path / "docs.json", {"docs": OWN_CORPUS["docs"]}))
    assert len(corpus.docs) == 3 and corpus.queries == () and corpus.categories == {}


def broken(change):
    data = json.loads(json.dumps(OWN_CORPUS))
    change(data)
    return data


@pytest.mark.parametrize("data, message", [
    ([OWN_CORPUS["docs"]], "корпус — JSON-объект.*а в файле массив"),
    ({"queries": []}, "нет поля 'docs'"),
    (broken(lambda d: d.update(doc=[])), "лишнее поле 'doc'"),
    (broken(lambda d: d.update(docs=[])), "нет ни одного документа"),
    (broken(lambda d: d.update(docs={"a": 1})), r"docs — массив \[...\], а получено объект"),
    (broken(lambda d: d["docs"][1].pop("title")), r"docs\[1\]: нет поля 'title'"),
    (broken(lambda d: d["docs"][2].update(tittle="x")), r"docs\[2\]: лишнее поле 'tittle'"),
    (broken(lambda d: d["docs"][0].update(text="  ")), r"docs\[0\]: text должен быть непустой строкой"),
    (broken(lambda d: d["docs"][0].update(id=7)), r"docs\[0\]: id должен быть непустой строкой"),
    (broken(lambda d: d["docs"][2].update(id="canteen")), "id документов повторяются: 'canteen'"),
    (broken(lambda d: d["queries"][0].update(relevant="canteen")), r"queries\[0\]: relevant — массив"),
    (broken(lambda d: d["queries"][1].update(relevant=["parkin"])), r"queries\[1\]: .*нет в docs: 'parkin'"),
    (broken(lambda d: d["queries"][0].update(category="fuzzy")), "категории 'fuzzy' нет в categories"),
    (broken(lambda d: d["queries"][0].update(split="train")), "split — 'dev'.*получено 'train'"),
    (broken(lambda d: d["queries"][0].pop("split")), r"queries\[0\]: нет поля 'split'"),
    (broken(lambda d: d["queries"].append(d["queries"][0])), "тексты запросов повторяются"),
    (broken(lambda d: d.update(categories=["exact"])), "categories — объект"),
])
def test_a_malformed_corpus_is_refused_with_what_to_fix(tmp_path, data, message):
    path = write_json(tmp_path / "плохой.json", data)
    with pytest.raises(MiniRagError, match=message) as info:
        load_corpus(path)
    assert "плохой.json" in str(info.value)


def test_a_file_that_is_not_json_or_not_utf8_is_refused(tmp_path):
    trailing_comma = tmp_path / "запятая.json"
    trailing_comma.write_text('{"docs": [{"id": "a", "title": "А", "text": "Т."},]}', encoding="utf-8")
    with pytest.raises(MiniRagError, match="не JSON: строка 1"):
        load_corpus(trailing_comma)
    cp1251 = tmp_path / "cp1251.json"
    cp1251.write_bytes(json.dumps(OWN_CORPUS, ensure_ascii=False).encode("cp1251"))
    with pytest.raises(MiniRagError, match="UTF-8"):
        load_corpus(cp1251)
    with pytest.raises(MiniRagError, match="нет"):
        load_corpus(tmp_path / "нет_такого.json")

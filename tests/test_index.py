"""Индекс: метаданные, поиск (порог, k, ничьи), search_many, файл на диске, плохой вход."""

import json
import zipfile

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minirag import Document, EmbedderMismatchError, HashEmbedder, Hit, Index, MiniRagError, chunk_text, renumber, top_k

DOCS = [
    Document("vacation", "Отпуск", "Ежегодный отпуск длится 28 дней. Заявку на отпуск подают за две недели."),
    Document("vpn", "VPN", "VPN нужен для доступа к внутренним сервисам. Подключение к VPN идёт через приложение."),
    Document("pass", "Пропуск", "Пропуск в офис выдаёт охрана. Потерянный пропуск блокируют."),
]


@pytest.fixture(scope="module")
def index():
    return Index.build(DOCS, HashEmbedder(), chunker=lambda text: chunk_text(text, max_chars=50))


def test_chunks_keep_metadata_and_number_from_one(index):
    chunks = index.chunks
    assert len(index) == len(chunks) == 6
    assert [(c.doc_id, c.chunk_id) for c in chunks] == [
        ("vacation", 1), ("vacation", 2), ("vpn", 1), ("vpn", 2), ("pass", 1), ("pass", 2)]
    assert chunks[1].title == "Отпуск" and chunks[1].text == "Заявку на отпуск подают за две недели."


def test_matrix_is_float32_with_unit_rows(index):
    assert index.vectors.dtype == np.float32 and index.vectors.shape == (6, 96)
    np.testing.assert_allclose(np.linalg.norm(index.vectors, axis=1), 1.0, atol=1e-6)
    assert not index.vectors.flags.writeable


def test_search_returns_ranked_hits_with_cosine_scores(index):
    hits = index.search("подключение к VPN", k=2)
    assert [h.rank for h in hits] == [1, 2]
    assert (hits[0].doc_id, hits[0].chunk_id) == ("vpn", 2)
    expected = float(index.vectors[3] @ HashEmbedder().embed_one("подключение к VPN").astype(np.float32))
    assert hits[0].score == pytest.approx(expected, abs=1e-6)
    assert hits[0].score >= hits[1].score


def test_the_index_builds_hits_and_renumber_keeps_chunks_and_order(index):
    hit = index.hit(3, np.float32(0.25), rank=2)
    assert hit == Hit(2, 0.25, "vpn", 2, "VPN", "Подключение к VPN идёт через приложение.") and type(hit.score) is float
    assert hit.key == index.chunk(3).key == ("vpn", 2) and index.position(*hit.key) == 3
    hits = index.search("отпуск VPN пропуск", k=3)
    reversed_hits = renumber(hits[::-1], scores=[0.3, 0.2, 0.1])
    assert [h.rank for h in reversed_hits] == [1, 2, 3] and [h.score for h in reversed_hits] == [0.3, 0.2, 0.1]
    assert [h.key for h in reversed_hits] == [h.key for h in hits[::-1]]
    assert renumber(hits) == hits


def test_spans_are_public_and_read_only(index):
    row, chunk_id, start, end = index.spans[1]
    assert index.docs[row].text[start:end] == index.chunk(1).text and chunk_id == 2
    with pytest.raises(ValueError):
        index.spans[0, 0] = 5


def test_threshold_first_then_k_and_empty_when_nothing_passes(index):
    scores = index.scores("отпуск")
    assert sum(s >= 0.2 for s in scores) == len(index.search("отпуск", k=10, threshold=0.2))
    assert index.search("отпуск", k=1, threshold=0.99) == []
    assert index.search("квантовая хромодинамика", k=3, threshold=0.2) == []


def test_query_without_tokens_scores_zero_and_passes_no_positive_threshold(index):
    assert np.all(index.scores("!!! ...") == 0.0)
    hits = index.search("...", k=2)
    assert [h.score for h in hits] == [0.0, 0.0] and [h.chunk_id for h in hits] == [1, 2]
    assert index.search("...", k=2, threshold=0.001) == []


def test_top_k_ties_keep_index_order_worked_example():
    assert top_k([0.2, 0.9, 0.2, 0.5, 0.2], k=3).tolist() == [1, 3, 0]
    assert top_k([0.2, 0.9, 0.2, 0.5, 0.2], k=4).tolist() == [1, 3, 0, 2]
    assert top_k([0.2, 0.9, 0.2, 0.5, 0.2], k=3, threshold=0.3).tolist() == [1, 3]
    assert top_k([0.1, 0.1], k=5, threshold=0.5).tolist() == []


@given(st.lists(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.5, 0.75, 1.0, -0.3]), min_size=1, max_size=40),
       st.integers(1, 50), st.one_of(st.none(), st.sampled_from([-0.5, 0.0, 0.3, 0.6])))
@settings(max_examples=200, deadline=None)
def test_top_k_equals_a_stable_full_sort(scores, k, threshold):
    chosen = top_k(np.asarray(scores, dtype=np.float32), k, threshold)
    passing = [i for i, s in enumerate(scores) if threshold is None or s >= threshold]
    expected = sorted(passing, key=lambda i: (-scores[i], i))[:k]
    assert chosen.tolist() == expected
    assert len(chosen) <= k


def _same_hits(many, single):
    """Те же чанки на тех же местах и те же оценки бит в бит: search_many считает так же, как search."""
    assert [[(h.rank, h.doc_id, h.chunk_id) for h in hits] for hits in many] == \
        [[(h.rank, h.doc_id, h.chunk_id) for h in hits] for hits in single]
    for hits_many, hits_single in zip(many, single):
        assert [h.score for h in hits_many] == [h.score for h in hits_single]


def test_search_many_equals_single_searches(index):
    queries = ["отпуск 28 дней", "VPN", "пропуск охрана", "", "заявка"]
    _same_hits(index.search_many(queries, k=3), [index.search(q, k=3) for q in queries])
    _same_hits(index.search_many(queries, k=2, threshold=0.3), [index.search(q, k=2, threshold=0.3) for q in queries])
    assert index.search_many([], k=3) == []


def test_save_and_load_give_identical_results(index, tmp_path):
    path = index.save(tmp_path / "demo.minirag")
    loaded = Index.load(path, HashEmbedder())
    assert loaded.chunks == index.chunks and loaded.docs == index.docs
    assert np.array_equal(loaded.vectors, index.vectors)
    for query in ["отпуск", "VPN приложение", "охрана"]:
        assert loaded.search(query, k=4) == index.search(query, k=4)


def test_file_is_self_describing(index, tmp_path):
    path = index.save(tmp_path / "demo.minirag")
    with zipfile.ZipFile(path) as archive:
        manifest = json.loads(archive.read("manifest.json"))
        assert set(archive.namelist()) == {"manifest.json", "docs.json", "spans.npy", "vectors.npy"}
    assert manifest["format"] == "minirag-index" and manifest["version"] == 1
    assert manifest["fingerprint"] == HashEmbedder().fingerprint
    assert (manifest["n_docs"], manifest["n_chunks"], manifest["dim"]) == (3, 6, 96)


def test_a_crash_mid_save_leaves_the_previous_file_intact(index, tmp_path, monkeypatch):
    path = index.save(tmp_path / "demo.minirag")
    before = path.read_bytes()
    small = Index.build(DOCS[:1])

    def crash(*args, **kwargs):
        raise OSError("диск отключили посреди записи")

    monkeypatch.setattr(np, "save", crash)
    with pytest.raises(OSError):
        small.save(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["demo.minirag"]


@given(st.lists(st.sampled_from(["отпуск", "VPN", "заявка", "пропуск", "дни", "офис", "доступ", "28"]),
                min_size=1, max_size=8), st.integers(1, 8))
@settings(max_examples=30, deadline=None)
def test_save_load_round_trip_for_random_queries(tmp_path_factory, words, k):
    folder = tmp_path_factory.mktemp("idx")
    index = Index.build(DOCS)
    loaded = Index.load(index.save(folder / "i.minirag"))
    query = " ".join(words)
    assert loaded.search(query, k=k) == index.search(query, k=k)


def test_loading_with_another_embedder_raises_mismatch(index, tmp_path):
    path = index.save(tmp_path / "demo.minirag")
    for other in (HashEmbedder(dim=64), HashEmbedder(stem=True), HashEmbedder(char_ngrams=(3, 5))):
        with pytest.raises(EmbedderMismatchError, match="перестрой"):
            Index.load(path, other)


def test_querying_with_another_embedder_raises_mismatch():
    index = Index.build(DOCS)
    index.embedder = HashEmbedder(stem=True)  # тот же dim, но другое пространство
    with pytest.raises(EmbedderMismatchError, match="одним|тем же"):
        index.search("отпуск")


@pytest.mark.parametrize("content", [b"", b"not a zip at all", b"PK\x03\x04truncated"])
def test_corrupt_files_are_rejected_in_russian_without_python_exception_names(tmp_path, content):
    path = tmp_path / "bad.minirag"
    path.write_bytes(content)
    with pytest.raises(MiniRagError, match="повреждён или это не индекс minirag: это не zip-архив") as caught:
        Index.load(path)
    assert "BadZipFile" not in str(caught.value) and "Перестрой индекс" in str(caught.value)


def test_an_index_archive_missing_a_part_names_the_part(index, tmp_path):
    whole = index.save(tmp_path / "whole.minirag")
    part = tmp_path / "part.minirag"
    with zipfile.ZipFile(whole) as source, zipfile.ZipFile(part, "w") as target:
        for name in source.namelist():
            if name != "vectors.npy":
                target.writestr(name, source.read(name))
    with pytest.raises(MiniRagError, match="в архиве нет части 'vectors.npy'"):
        Index.load(part)


def test_truncated_index_file_is_rejected(index, tmp_path):
    path = index.save(tmp_path / "demo.minirag")
    path.write_bytes(path.read_bytes()[:-200])
    with pytest.raises(MiniRagError, match="повреждён"):
        Index.load(path)


def test_foreign_and_future_files_are_rejected(tmp_path):
    foreign = tmp_path / "foreign.zip"
    with zipfile.ZipFile(foreign, "w") as archive:
        archive.writestr("manifest.json", json.dumps({"format": "something-else"}))
    with pytest.raises(MiniRagError, match="не индекс minirag"):
        Index.load(foreign)
    future = tmp_path / "future.minirag"
    with zipfile.ZipFile(future, "w") as archive:
        archive.writestr("manifest.json", json.dumps({"format": "minirag-index", "version": 99}))
    with pytest.raises(MiniRagError, match="версии 99"):
        Index.load(future)
    with pytest.raises(MiniRagError, match="нет"):
        Index.load(tmp_path / "missing.minirag")


@pytest.mark.parametrize("docs, message", [
    ([], "пуст"),
    ([DOCS[0], Document("vacation", "Копия", "Другой текст.")], "vacation"),
    ([Document("x", "X", "")], "нет текста"),
    ([Document("x", "X", 5)], "строкой"),
    ([Document("", "X", "Текст.")], "id"),
    (["просто строка"], "Document"),
    ("строка вместо списка", "списком"),
])
def test_bad_corpora_are_rejected(docs, message):
    with pytest.raises(MiniRagError, match=message):
        Index.build(docs)


def test_documents_may_be_dicts():
    index = Index.build([{"id": "a", "title": "A", "text": "Кошка спит."}])
    assert index.chunk(0).doc_id == "a"


def test_a_chunker_must_return_pieces_of_the_document():
    with pytest.raises(MiniRagError, match="подстрокой"):
        Index.build(DOCS, chunker=lambda text: [text.upper()])


@pytest.mark.parametrize("call", [
    lambda ix: ix.search("отпуск", k=0), lambda ix: ix.search("отпуск", k=2.5), lambda ix: ix.search("отпуск", k=True),
    lambda ix: ix.search(None), lambda ix: ix.search(["отпуск"]), lambda ix: ix.search("отпуск", threshold="0.3"),
    lambda ix: ix.search("отпуск", threshold=float("nan")), lambda ix: ix.search_many("отпуск"),
    lambda ix: ix.search_many(["ок", 3]),
])
def test_bad_queries_are_rejected(index, call):
    with pytest.raises(MiniRagError):
        call(index)


def test_save_into_a_missing_folder_is_rejected(index, tmp_path):
    with pytest.raises(MiniRagError, match="Папки"):
        index.save(tmp_path / "нет" / "i.minirag")


MANUAL = Document("manual.md", "Руководство", (
    "Руководство\n\nКак пользоваться порталом.\n\n"
    "Пропуск в офис\n\nОформляют в кабинете 105 за один день. Потерянный блокируют в тот же час.\n\n"
    "Отпуск\n\nЗаявление подают за две недели. Делить можно на части."))


def test_with_headers_a_chunk_is_titled_by_document_and_section_and_found_by_them():
    plain = Index.build([MANUAL], HashEmbedder(), chunker=lambda text: chunk_text(text, max_chars=60))
    titled = Index.build([MANUAL], HashEmbedder(), chunker=lambda text: chunk_text(text, max_chars=60), headers=True)
    assert [c.title for c in titled.chunks] == ["Руководство", *["Руководство › Пропуск в офис"] * 2,
                                                *["Руководство › Отпуск"] * 2]  # заголовок документа не повторяется
    assert [c.text for c in titled.chunks] == [c.text for c in plain.chunks]  # цитата — тот же текст документа
    assert titled.chunk(2).text == "Потерянный блокируют в тот же час."
    assert titled.indexed_text(2) == "Руководство › Пропуск в офис\n\nПотерянный блокируют в тот же час."
    assert plain.indexed_text(2) == plain.chunk(2).text and plain.chunk(2).title == "Руководство"
    # в третьем чанке нет ни «пропуска», ни «офиса»: с заголовком раздела его косинус с ними выше на 0.3 и больше
    query = "пропуск в офис"
    assert titled.scores(query)[2] > plain.scores(query)[2] + 0.3
    assert [h.chunk_id for h in titled.search(query, k=2)] == [2, 3]


def test_headers_are_saved_with_the_index_and_old_files_load_without_them(tmp_path):
    titled = Index.build([MANUAL], HashEmbedder(), headers=True)
    loaded = Index.load(titled.save(tmp_path / "t.minirag"), HashEmbedder())
    assert loaded.headers and loaded.chunks == titled.chunks and np.array_equal(loaded.vectors, titled.vectors)
    old = tmp_path / "old.minirag"  # файл прежней версии: поля headers в manifest.json нет
    plain = Index.build([MANUAL], HashEmbedder()).save(tmp_path / "plain.minirag")
    with zipfile.ZipFile(plain) as src, zipfile.ZipFile(old, "w") as dst:
        for name in src.namelist():
            data = src.read(name)
            if name == "manifest.json":
                manifest = json.loads(data)
                del manifest["headers"]
                data = json.dumps(manifest)
            dst.writestr(name, data)
    assert not Index.load(old, HashEmbedder()).headers
    with zipfile.ZipFile(plain) as src, zipfile.ZipFile(tmp_path / "bad.minirag", "w") as dst:
        for name in src.namelist():
            manifest = json.loads(src.read(name)) if name == "manifest.json" else None
            dst.writestr(name, json.dumps({**manifest, "headers": "да"}) if manifest else src.read(name))
    with pytest.raises(MiniRagError, match="не сходятся"):
        Index.load(tmp_path / "bad.minirag", HashEmbedder())

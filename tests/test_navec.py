"""NavecEmbedder: обученные векторы navec из колеса natasha за протоколом Embedder."""

import subprocess
import sys

import numpy as np
import pytest

from minirag import DEMO_DOCS, Embedder, EmbedderMismatchError, HashEmbedder, Index, MiniRagError, NavecEmbedder
from minirag import navec as navec_module


@pytest.fixture(scope="module")
def embedder():
    return NavecEmbedder()


@pytest.fixture(scope="module")
def reference():
    """Векторы, прочитанные самим пакетом navec: эталон, который писали не мы."""
    from navec import Navec

    return Navec.load(navec_module.navec_path())


def test_file_is_found_without_importing_natasha():
    code = ("import sys; from minirag import navec_path; p = navec_path(); "
            "assert 'natasha' not in sys.modules, 'natasha импортирован'; print(p.name)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "navec_news_v1_1B_250K_300d_100q.tar"


def test_follows_the_embedder_protocol_with_unit_rows(embedder):
    assert isinstance(embedder, Embedder)
    matrix = embedder.embed(["Ежегодный отпуск длится 28 дней.", "Ноутбук выдают в кабинете."])
    assert matrix.shape == (2, 300)
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-9)


def test_one_word_is_the_navec_vector_of_that_word(embedder, reference):
    expected = reference["отпуск"] / np.linalg.norm(reference["отпуск"])
    np.testing.assert_allclose(embedder.embed_one("Отпуск"), expected, atol=1e-6)


@pytest.mark.parametrize("weighting", ["mean", "sif"])
def test_text_vector_is_the_weighted_mean_of_its_known_words(reference, weighting):
    words = ["заявку", "на", "отпуск", "подают"]
    counts = {w: reference.vocab.count(w) for w in words}
    total = float(np.sum(reference.vocab.counts, dtype=np.float64))
    weight = {w: 1.0 if weighting == "mean" else 1e-3 / (1e-3 + counts[w] / total) for w in words}
    mean = sum(weight[w] * reference[w].astype(np.float64) for w in words) / sum(weight.values())
    got = NavecEmbedder(weighting=weighting).embed_one("Заявку на отпуск подают 8821")  # «8821» нет в словаре
    np.testing.assert_allclose(got, mean / np.linalg.norm(mean), atol=1e-6)


def test_sif_weights_make_frequent_words_count_less(reference):
    sif = NavecEmbedder(weighting="sif")
    assert sif._word("на")[1] < 0.05 < 0.5 < sif._word("ноутбук")[1]


def test_unknown_words_and_empty_text_give_the_zero_vector(embedder):
    assert not embedder.known("страхвка")
    assert not np.any(embedder.embed_one("страхвка 8821"))
    assert not np.any(embedder.embed_one(""))


def test_trained_space_knows_meaning_that_a_hash_cannot(embedder):
    def cos(e, a, b):
        return float(e.embed_one(a) @ e.embed_one(b))

    assert cos(embedder, "отпуск", "отдых") > 0.4 > cos(embedder, "отпуск", "ноутбук")
    assert cos(embedder, "ноутбук", "компьютер") > 0.5
    hashed = HashEmbedder(dim=1024)
    assert abs(cos(hashed, "ноутбук", "компьютер")) < 0.2


def test_fingerprint_describes_the_space_and_index_refuses_another(tmp_path, embedder):
    assert embedder.fingerprint != NavecEmbedder(weighting="mean").fingerprint
    assert embedder.fingerprint == NavecEmbedder().fingerprint
    index = Index.build(DEMO_DOCS[:3], embedder)
    path = index.save(tmp_path / "navec.minirag")
    assert Index.load(path, NavecEmbedder()).search("отпуск", k=1)[0].doc_id == index.search("отпуск", k=1)[0].doc_id
    with pytest.raises(EmbedderMismatchError):
        Index.load(path, HashEmbedder(dim=300))


def test_bad_arguments_say_what_to_do(tmp_path, monkeypatch):
    with pytest.raises(MiniRagError, match="weighting"):
        NavecEmbedder(weighting="idf")
    with pytest.raises(MiniRagError, match="Файла векторов navec нет"):
        NavecEmbedder(path=tmp_path / "нет.tar")
    with pytest.raises(MiniRagError, match="одна строка"):
        NavecEmbedder().embed("отпуск")
    monkeypatch.setattr(navec_module.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(MiniRagError, match="pip install"):
        navec_module.navec_path()

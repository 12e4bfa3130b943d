"""Базовая линия «наугад» для hit@k: точная формула против перебора и против жребия."""

import itertools

import numpy as np

from minirag import DEMO_DOCS, DEMO_QUERIES, Document, HashEmbedder, Index, LabeledQuery, random_hit_at_k


def test_matches_enumeration_of_every_k_subset():
    docs = [Document(f"d{i}", f"Д{i}", f"Первое предложение {i}. Второе предложение {i}.") for i in range(4)]
    index = Index.build(docs, HashEmbedder(), chunker=lambda text: [text[: text.index(".") + 1], text[text.index(".") + 2:]])
    query = LabeledQuery("x", ("d0", "d1"), "exact")
    rows = [c.doc_id for c in index.chunks]
    subsets = list(itertools.combinations(range(len(rows)), 3))
    expected = np.mean([any(rows[i] in query.relevant for i in s) for s in subsets])
    assert abs(random_hit_at_k(index, [query], k=3) - expected) < 1e-12


def test_close_to_simulated_random_rankings_on_the_demo_corpus():
    index = Index.build(DEMO_DOCS)
    rows = np.array([c.doc_id for c in index.chunks])
    rng = np.random.default_rng(0)
    answerable = [q for q in DEMO_QUERIES if q.relevant]
    simulated = np.mean([np.isin(rows[rng.choice(len(rows), 3, replace=False)], q.relevant).any()
                         for _ in range(300) for q in answerable])
    assert abs(random_hit_at_k(index, DEMO_QUERIES, k=3) - simulated) < 0.01

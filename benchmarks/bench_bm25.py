"""Бенчмарк BM25: minirag против rank_bm25 и bm25s на одном синтетическом корпусе.

Корпус детерминирован (seed): 5000 документов по 60–150 токенов из словаря «русских»
слов с частотами по закону Ципфа, 200 запросов по 2–6 токенов. Все три библиотеки
получают одни и те же токены. Работа сравнивается равная: для каждого запроса — оценки
всех документов и top-10 (одна и та же функция ``top10`` для всех). Дополнительно —
``BM25.search`` (разреженный top-k по постингам) и ``bm25s.retrieve(k=10)``.

Запуск: ``python benchmarks/bench_bm25.py`` (флаги: ``--docs``, ``--queries``, ``--repeat``).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time

import numpy as np

from minirag.bm25 import BM25

SEED = 20240917
CONSONANTS = list("бвгджзклмнпрстфхцчшщ")
VOWELS = list("аеиоуыэюяё")
ENDINGS = ["", "а", "ов", "ами", "ость", "ение", "ский", "ать", "ый", "ой"]


def make_vocabulary(rng: np.random.Generator, size: int) -> list[str]:
    """Уникальные слова из 2–4 слогов «согласная+гласная» и окончания."""
    words: dict[str, None] = {}
    while len(words) < size:
        syllables = rng.integers(2, 5)
        stem = "".join(rng.choice(CONSONANTS) + rng.choice(VOWELS) for _ in range(syllables))
        words[stem + ENDINGS[rng.integers(len(ENDINGS))]] = None
    return list(words)


def make_corpus(n_docs: int, n_queries: int, vocab_size: int = 20_000, seed: int = SEED):
    """Документы (60–150 токенов) и запросы (2–6 токенов), слова — по Ципфу с показателем 1.07."""
    rng = np.random.default_rng(seed)
    vocab = np.array(make_vocabulary(rng, vocab_size))
    p = 1.0 / (np.arange(1, vocab_size + 1) + 2.7) ** 1.07  # Ципф–Мандельброт
    p /= p.sum()
    lengths = rng.integers(60, 151, size=n_docs)
    flat = vocab[rng.choice(vocab_size, size=int(lengths.sum()), p=p)].tolist()
    bounds = np.concatenate([[0], np.cumsum(lengths)])
    docs = [flat[bounds[i] : bounds[i + 1]] for i in range(n_docs)]
    # Запрос — слова одного документа («пользователь спрашивает про него») плюс иногда незнакомое слово.
    queries = []
    for _ in range(n_queries):
        source = docs[rng.integers(n_docs)]
        query = [source[j] for j in rng.choice(len(source), size=rng.integers(2, 7), replace=False)]
        if rng.random() < 0.1:
            query[-1] = "несуществующееслово"
        queries.append(query)
    return docs, queries


def top10(scores: np.ndarray) -> np.ndarray:
    """Один и тот же top-10 для всех: argpartition, затем сортировка десяти."""
    part = np.argpartition(scores, -10)[-10:]
    return part[np.argsort(-scores[part], kind="stable")]


def timed(fn, repeat: int) -> tuple[float, object]:
    """Лучшее время из repeat запусков (секунды) и результат последнего."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=5000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5, help="повторы быстрых замеров (берётся лучший)")
    args = parser.parse_args(argv)

    import bm25s
    import rank_bm25

    docs, queries = make_corpus(args.docs, args.queries)
    n_tokens = sum(map(len, docs))
    print(f"Корпус: {len(docs)} документов, {n_tokens} токенов, {len(queries)} запросов; "
          f"Python {platform.python_version()}, numpy {np.__version__}, "
          f"rank_bm25 {_version('rank_bm25')}, bm25s {bm25s.__version__}, "
          f"numba {'есть' if bm25s.NUMBA_AVAILABLE else 'нет'} (bm25s backend=numpy)\n")

    def build_bm25s():
        retriever = bm25s.BM25(method="lucene", k1=1.5, b=0.75)
        retriever.index(docs, show_progress=False)
        return retriever

    t_ours, ours = timed(lambda: BM25(docs, variant="lucene"), args.repeat)
    t_okapi, ours_okapi = timed(lambda: BM25(docs, variant="okapi"), args.repeat)
    t_rank, rank = timed(lambda: rank_bm25.BM25Okapi(docs), max(1, args.repeat // 2))
    t_s, s = timed(build_bm25s, args.repeat)

    # Одинаковая работа: оценки всех документов на каждый запрос (отдельно — и затем общий top10).
    scorers = {
        "minirag BM25 lucene": ours.scores,
        "minirag BM25 okapi": ours_okapi.scores,
        "bm25s lucene (get_scores)": s.get_scores,
        "rank_bm25 BM25Okapi (get_scores)": rank.get_scores,
    }
    only, full, top = {}, {}, {}
    for name, score in scorers.items():
        repeat = 1 if name.startswith("rank_bm25") else args.repeat
        only[name], _ = timed(lambda score=score: [score(q) for q in queries], repeat)
        full[name], top[name] = timed(lambda score=score: [top10(score(q)) for q in queries], repeat)
    q_search, r_search = timed(lambda: [ours.search(q, 10) for q in queries], args.repeat)
    q_retr, r_retr = timed(lambda: s.retrieve(queries, k=10, show_progress=False, backend_selection="numpy"), args.repeat)

    # Проверка честности: одинаковые токены → одинаковые оценки top-10.
    pairs = [("minirag BM25 lucene", "bm25s lucene (get_scores)", 1e-5),
             ("minirag BM25 okapi", "rank_bm25 BM25Okapi (get_scores)", 1e-9)]
    for mine, theirs, rtol in pairs:
        for q, a, b in zip(queries, top[mine], top[theirs], strict=True):
            assert np.allclose(scorers[mine](q)[a], scorers[theirs](q)[b], rtol=rtol), q
    for q, a, hits in zip(queries, top["minirag BM25 lucene"], r_search, strict=True):
        assert np.allclose(ours.scores(q)[a][: len(hits)], [score for _, score in hits]), q
    reference = [s.get_scores(q)[b] for q, b in zip(queries, top["bm25s lucene (get_scores)"], strict=True)]
    assert np.allclose(np.sort(r_retr.scores, axis=1), np.sort(reference, axis=1), rtol=1e-5)

    nq = len(queries)
    index_time = {"minirag BM25 lucene": t_ours, "minirag BM25 okapi": t_okapi,
                  "bm25s lucene (get_scores)": t_s, "rank_bm25 BM25Okapi (get_scores)": t_rank}

    def mine(name: str) -> str:  # с чем сравниваем: minirag того же варианта формулы
        return "minirag BM25 okapi" if "okapi" in name.lower() else "minirag BM25 lucene"

    # Отношения — время их / время minirag того же варианта: больше 1 — minirag быстрее.
    header = ("реализация", "индекс, с", "индекс: ×minirag", f"оценки ({nq} запр.), с", "оценки: ×minirag",
              "оценки + top10, с", "запросов/с", "оценки + top10: ×minirag")
    table = [header, tuple("---" for _ in header)]
    for name in scorers:
        m = mine(name)
        table.append((name, f"{index_time[name]:.3f}", f"{index_time[name] / index_time[m]:.2f}",
                      f"{only[name]:.4f}", f"{only[name] / only[m]:.2f}", f"{full[name]:.4f}",
                      f"{nq / full[name]:,.0f}".replace(",", " "), f"{full[name] / full[m]:.2f}"))
    for name, seconds in (("minirag BM25 lucene: search(q, 10)", q_search), ("bm25s lucene: retrieve(k=10)", q_retr)):
        table.append((name, "", "", "", "", f"{seconds:.4f}", f"{nq / seconds:,.0f}".replace(",", " "),
                      f"{seconds / full['minirag BM25 lucene']:.2f}"))
    for row in table:
        print("| " + " | ".join(row) + " |")
    speed_rank = full["rank_bm25 BM25Okapi (get_scores)"] / full["minirag BM25 okapi"]
    speed_s = full["bm25s lucene (get_scores)"] / full["minirag BM25 lucene"]
    print(f"\nОценки + top10 (время их / время minirag): rank_bm25 / minirag okapi = {speed_rank:.1f}× (цель ≥ 20); "
          f"bm25s / minirag lucene = {speed_s:.2f}× (цель ≥ 0.5).")
    print(f"Только оценки: rank_bm25 / minirag okapi = "
          f"{only['rank_bm25 BM25Okapi (get_scores)'] / only['minirag BM25 okapi']:.0f}×, bm25s / minirag lucene = "
          f"{only['bm25s lucene (get_scores)'] / only['minirag BM25 lucene']:.1f}×.")
    print(f"Индекс: rank_bm25 / minirag okapi = {t_rank / t_okapi:.2f}×, bm25s / minirag lucene = {t_s / t_ours:.2f}×.")
    ok = speed_rank >= 20 and speed_s >= 0.5
    print("Цели достигнуты." if ok else "ЦЕЛИ НЕ ДОСТИГНУТЫ.")
    return 0 if ok else 1


def _version(module: str) -> str:
    from importlib.metadata import version

    return version(module.replace("_", "-"))


if __name__ == "__main__":
    sys.exit(main())

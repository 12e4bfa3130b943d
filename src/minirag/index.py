"""Плоский индекс: матрица векторов чанков плюс метаданные, точный поиск и файл на диске.

Индекс хранит документы один раз, а каждый чанк — как кусок документа: номер документа,
``chunk_id`` (с 1 внутри документа) и границы [start, end) в его тексте. Векторы чанков —
одна матрица float32 из строк единичной длины, поэтому косинус с запросом — это одно
умножение матрицы на вектор. Индекс не приближённый (не HNSW и не IVF): он сравнивает
запрос со всеми чанками, то есть O(N), и этого хватает на сотни тысяч чанков.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from .chunk import chunk_text
from .embed import Embedder, HashEmbedder
from .errors import EmbedderMismatchError, MiniRagError
from .text import require_text
from .types import Chunk, Document, Hit

_EMBED_BATCH = 2048  # столько текстов эмбеддим за раз
# Оценка, меньшая порога не больше чем на столько, проходит порог: косинус, посчитанный разными
# способами (цикл, np.dot, матрица на вектор, float32), отличается в последних знаках, а «равная
# порогу оценка проходит» должно выполняться при любом честном способе счёта.
SCORE_TOLERANCE = 1e-6


def require_k(k: object) -> int:
    """Проверить, что k — целое ≥ 1, и вернуть его как int (общая проверка всех функций поиска)."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise MiniRagError(f"k должен быть целым числом ≥ 1, получено {k!r}. Обычно берут k=3…5.")
    return int(k)


def require_threshold(threshold: object) -> float | None:
    """Проверить, что порог — конечное число или None, и вернуть его как float."""
    if threshold is None:
        return None
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.floating)) or not math.isfinite(threshold):
        raise MiniRagError(
            f"threshold должен быть числом (косинус от -1 до 1) или None, получено {threshold!r}."
        )
    return float(threshold)


def require_hits(hits: object) -> list[Hit]:
    """Проверить, что hits — список Hit (то, что вернул поиск), и вернуть его списком."""
    if isinstance(hits, (str, bytes)) or not isinstance(hits, Iterable):
        raise MiniRagError("hits должен быть списком Hit — тем, что вернул index.search(query, k).")
    hits = list(hits)
    if not all(isinstance(hit, Hit) for hit in hits):
        raise MiniRagError("hits должен быть списком Hit — тем, что вернул index.search(query, k).")
    return hits


def top_k(scores, k: int, threshold: float | None = None) -> np.ndarray:
    """Номера лучших k оценок по убыванию: сначала порог, потом k; при равенстве — меньший номер.

    Порог проходит оценка ``≥ threshold − SCORE_TOLERANCE`` (1e-6): погрешность счёта не
    отбрасывает оценку, равную порогу. Пример: ``top_k([0.2, 0.9, 0.2], k=2)`` → ``array([1, 0])``. Глава 3. Top-k и порог.
    """
    k = require_k(k)
    threshold = require_threshold(threshold)
    scores = np.asarray(scores)
    if scores.ndim != 1:
        raise MiniRagError(f"scores должны быть одномерным массивом, а форма {scores.shape}.")
    if threshold is None:
        passed, sub = None, scores
    else:
        passed = np.flatnonzero(scores >= threshold - SCORE_TOLERANCE)
        sub = scores[passed]
    if k < sub.size:
        kth = sub[np.argpartition(sub, sub.size - k)[sub.size - k]]  # k-я по величине оценка
        better = np.flatnonzero(sub > kth)
        ties = np.flatnonzero(sub == kth)[: k - better.size]  # равные — в порядке индекса
        chosen = np.concatenate([better, ties])
    else:
        chosen = np.arange(sub.size)
    chosen = chosen[np.lexsort((chosen, -sub[chosen]))]
    return chosen if passed is None else passed[chosen]


def _as_document(doc: object, position: int) -> Document:
    if isinstance(doc, Document):
        candidate = doc
    elif isinstance(doc, Mapping) and {"id", "title", "text"} <= set(doc):
        candidate = Document(doc["id"], doc["title"], doc["text"])
    else:
        raise MiniRagError(
            f"Документ №{position} должен быть Document(id, title, text) или словарём с ключами "
            f"'id', 'title', 'text', а получено {type(doc).__name__}."
        )
    if not isinstance(candidate.id, str) or not candidate.id.strip():
        raise MiniRagError(f"У документа №{position} id должен быть непустой строкой, получено {candidate.id!r}.")
    require_text(candidate.title, f"Заголовок документа {candidate.id!r}")
    require_text(candidate.text, f"Текст документа {candidate.id!r}")
    return candidate


class Index:
    """Плоский индекс чанков: ``Index.build(docs)``, затем ``search(query, k, threshold)``.

    Пример: ``Index.build(DEMO_DOCS).search("сколько дней отпуска", k=3)``.
    Глава 5. Индекс и поиск.
    """

    def __init__(self, embedder: Embedder, docs: Sequence[Document], spans: np.ndarray, matrix: np.ndarray,
                 fingerprint: str | None = None):
        # spans: int64 (n, 4) — номер документа, chunk_id, start, end
        self.embedder = embedder
        self.fingerprint = fingerprint if fingerprint is not None else embedder.fingerprint
        self.docs: tuple[Document, ...] = tuple(docs)
        self._spans = spans
        self._matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self._matrix.flags.writeable = False
        self._positions: dict[tuple[str, int], int] | None = None  # (doc_id, chunk_id) → строка; строится по запросу

    # ---------- построение ----------
    @classmethod
    def build(cls, docs: Iterable[Document], embedder: Embedder | None = None,
              chunker: Callable[[str], list[str]] | None = None, *, progress: bool = False) -> Index:
        """Порезать документы на чанки, эмбеддить их и сложить в индекс.

        ``chunker(text)`` возвращает куски текста документа по порядку (по умолчанию
        ``chunk_text`` с max_chars=220). ``progress=True`` показывает полосу прогресса.
        Пример: ``Index.build(DEMO_DOCS, HashEmbedder(dim=96))``. Глава 5. Индекс и поиск.
        """
        if isinstance(docs, (str, bytes)) or not isinstance(docs, Iterable):
            raise MiniRagError("docs должен быть списком документов Document(id, title, text).")
        documents = [_as_document(doc, i) for i, doc in enumerate(docs)]
        if not documents:
            raise MiniRagError("Корпус пуст: передай в Index.build хотя бы один документ.")
        duplicates = sorted(doc_id for doc_id, n in Counter(d.id for d in documents).items() if n > 1)
        if duplicates:
            raise MiniRagError(
                f"id документов должны быть уникальными, а повторяются: {', '.join(duplicates)}. "
                f"Дай каждому документу свой id — по нему строятся цитаты."
            )
        embedder = embedder if embedder is not None else HashEmbedder()
        chunker = chunker if chunker is not None else chunk_text
        spans = []
        for row, doc in enumerate(documents):
            cursor = 0
            for chunk_id, piece in enumerate(chunker(doc.text), start=1):
                require_text(piece, f"Чанк {chunk_id} документа {doc.id!r}")
                start = doc.text.find(piece, cursor)
                if start < 0 or not piece:
                    raise MiniRagError(
                        f"Чанкер вернул для документа {doc.id!r} кусок, которого нет в его тексте "
                        f"(после позиции {cursor}): {piece[:60]!r}. Чанк должен быть подстрокой "
                        f"документа, идущей по порядку, — так цитату можно найти в источнике."
                    )
                spans.append((row, chunk_id, start, start + len(piece)))
                cursor = start + 1
        if not spans:
            raise MiniRagError("В документах нет текста: ни одного чанка. Проверь поле text у документов.")
        spans = np.asarray(spans, dtype=np.int64)
        texts = [documents[row].text[start:end] for row, _, start, end in spans]
        matrix = cls._embed_batches(embedder, texts, progress)
        return cls(embedder, documents, spans, matrix)

    @staticmethod
    def _embed_batches(embedder: Embedder, texts: list[str], progress: bool) -> np.ndarray:
        batches = range(0, len(texts), _EMBED_BATCH)
        if progress:
            from tqdm.auto import tqdm

            batches = tqdm(batches, desc="Эмбеддинг чанков", unit="пачка")
        parts = [np.asarray(embedder.embed(texts[i : i + _EMBED_BATCH]), dtype=np.float32) for i in batches]
        matrix = np.concatenate(parts)
        if matrix.ndim != 2 or matrix.shape[0] != len(texts):
            raise MiniRagError(f"Эмбеддер вернул матрицу формы {matrix.shape}, а ждали ({len(texts)}, dim).")
        return matrix

    # ---------- чтение ----------
    def __len__(self) -> int:
        return int(self._spans.shape[0])

    def __repr__(self) -> str:
        return f"Index(документов: {len(self.docs)}, чанков: {len(self)}, {self.fingerprint})"

    @property
    def vectors(self) -> np.ndarray:
        """Матрица векторов чанков (только для чтения), форма (число чанков, dim)."""
        return self._matrix

    def chunk(self, i: int) -> Chunk:
        """Чанк номер ``i`` (с 0, в порядке матрицы). Пример: ``index.chunk(0).chunk_id`` → ``1``."""
        row, chunk_id, start, end = (int(v) for v in self._spans[i])
        doc = self.docs[row]
        return Chunk(doc.id, chunk_id, doc.title, doc.text[start:end])

    @property
    def doc_rows(self) -> np.ndarray:
        """Для каждого чанка — номер его документа в ``index.docs`` (копия, int64)."""
        return self._spans[:, 0].copy()

    def position(self, doc_id: str, chunk_id: int) -> int:
        """Номер строки матрицы для чанка (doc_id, chunk_id). Пример: ``index.position("vpn-connect", 1)``."""
        if self._positions is None:
            self._positions = {(self.docs[row].id, int(cid)): i for i, (row, cid) in enumerate(self._spans[:, :2].tolist())}
        try:
            return self._positions[(doc_id, int(chunk_id))]
        except (KeyError, TypeError, ValueError):
            raise MiniRagError(f"В индексе нет чанка {chunk_id!r} документа {doc_id!r}.") from None

    @property
    def chunks(self) -> list[Chunk]:
        """Все чанки по порядку матрицы. Глава 4. Чанкинг."""
        return [self.chunk(i) for i in range(len(self))]

    # ---------- поиск ----------
    def _query_vectors(self, queries: Sequence[str]) -> np.ndarray:
        if self.embedder.fingerprint != self.fingerprint:
            raise EmbedderMismatchError(
                f"Индекс построен эмбеддером «{self.fingerprint}», а запрос эмбеддится "
                f"«{self.embedder.fingerprint}». Векторы разных пространств несравнимы: "
                f"ищи тем же эмбеддером или перестрой индекс новым."
            )
        for i, query in enumerate(queries):
            require_text(query, "Запрос" if len(queries) == 1 else f"Запрос №{i}")
        vectors = np.asarray(self.embedder.embed(list(queries)), dtype=np.float32)
        if vectors.shape != (len(queries), self._matrix.shape[1]):
            raise EmbedderMismatchError(
                f"Эмбеддер вернул векторы формы {vectors.shape}, а в индексе dim={self._matrix.shape[1]}."
            )
        return vectors

    def query_vector(self, query: str) -> np.ndarray:
        """Вектор запроса (float32) от эмбеддера индекса — с проверкой, что пространство то же.

        Пример: ``index.query_vector("отпуск").shape`` → ``(96,)``. Глава 1. Эмбеддинги.
        """
        return self._query_vectors([query])[0]

    def scores(self, query: str) -> np.ndarray:
        """Косинус запроса с каждым чанком (float32, по порядку матрицы) — чтобы видеть всех кандидатов.

        Пример: ``index.scores("отпуск").max()``. Глава 3. Top-k и порог.
        """
        return self._matrix @ self.query_vector(query)

    def _hits(self, scores: np.ndarray, k: int, threshold: float | None) -> list[Hit]:
        hits = []
        for rank, i in enumerate(top_k(scores, k, threshold), start=1):
            chunk = self.chunk(int(i))
            hits.append(Hit(rank, float(scores[i]), chunk.doc_id, chunk.chunk_id, chunk.title, chunk.text))
        return hits

    def search(self, query: str, k: int = 3, threshold: float | None = None) -> list[Hit]:
        """Лучшие k чанков по косинусу; с порогом сначала отбрасываются оценки ниже threshold.

        Пусто, если ничего не прошло порог, — тогда честно отвечают «не найдено».
        Пример: ``index.search("сколько дней отпуска", k=3)[0].doc_id``. Глава 3. Top-k и порог.
        """
        require_k(k)
        require_threshold(threshold)
        return self._hits(self.scores(query), k, threshold)

    def search_many(self, queries: Sequence[str], k: int = 3, threshold: float | None = None) -> list[list[Hit]]:
        """То же, что ``search``, для списка запросов: запросы эмбеддятся одной пачкой.

        Оценки каждого запроса считаются тем же умножением матрицы на вектор, что и в ``search``,
        поэтому результат совпадает с ``search`` до последнего бита (умножение матрицы на матрицу
        складывало бы в другом порядке, и равные оценки могли бы поменяться местами).
        Пример: ``[h[0].doc_id for h in index.search_many(["отпуск", "VPN"])]``.
        Глава 5. Индекс и поиск.
        """
        if isinstance(queries, str):
            raise MiniRagError("search_many ждёт список запросов; для одного запроса вызови search(query).")
        require_k(k)
        require_threshold(threshold)
        queries = list(queries)
        if not queries:
            return []
        return [self._hits(self._matrix @ vector, k, threshold) for vector in self._query_vectors(queries)]

    # ---------- файл (формат и атомарная запись — в store.py) ----------
    def save(self, path: str | os.PathLike) -> Path:
        """Сохранить индекс в один самоописывающий файл; сбой посреди записи не портит прежний.

        Пример: ``index.save("demo.minirag")``. Глава 5. Индекс и поиск.
        """
        from .store import save_index

        return save_index(self, path)

    @classmethod
    def load(cls, path: str | os.PathLike, embedder: Embedder | None = None) -> Index:
        """Загрузить индекс из файла и проверить, что ``embedder`` — тот же, что строил индекс.

        Пример: ``Index.load("demo.minirag", HashEmbedder(dim=96))``. Глава 5. Индекс и поиск.
        """
        from .store import load_index

        return load_index(path, embedder)


def require_index(index: object) -> Index:
    """Проверить, что index — Index, и вернуть его (общая проверка модулей поверх индекса)."""
    if not isinstance(index, Index):
        raise MiniRagError(f"index должен быть Index, а получено {type(index).__name__}: построй его через Index.build(docs).")
    return index


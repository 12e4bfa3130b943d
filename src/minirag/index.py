"""Плоский индекс: матрица векторов чанков плюс метаданные, точный поиск и файл на диске.

Индекс хранит документы один раз, а каждый чанк — как кусок документа: номер документа,
``chunk_id`` (с 1 внутри документа) и границы [start, end) в его тексте. Векторы чанков —
одна матрица float32 из строк единичной длины, поэтому косинус с запросом — это одно
умножение матрицы на вектор. Индекс не приближённый (не HNSW и не IVF): он сравнивает
запрос со всеми чанками, то есть O(N), и этого хватает на сотни тысяч чанков.
С ``headers=True`` у чанка есть контекст: его заголовок — заголовок документа и раздела, где
он стоит («Бенчмарки › Ядро»), и эмбеддится он вместе с этим заголовком (текст чанка для
цитаты не меняется): так кусок «Корпус синтетический (seed 42)» находится и по словам
раздела, которых в нём нет. Типы (``Document``, ``Chunk``, ``Hit``) — в ``types``, отбор
лучших k по порогу — в ``topk``, формат файла — в ``store``: индекс только связывает их.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np

from . import store
from .chunk import chunk_text
from .embed import Embedder, HashEmbedder, embed_documents, embed_queries
from .errors import EmbedderMismatchError, MiniRagError
from .sentences import headings
from .topk import SCORE_TOLERANCE, top_k  # noqa: F401 — SCORE_TOLERANCE: старое место, читают его и отсюда
from .types import Chunk, Document, Hit
from .validate import require_documents, require_k, require_text, require_threshold

_EMBED_BATCH = 2048  # столько текстов эмбеддим за раз
SECTION_SEP = " › "  # между заголовком документа и раздела в заголовке чанка


def _context_title(doc: Document, marks: list[tuple[int, str]], start: int) -> str:
    """Заголовок документа и последнего заголовка раздела, начатого не позже ``start``."""
    place = bisect.bisect_right([offset for offset, _ in marks], start)
    section = marks[place - 1][1] if place else ""
    same = " ".join(section.split()).lower() == " ".join(doc.title.split()).lower()
    return f"{doc.title}{SECTION_SEP}{section}" if section and not same else doc.title


class Index:
    """Плоский индекс чанков: ``Index.build(docs)``, затем ``search(query, k, threshold)``.

    Пример: ``Index.build(DEMO_DOCS).search("сколько дней отпуска", k=3)[0].doc_id`` → ``'vacation-annual'``.
    Глава 5. Индекс и поиск.
    """

    def __init__(self, embedder: Embedder, docs: Sequence[Document], spans: np.ndarray, matrix: np.ndarray,
                 fingerprint: str | None = None, *, headers: bool = False):
        # spans: int64 (n, 4) — номер документа, chunk_id, start, end
        self.embedder = embedder
        self.headers = bool(headers)  # заголовок чанка — документ и раздел, и эмбеддился он с ним
        self._marks: dict[int, list[tuple[int, str]]] = {}  # номер документа → его заголовки (по запросу)
        self.fingerprint = fingerprint if fingerprint is not None else embedder.fingerprint
        self.docs: tuple[Document, ...] = tuple(docs)
        self._spans = np.asarray(spans, dtype=np.int64)
        self._spans.flags.writeable = False
        self._matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self._matrix.flags.writeable = False
        self._positions: dict[tuple[str, int], int] | None = None  # (doc_id, chunk_id) → строка; строится по запросу

    # ---------- построение ----------
    @classmethod
    def build(cls, docs: Iterable[Document], embedder: Embedder | None = None,
              chunker: Callable[[str], list[str]] | None = None, *, headers: bool = False,
              progress: bool = False) -> Index:
        """Порезать документы на чанки, эмбеддить их и сложить в индекс.

        ``chunker(text)`` возвращает куски текста документа по порядку (по умолчанию
        ``chunk_text`` с max_chars=220). ``headers=True`` — заголовок чанка из документа и раздела,
        и эмбеддится чанк вместе с ним (``indexed_text``). ``progress=True`` показывает полосу прогресса.
        Пример: ``len(Index.build(DEMO_DOCS, HashEmbedder(dim=96)))`` → ``96`` (чанков). Глава 5. Индекс и поиск.
        """
        documents = require_documents(docs)
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
        draft = cls(embedder, documents, spans, np.empty((len(spans), 0)), headers=headers)  # ещё без векторов
        matrix = cls._embed_batches(embedder, [draft.indexed_text(i) for i in range(len(draft))], progress)
        return cls(embedder, documents, spans, matrix, headers=headers)

    @staticmethod
    def _embed_batches(embedder: Embedder, texts: list[str], progress: bool) -> np.ndarray:
        size = getattr(embedder, "batch_size", _EMBED_BATCH)  # медленной модели — пачки поменьше: полоса движется
        batches = range(0, len(texts), size)
        if progress:
            from tqdm.auto import tqdm

            batches = tqdm(batches, desc="Эмбеддинг чанков", unit="пачка")
        parts = [np.asarray(embed_documents(embedder, texts[i : i + size]), dtype=np.float32) for i in batches]
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
        """Чанк номер ``i`` (с 0, в порядке матрицы); с ``headers`` его заголовок — «документ › раздел».

        Пример: ``index.chunk(0).chunk_id`` → ``1``.
        """
        row, chunk_id, start, end = (int(v) for v in self._spans[i])
        doc = self.docs[row]
        title = doc.title
        if self.headers:
            if row not in self._marks:
                self._marks[row] = headings(doc.text)
            title = _context_title(doc, self._marks[row], start)
        return Chunk(doc.id, chunk_id, title, doc.text[start:end])

    def indexed_text(self, i: int) -> str:
        """Текст, который эмбеддился (и который читает BM25) для чанка ``i``: с ``headers`` — заголовок и текст.

        Пример: ``Index.build(DEMO_DOCS, headers=True).indexed_text(0).split()[:3]``
        → ``['Ежегодный', 'отпуск', 'Продолжительность']``. Глава 5. Индекс и поиск.
        """
        chunk = self.chunk(i)
        return f"{chunk.title}\n\n{chunk.text}" if self.headers else chunk.text

    @property
    def spans(self) -> np.ndarray:
        """Где каждый чанк в документах (только для чтения): int64 (число чанков, 4) — номер документа
        в ``docs``, chunk_id, start, end; текст чанка — ``docs[row].text[start:end]``."""
        return self._spans

    def hit(self, i: int, score: float, rank: int = 0) -> Hit:
        """Результат поиска для чанка номер ``i`` (с 0, в порядке матрицы) с оценкой ``score`` и местом ``rank``.

        Пример: ``index.hit(0, 0.5, rank=1).key`` → ``('vacation-annual', 1)``. Глава 3. Top-k и порог.
        """
        chunk = self.chunk(i)
        return Hit(rank, float(score), chunk.doc_id, chunk.chunk_id, chunk.title, chunk.text)

    @property
    def doc_rows(self) -> np.ndarray:
        """Для каждого чанка — номер его документа в ``index.docs`` (копия, int64)."""
        return self._spans[:, 0].copy()

    def position(self, doc_id: str, chunk_id: int) -> int:
        """Номер строки матрицы для чанка (doc_id, chunk_id). Пример: ``index.position("vpn-connect", 1)`` → ``27``."""
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
        vectors = np.asarray(embed_queries(self.embedder, list(queries)), dtype=np.float32)
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

        Пример: ``round(float(index.scores("отпуск").max()), 4)`` → ``0.3227``. Глава 3. Top-k и порог.
        """
        return self._matrix @ self.query_vector(query)

    def _hits(self, scores: np.ndarray, k: int, threshold: float | None) -> list[Hit]:
        return [self.hit(int(i), scores[i], rank) for rank, i in enumerate(top_k(scores, k, threshold), start=1)]

    def search(self, query: str, k: int = 3, threshold: float | None = None) -> list[Hit]:
        """Лучшие k чанков по косинусу; с порогом сначала отбрасываются оценки ниже threshold.

        Пусто, если ничего не прошло порог, — тогда честно отвечают «не найдено».
        Пример: ``index.search("сколько дней отпуска", k=3)[0].doc_id`` → ``'vacation-annual'``. Глава 3. Top-k и порог.
        """
        require_k(k)
        require_threshold(threshold)
        return self._hits(self.scores(query), k, threshold)

    def search_many(self, queries: Sequence[str], k: int = 3, threshold: float | None = None) -> list[list[Hit]]:
        """То же, что ``search``, для списка запросов: запросы эмбеддятся одной пачкой.

        Оценки каждого запроса считаются тем же умножением матрицы на вектор, что и в ``search``,
        поэтому результат совпадает с ``search`` до последнего бита (умножение матрицы на матрицу
        складывало бы в другом порядке, и равные оценки могли бы поменяться местами).
        Пример: ``index.search_many(["отпуск", "VPN"])[1] == index.search("VPN")`` → ``True``.
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

    # ---------- файл (формат и атомарная запись — в store.py; индекс отдаёт ему свои части) ----------
    def save(self, path: str | os.PathLike, *, meta: dict | None = None) -> Path:
        """Сохранить индекс в один самоописывающий файл; сбой посреди записи не портит прежний.

        ``meta`` — что ещё записать в файл (командная строка кладёт туда эмбеддер и порог отказа).
        Пример: ``index.save("demo.minirag").name`` → ``'demo.minirag'``. Глава 5. Индекс и поиск.
        """
        return store.write(path, self.fingerprint, self.docs, self.spans, self.vectors, meta=meta,
                           headers=self.headers)

    @classmethod
    def load(cls, path: str | os.PathLike, embedder: Embedder | None = None) -> Index:
        """Загрузить индекс из файла и проверить, что ``embedder`` — тот же, что строил индекс.

        Пример: ``Index.load("demo.minirag", HashEmbedder(dim=96)).search(q) == index.search(q)`` → ``True``.
        Глава 5. Индекс и поиск.
        """
        embedder = embedder if embedder is not None else HashEmbedder()
        docs, spans, matrix, headers = store.read(path, embedder.fingerprint)
        return cls(embedder, docs, spans, matrix, headers=headers)


def require_index(index: object) -> Index:
    """Проверить, что index — Index, и вернуть его (общая проверка модулей поверх индекса)."""
    if not isinstance(index, Index):
        raise MiniRagError(f"index должен быть Index, а получено {type(index).__name__}: построй его через Index.build(docs).")
    return index


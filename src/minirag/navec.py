"""Обученные словесные векторы navec: эмбеддер «среднее векторов слов» за тем же протоколом.

navec — русские векторы слов (250 тысяч слов × 300 координат, лицензия MIT), обученные на
новостях. Файл ``navec_news_v1_1B_250K_300d_100q.tar`` лежит внутри колеса ``natasha`` на PyPI,
поэтому ничего не скачивается во время работы. Сам пакет ``natasha`` мы не импортируем: его
``__init__`` тянет ``pymorphy2``, который на Python ≥ 3.11 падает. Путь к файлу находит
``importlib.util.find_spec("natasha")`` — он читает место пакета, не исполняя его код, — а
векторы читает маленький пакет ``navec`` (он зависит только от numpy).

Вектор текста — взвешенное среднее векторов его слов, делённое на длину. Вес ``"sif"``
(по умолчанию) — ``a / (a + p(слово))``, где p — частота слова в корпусе, на котором учили
navec: частые «и», «в», «на» весят мало. Вес ``"mean"`` — простое среднее. Слова вне словаря
пропускаются (числа, коды, опечатки); текст без знакомых слов даёт нулевой вектор.

Чего модуль не делает: не учитывает порядок слов и отрицание (среднее их теряет), не лемматизирует
и не исправляет опечатки — и не загружает ничего из сети.
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path

import numpy as np

from .errors import MiniRagError
from .text import require_text, tokenize

NAVEC_FILE = "navec_news_v1_1B_250K_300d_100q.tar"
WEIGHTINGS = ("sif", "mean")
SIF_A = 1e-3  # параметр a весов SIF (Arora и др., 2017): слово с частотой выше 0.001 весит меньше половины


def navec_path() -> Path:
    """Путь к файлу векторов navec внутри установленного пакета natasha — без импорта natasha.

    Пример: ``navec_path().name`` → ``'navec_news_v1_1B_250K_300d_100q.tar'``.
    Глава 8. Где hash-эмбеддер ломается.
    """
    spec = importlib.util.find_spec("natasha")  # для пакета верхнего уровня его код не исполняется
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        path = Path(location) / "data" / "emb" / NAVEC_FILE
        if path.is_file():
            return path
    raise MiniRagError(
        f"Не найден файл векторов navec ({NAVEC_FILE}): он приходит внутри пакета natasha. "
        "Поставь пакеты курса: pip install -r requirements.txt (или pip install natasha navec) — "
        "либо передай путь к файлу явно: NavecEmbedder(path=...)."
    )


@lru_cache(maxsize=2)
def _load(path: str):
    """Прочитать файл navec один раз на процесс (около двух секунд)."""
    try:
        from navec import Navec
    except ImportError as error:
        raise MiniRagError("Нет пакета navec, который читает векторы: pip install navec==0.10.0.") from error
    return Navec.load(path)


class NavecEmbedder:
    """Эмбеддер на обученных векторах navec: вектор текста — взвешенное среднее векторов его слов.

    ``weighting="sif"`` (по умолчанию) приглушает частые слова, ``"mean"`` — простое среднее.
    ``path`` — свой файл navec; по умолчанию — тот, что внутри пакета natasha.
    Пример: ``NavecEmbedder().embed(["отпуск"]).shape`` → ``(1, 300)``. Глава 8. Где hash-эмбеддер ломается.
    """

    def __init__(self, path: str | Path | None = None, *, weighting: str = "sif"):
        if weighting not in WEIGHTINGS:
            raise MiniRagError(f"weighting должен быть одним из {WEIGHTINGS}, получено {weighting!r}.")
        path = Path(path) if path is not None else navec_path()
        if not path.is_file():
            raise MiniRagError(f"Файла векторов navec нет: {path}. Передай путь к .tar-файлу navec.")
        self.path = path
        self.weighting = weighting
        self._navec = _load(str(path))
        self.dim = int(self._navec.pq.dim)
        counts = np.asarray(self._navec.vocab.counts, dtype=np.float64)
        self._total = float(counts.sum())
        # отпечаток: id векторов, их размер на диске и способ взвешивания — это и есть пространство
        digest = hashlib.sha256(f"{self._navec.meta.id}:{path.stat().st_size}".encode()).hexdigest()[:12]
        self.fingerprint = f"NavecEmbedder({self._navec.meta.id}, weighting={weighting})/{digest}"
        self._cache: dict[str, tuple[np.ndarray, float] | None] = {}

    def __repr__(self) -> str:
        return f"NavecEmbedder({self._navec.meta.id}, weighting={self.weighting!r})"

    def _word(self, token: str) -> tuple[np.ndarray, float] | None:
        """Вектор и вес слова; ``None``, если слова нет в словаре (пробуем и «ё» → «е»)."""
        if token in self._cache:
            return self._cache[token]
        vocab = self._navec.vocab
        word = token if token in vocab else token.replace("ё", "е")
        found = None
        if word in vocab:
            weight = 1.0
            if self.weighting == "sif":
                weight = SIF_A / (SIF_A + vocab.count(word) / self._total)
            found = (np.asarray(self._navec[word], dtype=np.float64), weight)
        self._cache[token] = found
        return found

    def known(self, token: str) -> bool:
        """Есть ли слово в словаре navec. Пример: ``NavecEmbedder().known("отпуск")`` → ``True``."""
        return self._word(require_text(token, "Слово").lower()) is not None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Матрица n×300 (float64): по строке на текст, строки единичной длины или нулевые.

        Пример: ``NavecEmbedder().embed(["отпуск", "отдых"]).shape`` → ``(2, 300)``.
        Глава 8. Где hash-эмбеддер ломается.
        """
        if isinstance(texts, str):
            raise MiniRagError("embed ждёт список текстов, а получена одна строка: embed([text]) или embed_one(text).")
        texts = list(texts)
        matrix = np.zeros((len(texts), self.dim))
        for row, text in enumerate(texts):
            require_text(text, f"текст №{row}")
            for token in tokenize(text):
                found = self._word(token)
                if found is not None:
                    vector, weight = found
                    matrix[row] += weight * vector
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)

    def embed_one(self, text: str) -> np.ndarray:
        """Вектор одного текста, форма (300,). Пример: ``float(abs(NavecEmbedder().embed_one("8821")).sum())`` → ``0.0`` (слова нет в словаре)."""
        return self.embed([require_text(text)])[0]

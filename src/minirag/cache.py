"""Кэш индекса демо-корпуса: ``python -m minirag ask`` без ``--index`` не строит его при каждом вызове.

Индекс демо-корпуса эмбеддером без сети строится один раз и лежит в ``MINIRAG_CACHE`` (по умолчанию
``$XDG_CACHE_HOME/minirag`` или ``~/.cache/minirag``) вместе со своей калибровкой; ключ — имя эмбеддера и хеш
кода и данных библиотеки, так что другая версия minirag строит свой. e5 строил бы его по 15 секунд на вопрос.
Кэш не записался (папка только для чтения) или испорчен — индекс просто строится заново.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from . import store
from .calibrate import Calibration
from .data import DEMO_DOCS
from .defaults import ask_calibration
from .errors import MiniRagError
from .index import Index


def demo_index(name: str, embedder, *, cache: bool = True, progress: bool = False) -> tuple[Index, Calibration]:
    """Индекс демо-корпуса (чанки с заголовками) и его калибровка; ``cache`` — взять из кэша или положить в него.

    Пример: ``len(demo_index("hash", HashEmbedder(4096, stem=True, char_ngrams=(3, 5)), cache=False)[0])`` → ``96``.
    Глава 12. Переписать запрос: HyDE, расширение и командная строка.
    """
    cached = folder() / f"demo-{name}-{library_digest()}.minirag" if cache else None
    if cached is not None and cached.is_file():
        try:
            return Index.load(cached, embedder), Calibration.from_dict(store.read_meta(cached)["calibration"])
        except (MiniRagError, OSError, KeyError, TypeError, ValueError):
            pass
    index = Index.build(DEMO_DOCS, embedder, headers=True, progress=progress)
    calibration = ask_calibration(index, name)
    if cached is not None:
        try:
            cached.parent.mkdir(parents=True, exist_ok=True)
            index.save(cached, meta={"embedder": name, "calibration": calibration.to_dict()})
        except (MiniRagError, OSError):
            pass
    return index, calibration


def folder() -> Path:
    """Папка кэша: ``MINIRAG_CACHE``, иначе ``$XDG_CACHE_HOME/minirag``, иначе ``~/.cache/minirag``."""
    if os.environ.get("MINIRAG_CACHE"):
        return Path(os.environ["MINIRAG_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "minirag"


def library_digest() -> str:
    """Хеш кода и данных пакета minirag: другая версия библиотеки — другой ключ кэша."""
    package = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for path in sorted(package.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            h.update(str(path.relative_to(package)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]

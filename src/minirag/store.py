"""Индекс на диске: один самоописывающий файл и атомарная запись.

Файл — zip без сжатия из четырёх частей: ``manifest.json`` (формат, версия, отпечаток
эмбеддера, размеры и что лежит в каждой части), ``docs.json`` (документы), ``spans.npy``
(чанк = номер документа, chunk_id, start, end) и ``vectors.npy`` (float32). В manifest.json
может лежать и ``meta`` — что известно о сборке индекса сверх векторов (командная строка кладёт
туда имя эмбеддера и калиброванный порог отказа); читает его ``read_meta``. Файлы без ``meta``
(записанные до него) читаются как прежде: ``read_meta`` вернёт пустой словарь. ``headers`` в
manifest.json — эмбеддились ли чанки с заголовком документа и раздела (нет поля — не эмбеддились). Ничего не
читается через pickle, поэтому чужой файл не может выполнить код при загрузке.
Запись идёт во временный файл рядом и заканчивается ``os.replace``: сбой посреди записи
оставляет прежний индекс целым. Модуль не строит индекс и не ищет и не знает класса ``Index``:
``Index.save``/``Index.load`` передают ему и получают назад части индекса.
"""

from __future__ import annotations

import io
import json
import os
import re
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from .errors import EmbedderMismatchError, MiniRagError
from .types import Document

FORMAT_NAME = "minirag-index"
FORMAT_VERSION = 1


def write(path: str | os.PathLike, fingerprint: str, docs: Sequence[Document], spans: np.ndarray,
          vectors: np.ndarray, *, meta: Mapping | None = None, headers: bool = False) -> Path:
    """Записать части индекса в файл атомарно и вернуть путь (зовёт ``Index.save``).

    ``meta`` — словарь, который можно записать в JSON: ложится в manifest.json как есть;
    ``headers`` — эмбеддились ли чанки со своими заголовками (``Index.build(..., headers=True)``).
    Пример: ``write("копия.minirag", index.fingerprint, index.docs, index.spans, index.vectors).exists()`` → ``True``.
    Глава 5. Индекс и поиск.
    """
    path = Path(path)
    if not path.parent.is_dir():
        raise MiniRagError(f"Папки {path.parent} нет: создай её или укажи другой путь для индекса.")
    manifest = {
        "format": FORMAT_NAME,
        "version": FORMAT_VERSION,
        "fingerprint": fingerprint,
        "dim": int(vectors.shape[1]),
        "dtype": "float32",
        "n_docs": len(docs),
        "n_chunks": int(spans.shape[0]),
        "headers": bool(headers),
        "files": {
            "docs.json": "документы: id, title, text",
            "spans.npy": "int64 (n_chunks, 4): номер документа, chunk_id, start, end",
            "vectors.npy": "float32 (n_chunks, dim): строки единичной длины",
        },
    }
    if meta:
        manifest["meta"] = dict(meta)
    docs = [{"id": d.id, "title": d.title, "text": d.text} for d in docs]
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as raw:
            with zipfile.ZipFile(raw, "w", compression=zipfile.ZIP_STORED) as archive:
                archive.writestr("manifest.json", json.dumps(manifest, ensure_ascii=False, indent=1))
                archive.writestr("docs.json", json.dumps(docs, ensure_ascii=False))
                for name, array in (("spans.npy", spans), ("vectors.npy", vectors)):
                    buffer = io.BytesIO()
                    np.save(buffer, array, allow_pickle=False)
                    archive.writestr(name, buffer.getvalue())
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def read(path: str | os.PathLike, fingerprint: str) -> tuple[list[Document], np.ndarray, np.ndarray, bool]:
    """Прочитать части индекса (документы, spans, векторы, ``headers``), проверив формат, версию,
    целостность и что индекс построен эмбеддером с отпечатком ``fingerprint`` (зовёт ``Index.load``).

    Пример: ``read("demo.minirag", HashEmbedder().fingerprint)[2].shape`` → ``(96, 96)``. Глава 5. Индекс и поиск.
    """
    path = _index_file(path, "Сначала построй индекс и сохрани его: index.save(path).")
    broken = f"Файл {path} повреждён или это не индекс minirag"
    try:
        with zipfile.ZipFile(path) as archive:
            manifest = json.loads(archive.read("manifest.json"))
            if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
                raise MiniRagError(f"{broken}: в manifest.json нет format={FORMAT_NAME!r}.")
            version = manifest.get("version")
            if version != FORMAT_VERSION:
                raise MiniRagError(
                    f"Индекс {path} записан в формате версии {version!r}, а эта версия minirag "
                    f"читает версию {FORMAT_VERSION}. Перестрой индекс: Index.build(docs).save(path)."
                )
            if manifest.get("fingerprint") != fingerprint:
                raise EmbedderMismatchError(
                    f"Индекс {path} построен эмбеддером «{manifest.get('fingerprint')}», а загружается "
                    f"с «{fingerprint}». Загрузи его тем же эмбеддером или перестрой индекс."
                )
            docs = [Document(d["id"], d["title"], d["text"]) for d in json.loads(archive.read("docs.json"))]
            spans = np.load(io.BytesIO(archive.read("spans.npy")), allow_pickle=False)
            matrix = np.load(io.BytesIO(archive.read("vectors.npy")), allow_pickle=False)
    except MiniRagError:
        raise
    except (zipfile.BadZipFile, KeyError, ValueError, TypeError, OSError, EOFError) as exc:
        raise MiniRagError(f"{broken}: {_why(exc)}. Перестрой индекс и сохрани заново.") from exc
    n = manifest.get("n_chunks")
    consistent = (
        spans.dtype == np.int64 and spans.ndim == 2 and spans.shape == (n, 4)
        and matrix.dtype == np.float32 and matrix.shape == (n, manifest.get("dim"))
        and len(docs) == manifest.get("n_docs")
        and (n == 0 or (spans[:, 0].min() >= 0 and spans[:, 0].max() < len(docs)))
        and bool(np.all(np.isfinite(matrix)))
        and isinstance(manifest.get("headers", False), bool)
    )
    if not consistent:
        raise MiniRagError(f"{broken}: размеры частей не сходятся с manifest.json. Перестрой индекс.")
    return docs, spans, matrix, manifest.get("headers", False)


def _why(exc: Exception) -> str:
    """Что не так с файлом индекса — по-русски, по исключению, которым его чтение кончилось."""
    if isinstance(exc, zipfile.BadZipFile):
        return "это не zip-архив индекса (или он обрезан)"
    if isinstance(exc, KeyError):  # zipfile: "There is no item named 'docs.json' in the archive"
        named = re.search(r"'([^']+)'", str(exc.args[0]) if exc.args else "")
        return f"в архиве нет части {named.group(0)}" if named else "в архиве не хватает частей"
    if isinstance(exc, EOFError):
        return "файл обрывается на середине"
    if isinstance(exc, OSError):
        return f"файл не читается ({exc.strerror or 'ошибка чтения'})"
    return "части архива не читаются как JSON и массивы numpy"


def _index_file(path: str | os.PathLike, build: str) -> Path:
    """Путь к файлу индекса, если он есть и это файл; иначе — ошибка, которая говорит, что там и что делать."""
    path = Path(path)
    if path.is_dir():
        raise MiniRagError(f"{path} — папка, а не файл индекса. Индекс папки пишет команда python -m minirag index "
                           f"{path} --out ФАЙЛ, а читать нужно этот ФАЙЛ.")
    if not path.is_file():
        raise MiniRagError(f"Файла индекса {path} нет. {build}")
    return path


def read_meta(path: str | os.PathLike) -> dict:
    """``meta`` из manifest.json файла индекса; у файла без него — пустой словарь.

    Пример: ``read_meta("demo.minirag")`` → ``{}`` (``Index.save`` не пишет meta). Глава 12. Переписать запрос: HyDE, расширение и командная строка.
    """
    path = _index_file(path, f"Сначала построй индекс: python -m minirag index ПАПКА --out {path}.")
    try:
        with zipfile.ZipFile(path) as archive:
            manifest = json.loads(archive.read("manifest.json"))
    except (zipfile.BadZipFile, KeyError, ValueError, OSError) as exc:
        raise MiniRagError(f"Файл {path} повреждён или это не индекс minirag: {_why(exc)}. "
                           f"Перестрой индекс и сохрани заново.") from None
    meta = manifest.get("meta", {}) if isinstance(manifest, dict) else {}
    if not isinstance(meta, dict):
        raise MiniRagError(f"В файле индекса {path} поле meta — не словарь: файл повреждён, перестрой индекс.")
    return meta

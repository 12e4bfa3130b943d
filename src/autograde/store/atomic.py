"""Запись файла целиком или никак — единственный способ, которым autograde пишет файлы курса.

Временный файл рядом и ``os.replace``: после ``kill -9`` (или сбоя питания, если ``durable``) файл либо
прежний, либо новый целиком, никогда не наполовину. Этим пишутся итоги, CSV, история сдач, список группы,
база ручных отметок и отзывы.
"""

from __future__ import annotations

import os
from pathlib import Path


def atomic_write(path: Path, data: bytes | str, durable: bool = True) -> None:
    """Записать файл целиком или никак: временный файл рядом и os.replace.

    ``durable`` — ещё и ``fsync`` до переименования (файл переживёт и сбой питания). Без него файл всё
    равно целый после ``kill -9`` (его допишет ядро ОС); так пишет ``save.Recorder``, который сбрасывает
    на диск всю пачку одним ``os.sync()``.
    """
    tmp = path.with_name(f".{path.name[:100]}.{os.getpid()}.tmp")
    try:
        f = open(tmp, "wb")  # noqa: SIM115 — закрывает with ниже
    except FileNotFoundError:  # папки ещё нет (обычно она есть: mkdir на каждую запись дорог)
        path.parent.mkdir(parents=True, exist_ok=True)
        f = open(tmp, "wb")  # noqa: SIM115
    with f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)
        if durable:
            f.flush()
            os.fsync(f.fileno())
    os.replace(tmp, path)

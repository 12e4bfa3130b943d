"""Свои файлы → документы: .txt, .md, .csv, .html, а с пакетами pypdf и python-docx — .pdf и .docx.

``id`` документа — путь к файлу относительно папки (у строки CSV — ``путь:номер строки``),
поэтому цитата [n] ведёт к файлу. ``title`` — заголовок документа: первый заголовок «#» в
Markdown, <title> (или первый <h1>) в HTML, название в свойствах DOCX и PDF (или первый абзац
стиля «Заголовок» в DOCX); если его нет — первая непустая строка текста (не длиннее
``TITLE_MAX_CHARS``), а у пустого — имя файла. Заголовки внутри текста (Markdown, HTML, DOCX)
остаются отдельными строками без точки, с пустой строкой после: так генератор ответа видит,
что это заголовок, а не предложение. Текст и заголовок страницы HTML достаёт ``html_text``.
Каждый файл, который не удалось прочитать, попадает в ``LoadReport.skipped`` с причиной —
ничего не пропадает молча. Скрытые файлы и папки (``.git``, ``.DS_Store``) не читаются.
Модуль не режет текст на чанки, не распознаёт сканы (OCR) и не угадывает кодировку:
текстовые файлы читаются в UTF-8.
"""

from __future__ import annotations

import csv
import io
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from .errors import MiniRagError
from .html_text import html_text
from .types import Document

TEXT_SUFFIXES = (".txt", ".md", ".markdown")
SUFFIXES = (*TEXT_SUFFIXES, ".csv", ".html", ".htm", ".pdf", ".docx")
TITLE_MAX_CHARS = 100  # заголовок из первой строки длиннее этого обрезается по слову с «…»
MAX_BYTES = 50_000_000  # файлы больше 50 МБ не читаем: это почти наверняка не текст для RAG
_MD_HEADING_RE = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")
_EXTRA = "pip install 'minirag[files]'"


@dataclass
class LoadReport:
    """Итог загрузки папки: прочитанные документы и пропущенные файлы с причинами.

    Пример: ``report = load_folder("мои_документы"); len(report.docs), report.skipped`` → ``(1, [])``.
    Глава 12. Переписать запрос: HyDE, расширение и командная строка.
    """

    docs: list[Document] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    files: int = 0  # сколько файлов прочитано: у CSV документ — каждая строка, и документов бывает больше

    def __str__(self) -> str:
        rows = (f" (строка CSV — отдельный документ, всего документов {len(self.docs)})"
                if len(self.docs) != self.files else "")
        lines = [f"Прочитано файлов: {self.files}{rows}, пропущено файлов: {len(self.skipped)}."]
        lines += [f"  пропущен {path}: {reason}" for path, reason in self.skipped]
        return "\n".join(lines)


def _tidy(text: str) -> str:
    """Пробелы внутри строк — по одному, пустые строки — не больше одной подряд."""
    lines = [" ".join(line.split()) for line in text.splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def _read_text(path: Path, encoding: str) -> str:
    try:
        return path.read_bytes().decode(encoding)
    except UnicodeDecodeError as exc:
        raise MiniRagError(f"файл не в кодировке {encoding} (байт {exc.object[exc.start]:#04x} в позиции "
                           f"{exc.start}): пересохрани его в UTF-8") from None


def _pdf(path: Path) -> tuple[str, str]:
    try:
        from pypdf import PdfReader
    except ImportError:
        raise MiniRagError(f"для PDF нужен пакет pypdf: {_EXTRA}") from None
    try:
        reader = PdfReader(path)
        if reader.is_encrypted:
            raise MiniRagError("PDF зашифрован: сними пароль и сохрани файл заново")
        pages = [page.extract_text() or "" for page in reader.pages]
        title = (reader.metadata.title if reader.metadata else None) or ""
    except MiniRagError:
        raise
    except Exception as exc:  # noqa: BLE001 — pypdf бросает на битых файлах самые разные ошибки
        raise MiniRagError(f"PDF не читается ({type(exc).__name__}: {exc}); открой его и пересохрани") from None
    return str(title).strip(), "\n\n".join(pages)


def _docx(path: Path) -> tuple[str, str]:
    try:
        import docx
    except ImportError:
        raise MiniRagError(f"для DOCX нужен пакет python-docx: {_EXTRA}") from None
    try:
        document = docx.Document(str(path))
        paragraphs = [(p.style.name if p.style is not None else "", p.text) for p in document.paragraphs]
        cells = [cell.text for table in document.tables for row in table.rows for cell in row.cells]
    except Exception as exc:  # noqa: BLE001 — битый zip, не тот XML: причин много
        raise MiniRagError(f"DOCX не читается ({type(exc).__name__}: {exc}); открой его и пересохрани") from None
    title = (document.core_properties.title or "").strip()
    title = title or next((text for style, text in paragraphs if text.strip() and style.startswith(("Title", "Heading"))), "")
    # абзац DOCX — абзац текста: между ними пустая строка, и заголовок остаётся отдельной строкой
    return title.strip(), "\n\n".join([text for _, text in paragraphs if text.strip()] + list(dict.fromkeys(cells)))


def _markdown(text: str) -> tuple[str, str]:
    """Первый заголовок и текст, где «## Заголовок» — строка «Заголовок» без решёток и с пустой строкой
    после (отдельный абзац); строки внутри блоков кода ``` не трогаются: «# комментарий» там — не заголовок."""
    lines, headings, in_code = [], [], False
    for line in text.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            in_code = not in_code
        heading = None if in_code else _MD_HEADING_RE.match(line)
        if heading:
            headings.append(heading.group(1))
            lines += [heading.group(1), ""]
        else:
            lines.append(line)
    return (headings[0] if headings else ""), "\n".join(lines)


def _csv_rows(text: str, doc_id: str, title: str) -> list[Document]:
    try:
        dialect = csv.Sniffer().sniff(text[:4096], delimiters=",;\t")
    except csv.Error:
        dialect = csv.excel
    reader = csv.reader(io.StringIO(text), dialect)
    try:
        header = next(reader, [])
        docs = []
        for row in reader:  # «столбец: значение» по строке; лишние значения без имени столбца
            names = [name.strip() for name in header] + [""] * max(0, len(row) - len(header))
            body = "\n".join(f"{name}: {value.strip()}" if name else value.strip()
                             for name, value in zip(names, row, strict=False) if value.strip())
            if body:
                docs.append(Document(f"{doc_id}:{reader.line_num}", title, body))
    except csv.Error as exc:
        raise MiniRagError(f"CSV не разбирается (строка {reader.line_num}: {exc})") from None
    if not docs:
        raise MiniRagError("в CSV нет ни одной строки с данными под строкой заголовков")
    return docs


def load_file(path: str | os.PathLike, root: str | os.PathLike | None = None, *,
              encoding: str = "utf-8") -> list[Document]:
    """Документы одного файла (у CSV — по документу на строку, первая строка — заголовки столбцов).

    ``id`` — путь относительно ``root`` (без него — имя файла). Не читается — ``MiniRagError``
    с причиной. Пример: ``load_file("docs/отпуск.md", root="docs")[0].id`` → ``'отпуск.md'``.
    Глава 12. Переписать запрос: HyDE, расширение и командная строка.
    """
    path = Path(path)
    try:
        doc_id = path.relative_to(root).as_posix() if root is not None else path.name
    except ValueError:
        raise MiniRagError(f"{path} лежит не внутри {root}: передай root — папку, где лежит файл") from None
    suffix = path.suffix.lower()
    if path.is_dir():
        raise MiniRagError(f"{path} — папка, а не файл: передай её в load_folder")
    if not path.is_file():
        raise MiniRagError(f"{path} нет или это не обычный файл (битая ссылка?)")
    if suffix not in SUFFIXES:
        raise MiniRagError(f"формат {suffix or 'без расширения'} не поддерживается, читаются {', '.join(SUFFIXES)}")
    if path.stat().st_size > MAX_BYTES:
        raise MiniRagError(f"файл больше {MAX_BYTES // 1_000_000} МБ: раздели его или вынь из папки")
    title = ""
    if suffix == ".pdf":
        title, text = _pdf(path)
    elif suffix == ".docx":
        title, text = _docx(path)
    else:
        text = _read_text(path, encoding).removeprefix("\ufeff")
        if suffix == ".csv":
            return _csv_rows(text, doc_id, path.name)
        if suffix in (".html", ".htm"):
            title, text = html_text(text)
        elif suffix in (".md", ".markdown"):
            title, text = _markdown(text)
    text = _tidy(text)
    if not text:
        scan = " (скан без текстового слоя? нужен OCR)" if suffix == ".pdf" else ""
        raise MiniRagError(f"в файле нет текста{scan}")
    return [Document(doc_id, title or first_line(text) or path.name, text)]


def first_line(text: str) -> str:
    """Первая непустая строка текста, не длиннее ``TITLE_MAX_CHARS`` (длинная обрезается по слову с «…»).

    Пример: ``first_line("\\nПравила отпуска\\nОтпуск — 28 дней.")`` → ``'Правила отпуска'``. Глава 12. Переписать запрос: HyDE, расширение и командная строка.
    """
    line = next((" ".join(line.split()) for line in text.splitlines() if line.strip()), "")
    if len(line) <= TITLE_MAX_CHARS:
        return line
    return line[: TITLE_MAX_CHARS].rsplit(" ", 1)[0].rstrip(" ,;:—-") + "…"


def load_folder(folder: str | os.PathLike, *, encoding: str = "utf-8", progress: bool = False) -> LoadReport:
    """Прочитать все файлы папки и подпапок по порядку путей; нечитаемые — в ``skipped`` с причиной.

    Пример: ``load_folder("мои_документы").docs[0].id`` → ``'пропуск.txt'``; затем
    ``Index.build(load_folder("мои_документы").docs)``. Глава 12. Переписать запрос: HyDE, расширение и командная строка.
    """
    folder = Path(folder)
    if folder.is_file():
        raise MiniRagError(f"{folder} — файл, а не папка. Положи его (и другие свои файлы) в папку и укажи её.")
    if not folder.is_dir():
        raise MiniRagError(f"Папки {folder} нет. Укажи папку со своими файлами (.txt, .md, .csv, .html, .pdf, .docx).")
    paths, report = [], LoadReport()
    for current, dirs, files in os.walk(folder):  # по ссылкам на папки не ходим: так не зациклиться
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        linked = [d for d in dirs if Path(current, d).is_symlink()]
        report.skipped += [(Path(current, d).relative_to(folder).as_posix(), "ссылка на папку: положи файлы в саму папку")
                           for d in linked]
        paths += [Path(current, name) for name in files if not name.startswith(".")]
    paths.sort(key=lambda p: p.relative_to(folder).as_posix())
    if progress:
        from tqdm.auto import tqdm

        paths = tqdm(paths, desc="Чтение файлов", unit="файл")
    for path in paths:
        try:
            report.docs += load_file(path, folder, encoding=encoding)
            report.files += 1
        except MiniRagError as exc:
            report.skipped.append((path.relative_to(folder).as_posix(), str(exc)))
        except OSError as exc:
            report.skipped.append((path.relative_to(folder).as_posix(), f"не читается: {exc.strerror or exc}"))
    report.skipped.sort()
    return report

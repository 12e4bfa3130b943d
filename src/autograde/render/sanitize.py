"""Всё, что слушатель сдал и что напечатал его код, — чужие данные: показываем только очищенное.

Очищенный ноутбук — то, что ложится в ``autograded/`` (его открывает formgrader в сессии
преподавателя), в базу оценок и в отзыв:

* markdown слушателя превращается в HTML и чистится nh3 (санитайзер HTML на Rust, сделанный для
  этого): скрипты, обработчики, стили, ``javascript:`` и ``data:`` в ссылках не проходят;
* выходы кода — только текст, ошибки и картинки PNG/JPEG, которые правда PNG/JPEG (base64
  проверен, сигнатура файла на месте); HTML, JavaScript, SVG, LaTeX и виджеты заменяются строкой
  «[вывод … не показывается]»; из метаданных выходов остаются только целые width/height;
* метаданные ячеек — только nbgrader из эталона (``allowed`` решает вызывающий);
* управляющие и невидимые символы (категории Unicode Cc, Cf, Zl, Zp: ESC, смена направления
  текста U+202A–U+202E и U+2066–U+2069, нулевой ширины и т. п.; кроме перевода строки и
  табуляции) показываются кодами: ``\\x1b``, ``\\u202e`` — в терминале и CSV (``printable``) и в
  отзыве (``shown``: выходы, markdown, сообщения, код слушателя); в отзыве остаются только
  цвета ANSI (``ESC[…m``) — их nbconvert сам превращает в HTML.

Модуль ничего не читает и не пишет на диск.
"""

from __future__ import annotations

import base64
import binascii
import copy
import functools
import re
import unicodedata

from nbformat import NotebookNode

SAFE_TAGS = {"a", "abbr", "b", "blockquote", "br", "code", "del", "div", "em", "h1", "h2", "h3", "h4", "h5", "h6",
             "hr", "i", "img", "li", "ol", "p", "pre", "span", "strong", "sub", "sup", "table", "tbody", "td", "th",
             "thead", "tr", "ul"}
SAFE_ATTRIBUTES = {"a": {"href", "title"}, "img": {"src", "alt", "title"}}
SAFE_SCHEMES = {"http", "https", "mailto"}
IMAGE_MAGIC = {"image/png": b"\x89PNG\r\n\x1a\n", "image/jpeg": b"\xff\xd8\xff"}
SAFE_MIME = ("text/plain", *IMAGE_MAGIC)
_KEEP_OUTPUT = re.compile(r"\x1b\[[0-9;]{0,32}m|\r")  # цвета ANSI в выводе (nbconvert рисует их сам) и \r
_KEEP_TEXT = re.compile(r"\r")


def markdown_html(source: str) -> str:
    """Markdown слушателя → безопасный HTML (nh3). Пример: ``markdown_html("<script>x</script>**a**")``."""
    import nh3
    from nbconvert.filters import markdown2html

    return nh3.clean(markdown2html(shown(source, colours=False)), tags=SAFE_TAGS, attributes=SAFE_ATTRIBUTES,
                     url_schemes=SAFE_SCHEMES, clean_content_tags={"script", "style"}, link_rel="noopener noreferrer nofollow")


def _image(value, mime: str) -> str | None:
    """Строка base64 картинки, если это правда картинка этого типа, иначе None."""
    if not isinstance(value, str):
        return None
    compact = "".join(value.split())
    try:
        raw = base64.b64decode(compact, validate=True)
    except (binascii.Error, ValueError):
        return None
    return compact if raw.startswith(IMAGE_MAGIC[mime]) else None


def _size(value) -> int | None:
    return value if type(value) is int and 0 < value <= 10000 else None


def output(out: dict) -> NotebookNode | None:
    """Один выход кода в безопасном виде (или None — выбросить)."""
    kind = out.get("output_type")
    if kind == "stream":
        name = out.get("name") if out.get("name") in ("stdout", "stderr") else "stdout"
        return NotebookNode(output_type="stream", name=name, text=shown(out.get("text", "")))
    if kind == "error":
        traceback = out.get("traceback") if isinstance(out.get("traceback"), list) else []
        return NotebookNode(output_type="error", ename=shown(out.get("ename", "Error")),
                            evalue=shown(out.get("evalue", "")), traceback=[shown(line) for line in traceback])
    if kind not in ("display_data", "execute_result"):
        return None
    data = out.get("data") if isinstance(out.get("data"), dict) else {}
    kept, metadata = {}, {}
    if isinstance(data.get("text/plain"), str):
        kept["text/plain"] = shown(data["text/plain"])
    for mime in IMAGE_MAGIC:
        image = _image(data.get(mime), mime)
        if image is not None:
            kept[mime] = image
            meta = (out.get("metadata") or {}).get(mime) if isinstance(out.get("metadata"), dict) else None
            sizes = {k: _size(meta.get(k)) for k in ("width", "height")} if isinstance(meta, dict) else {}
            if any(sizes.values()):
                metadata[mime] = {k: v for k, v in sizes.items() if v}
    dropped = sorted(k for k in data if k not in kept)
    if dropped and not kept:
        kept["text/plain"] = "[вывод " + ", ".join(printable(k)[:60] for k in dropped[:5]) + " не показывается]"
    node = NotebookNode(output_type=kind, data=kept, metadata=metadata)
    if kind == "execute_result":
        node["execution_count"] = out.get("execution_count") if type(out.get("execution_count")) is int else None
    return node


ACTIVE = ("text/html", "application/javascript", "image/svg+xml", "text/markdown", "text/latex",
          "application/vnd.jupyter.widget-view+json")


def notebook(nb: NotebookNode, trusted_markdown) -> tuple[NotebookNode, list[str]]:
    """Очищенная копия исполненного ноутбука и замечания о том, что пришлось убрать.

    ``trusted_markdown(cell)`` — markdown из эталона (инструкции): его оставляем как есть.
    """
    from nbconvert.filters import markdown2html

    clean = copy.deepcopy(nb)
    active, scripts = set(), False
    for cell in clean.cells:
        nbgrader = cell.metadata.get("nbgrader")
        cell.metadata = NotebookNode({"nbgrader": nbgrader} if nbgrader else {})
        cell.pop("attachments", None)
        if cell.cell_type == "markdown" and not trusted_markdown(cell):
            safe = markdown_html(cell.source)
            scripts = scripts or re.search(r"<script|\bon\w+\s*=|javascript:", markdown2html(cell.source), re.I) is not None
            cell.source = safe
        elif cell.cell_type == "code":
            for out in cell.get("outputs", []):
                active.update(k for k in (out.get("data") or {}) if k in ACTIVE)
            cell.outputs = [o for o in (output(x) for x in cell.get("outputs", [])) if o is not None]
            if type(cell.get("execution_count")) is not int:
                cell.execution_count = None
    notes = []
    if active:
        notes.append(f"вывод {', '.join(sorted(active))} не показывается: в отзыве и formgrader — только текст и "
                     "картинки PNG/JPEG")
    if scripts:
        notes.append("из markdown убраны скрипты и обработчики событий")
    return clean, notes


@functools.cache
def _hidden() -> re.Pattern:
    """Все символы категорий Cc, Cf, Zl, Zp, кроме перевода строки и табуляции (строится один раз).

    Такие символы есть только в плоскостях Unicode 0, 1 и 14 (теги U+E0000–U+E007F): остальные не перебираем.
    """
    ranges, start, prev = [], None, None
    for point in [*range(0x20000), *range(0xE0000, 0xE1000)]:
        if point in (0x09, 0x0A) or unicodedata.category(chr(point)) not in ("Cc", "Cf", "Zl", "Zp"):
            continue
        if start is not None and point == prev + 1:
            prev = point
            continue
        if start is not None:
            ranges.append((start, prev))
        start = prev = point
    ranges.append((start, prev))
    return re.compile("[" + "".join(f"\\U{a:08x}-\\U{b:08x}" for a, b in ranges) + "]")


def _code(match: re.Match) -> str:
    point = ord(match.group())
    return f"\\x{point:02x}" if point < 0x100 else f"\\u{point:04x}" if point < 0x10000 else f"\\U{point:08x}"


def printable(text: str) -> str:
    """Строка для терминала и CSV: управляющие и невидимые символы — кодами.

    Пример: ``printable("a\\x1b[2Jb\\u202ec")`` → ``'a\\\\x1b[2Jb\\\\u202ec'``.
    """
    return _hidden().sub(_code, str(text))


def shown(text: str, colours: bool = True) -> str:
    """Текст для отзыва (HTML): как ``printable``, но ``\\r`` (в HTML это пробел) и, если ``colours``, цвета ANSI
    (``ESC[…m`` — nbconvert рисует их в выводах сам) остаются.

    Пример: ``shown("\\x1b[31mошибка\\x1b[0m\\u202e")`` → ``'\\x1b[31mошибка\\x1b[0m\\\\u202e'``.
    """
    text = str(text)
    parts, last = [], 0
    for kept in (_KEEP_OUTPUT if colours else _KEEP_TEXT).finditer(text):
        parts += [printable(text[last:kept.start()]), kept.group()]
        last = kept.end()
    parts.append(printable(text[last:]))
    return "".join(parts)


def scripts(word: str) -> set[str]:
    """Письменности букв слова: {'CYRILLIC', 'LATIN'} у «hоnest» с кириллической «о»."""
    found = set()
    for char in word:
        if char.isalpha():
            name = unicodedata.name(char, "")
            found.add(name.split(" ")[0] if name else "?")
    return found


def mixed_script(text: str) -> bool:
    """В одном слове буквы разных письменностей — похоже на подделку под чужой id."""
    return any(len(scripts(word)) > 1 for word in re.split(r"[\W_]+", text) if word)

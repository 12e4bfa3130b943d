"""HTML → текст: без тегов, скриптов и стилей, блоки — с новой строки, таблицы — таблицами Markdown.

``html_text`` отдаёт заголовок страницы (``<title>``, а без него — первый ``<h1>``) и её текст.
Каждый блочный тег (абзац, пункт списка, заголовок, строка таблицы) начинает новую строку;
``<script>``, ``<style>``, ``<head>`` и похожие выбрасываются вместе с содержимым. Таблица
становится таблицей Markdown с шапкой, чтобы ``sentences`` прочёл каждую её строку вместе с
названиями столбцов. Модуль не читает файлов (это ``loaders``), не чинит сломанную разметку
сверх того, что прощает ``html.parser``, и не выполняет скриптов.
"""

from __future__ import annotations

from html.parser import HTMLParser


class _HTMLText(HTMLParser):
    """Текст HTML без тегов: скрипты, стили и <head> (кроме <title>) выбрасываются, блоки — с новой строки.

    Таблица становится таблицей Markdown: строка <tr> — «| ячейка | ячейка |», после строки из одних <th> —
    «|---|», так что ``sentences`` читает каждую строку с шапкой, как строки таблиц Markdown.
    """

    _BLOCKS = {"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section", "article", "table",
               "ul", "ol", "blockquote", "pre", "header", "footer", "main", "nav", "dd", "dt"}
    _HIDDEN = {"script", "style", "head", "template", "noscript", "svg"}
    _CELLS = {"td", "th"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = self.h1 = ""
        self._hidden = 0
        self._in = ""
        self._row: list[tuple[str, str]] | None = None  # ячейки строки таблицы: (тег, текст)
        self._cell: list[str] | None = None
        self._tables = 0  # глубина вложенности <table>

    def _end_cell(self):
        if self._row is not None and self._cell is not None:
            self._row[-1] = (self._row[-1][0], " ".join("".join(self._cell).split()).replace("|", "/"))
        self._cell = None

    def _end_row(self):
        self._end_cell()
        if self._row:
            if self.parts and not self.parts[-1].endswith("\n"):
                self.parts.append("\n")
            self.parts.append("| " + " | ".join(text for _, text in self._row) + " |\n")
            if all(tag == "th" for tag, _ in self._row):
                self.parts.append("|" + "---|" * len(self._row) + "\n")
        self._row = None

    def handle_starttag(self, tag, attrs):
        if tag in self._HIDDEN:
            self._hidden += 1
        if tag == "table":
            self._tables += 1
        if tag == "tr":
            self._end_row()
            self._row = []
        elif tag in self._CELLS and self._row is not None:
            self._end_cell()
            self._row.append((tag, ""))
            self._cell = []
        elif tag in self._BLOCKS:
            (self.parts if self._cell is None else self._cell).append("\n")  # в ячейке перенос — просто пробел
        if tag in ("title", "h1"):
            self._in = tag

    def handle_endtag(self, tag):
        if tag in self._HIDDEN:
            self._hidden = max(0, self._hidden - 1)
        if tag in self._CELLS:
            self._end_cell()
        elif tag in ("tr", "table"):
            self._end_row()
            if tag == "table" and self._tables:
                self._tables -= 1
        elif tag in self._BLOCKS and self._cell is None:
            self.parts.append("\n")
        if tag == self._in:
            self._in = ""

    def handle_data(self, data):
        if self._in == "title" and not self.title:
            self.title = " ".join(data.split())
        elif self._in == "h1" and not self.h1:
            self.h1 = " ".join(data.split())
        if self._hidden:
            return
        if self._cell is not None:
            self._cell.append(data)
        elif self._row is None and (data.strip() or not self._tables):  # пробелы между строками таблицы — не текст
            self.parts.append(data)

    def close(self):
        super().close()
        self._end_row()


def html_text(html: str) -> tuple[str, str]:
    """(заголовок, текст) страницы HTML: заголовок — ``<title>`` или первый ``<h1>``, текст — без тегов.

    Пробелы и пустые строки не подчищаются: это делает тот, кто читает файл (``loaders``).
    Пример: ``html_text("<head><title>Отпуск</title></head><p>28 дней.</p>")`` → ``('Отпуск', '\\n28 дней.\\n')``;
    ``html_text("<table><tr><th>Домик</th></tr><tr><td>Большой</td></tr></table>")[1]``
    → ``'\\n| Домик |\\n|---|\\n| Большой |\\n'``.
    Глава 12. Переписать запрос: HyDE, расширение и командная строка.
    """
    parser = _HTMLText()
    parser.feed(html)
    parser.close()
    return parser.title or parser.h1, "".join(parser.parts)

"""Чанк построчно: какие его строки — предложения, которые можно цитировать, а какие — заголовки.

Это чтение разметки, а не резка текста: ``text.split_sentences`` режет строку на предложения
по знакам конца (так режет чанкер, глава 4), а здесь решают, что из строк чанка вообще годится
в ответ. Текст чанка — не только предложения: в нём бывают заголовки, пункты списков, строки таблиц
и кода. ``candidate_sentences`` читает его по строкам: абзац (строки до пустой) склеивается
и режется на предложения (``text.whole_sentences``: сокращение вроде «доб.» или «см.» предложение
не кончает); пункт списка — отдельная единица без маркера («1.», «-»), иначе маркер стал бы
«предложением» «1.»; строка таблицы читается со своей шапкой, как строка CSV: «Домик: Большой; Цена: 5000 руб»
(шапка — строка над «|---|», сама в ответ не идёт; без шапки — ячейки через «|»); короткая строка без
знака конца предложения, за которой текст продолжается с новой строки, — заголовок, он в ответ
не идёт; строки кода (внутри ```, с приглашением ``$``/``>>>`` или из одних идентификаторов и
скобок) идут в ответ, только если вопрос о коде (``terms.about_code``). ``headings`` находит
заголовки в тексте документа с их местами — по ним индекс называет раздел чанка.
Модуль не оценивает предложения по вопросу: насколько предложение отвечает на вопрос, меряет ``terms``.
"""

from __future__ import annotations

import re

from .text import tokenize, whole_sentences

_FENCE_RE = re.compile(r"^\s*(```|~~~)")
_LIST_RE = re.compile(r"^\s*(?:[-*•–]|\d{1,3}[.)])\s+")
_TABLE_RULE_RE = re.compile(r"^[\s|:\-+]+$")
_END_RE = re.compile(r"[.!?…:;][»\"')\]*`]*$")
_PROMPT_RE = re.compile(r"^(?:\$ |>>> |\.\.\. |#!|import |from \S+ import |def |class |return |print\(|pip |"
                        r"python3? |\.venv/|cd |git |export |@\w)")
_SYMBOLS_RE = re.compile(r"[=(){}\[\];<>]|->|::")
_DATA_RE = re.compile(r'^(?:[\[\]{}]|"[^"]*"\s*:)')  # строка JSON: скобка или «"ключ":» в начале
_WORD_RE = re.compile(r"[а-яё]{3,}", re.IGNORECASE)
HEADING_MAX_CHARS = 100  # строка без точки длиннее этого — не заголовок, а кусок длинного предложения


def _is_code(line: str) -> bool:
    """Строка кода: приглашение или ключевое слово в начале, строка JSON или скобки и «=» без русских слов."""
    return (bool(_PROMPT_RE.match(line) or _DATA_RE.match(line))
            or (len(_SYMBOLS_RE.findall(line)) >= 2 and not _WORD_RE.search(line)))


def _table_row(header: list[str], cells: list[str]) -> str:
    """Строка таблицы с её шапкой, как строка CSV у ``loaders``: «столбец: значение; …»; без шапки — ячейки через «|»."""
    if not header:
        return " | ".join(cells)
    names = header + [""] * max(0, len(cells) - len(header))
    return "; ".join(f"{name}: {cell}" if name else cell for name, cell in zip(names, cells) if cell)


def _units(text: str):
    """(текст, вид) по порядку: вид — "text" (абзац или пункт), "heading", "code" или "fence" (граница блока кода).

    Чанк может начаться внутри блока кода: тогда первая голая ``` в нём закрывает блок, а не открывает.
    """
    units: list[tuple[str, str]] = []
    paragraph: list[str] = []
    in_fence = False

    def flush():
        if paragraph:
            single = len(paragraph) == 1 and not _END_RE.search(paragraph[0]) and len(paragraph[0]) <= HEADING_MAX_CHARS
            units.append((" ".join(paragraph), "heading" if single else "text"))
            paragraph.clear()

    lines = text.splitlines()
    header: list[str] = []  # шапка таблицы, строки которой сейчас идут
    for i, line in enumerate(lines):
        stripped = line.strip()
        if not stripped.startswith("|"):
            header = []
        if _FENCE_RE.match(stripped):
            if not in_fence and stripped in ("```", "~~~") and not any(kind == "fence" for _, kind in units):
                # первая голая ``` в чанке после текста — конец блока, начатого до чанка: всё выше — код
                before = [u for u in units if u[1] != "fence"] + [(part, "text") for part in paragraph]
                if before:
                    paragraph.clear()
                    units[:] = [(unit, "code") for unit, _ in before]
                    units.append(("", "fence"))
                    continue
            flush()
            units.append(("", "fence"))
            in_fence = not in_fence
        elif in_fence or (stripped and _is_code(stripped)):
            flush()
            units.append((stripped, "code"))
        elif not stripped:
            flush()
        elif stripped.startswith("|"):
            flush()
            if _TABLE_RULE_RE.match(stripped):
                continue
            cells = [cell.strip() for cell in stripped.strip("|").split("|")]
            following = lines[i + 1].strip() if i + 1 < len(lines) else ""
            if following.startswith("|") and "-" in following and _TABLE_RULE_RE.match(following):
                header = cells  # шапка таблицы: сама в ответ не идёт, её столбцы читаются с каждой строкой
                units.append((" | ".join(cells), "heading"))
            else:
                units.append((_table_row(header, cells), "text"))
            continue
        elif marker := _LIST_RE.match(stripped):
            flush()
            units.append((stripped[marker.end():], "text"))
        else:
            paragraph.append(stripped)
            following = lines[i + 1].strip() if i + 1 < len(lines) else ""
            # строка без знака конца, а следующая — с большой буквы: это заголовок над текстом
            if not _END_RE.search(stripped) and following[:1].isupper():
                flush()
    flush()
    return units


_MD_MARK_RE = re.compile(r"^#{1,6}\s+")


def _heading_line(line: str) -> bool:
    """Строка годится в заголовки: короткая, без знака конца (и без запятой), не пункт, не таблица, не код."""
    return (0 < len(line) <= HEADING_MAX_CHARS and not _END_RE.search(line) and not line.endswith(",")
            and not _LIST_RE.match(line) and not line.startswith("|") and not _is_code(line))


def headings(text: str) -> list[tuple[int, str]]:
    """Заголовки текста: (позиция начала строки, заголовок) по порядку.

    Заголовок — строка после пустой строки (или в начале текста), короткая и без знака конца
    предложения, за которой идёт пустая строка, конец текста или строка с большой буквы; решётки
    Markdown («## ») снимаются, строки внутри блоков кода ``` не смотрятся.
    Пример: ``headings("Отпуск\\n\\nОтпуск — 28 дней.\\n\\nПеренос\\n\\nЗаявление за две недели.")``
    → ``[(0, 'Отпуск'), (27, 'Перенос')]``. Глава 12. Переписать запрос: HyDE, расширение и командная строка.
    """
    found, in_fence, offset = [], False, 0
    lines = text.splitlines(keepends=True)
    for i, raw in enumerate(lines):
        line = _MD_MARK_RE.sub("", raw.strip())
        if _FENCE_RE.match(raw.strip()):
            in_fence = not in_fence
        elif not in_fence and _heading_line(line):
            before = lines[i - 1].strip() if i else ""
            after = lines[i + 1].strip() if i + 1 < len(lines) else ""
            if not before and (not after or after[:1].isupper()):
                found.append((offset, line))
        offset += len(raw)
    return found


def candidate_sentences(text: str, *, code: bool = False) -> list[str]:
    """Предложения чанка, которые можно цитировать: без заголовков и маркеров списков; код — только с ``code=True``.

    Пример: ``candidate_sentences("Итоги\\n\\n1. Отпуск — 28 дней.\\n2. Делится на части.")``
    → ``['Отпуск — 28 дней.', 'Делится на части.']``. Глава 11. Генератор и настоящие модели.
    """
    sentences = []
    for unit, kind in _units(text):
        if kind in ("heading", "fence") or (kind == "code" and not code):
            continue
        sentences += [s for s in whole_sentences(unit) if tokenize(s)] if kind == "text" else [unit]
    return sentences

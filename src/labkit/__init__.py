"""labkit — общие помощники проверок лабораторных курса «Мини-RAG руками».

Пакет окружения курса (``src/labkit``; его ставит ``pip install -r requirements.txt``): ноутбуки
лабораторных и судья в песочнице импортируют его оттуда: ``import labkit``.

* ``written_answer(grade_id)`` — текст письменного ответа из файла ноутбука, который проверяют;
* ``check_written(grade_id, title)`` — проверка «ответ написан, не короче 40 слов» (1 балл);
* ``first_difference(expected, got)`` — где два списка впервые расходятся, с соседями: для сообщений;
* ``short(value)`` — значение для сообщения, не длиннее лимита (с «…»);
* ``call_on_copies(function, *args)`` — вызвать функцию слушателя над копиями входов: ``(результат, входы после)``;
* ``mark_passed(grade_id)`` / ``passed(grade_id)`` — отметка «эта проверка пройдена целиком» для следующих проверок.

Правило для авторов проверок (его проверяет ``tests/test_lab_rules.py``): ожидаемое значение
считается только из входов, которые держит сам тест, и из эталона — никогда из результата другой
функции слушателя и не из объекта после вызова функции слушателя. Функция слушателя и так получает
копии (у судьи аргументы уходят в ядро закодированными); правило «не меняет вход» проверяется
явно через ``call_on_copies``.

Модуль ничего не делает при импорте и не импортирует minirag заранее: в лабораторной 1
библиотеки в ядре слушателя нет. Ответ ищется только в одном файле — в ноутбуке под проверкой:
переменная окружения ``AUTOGRADE_NOTEBOOK`` (её ставит проверка), иначе ноутбук, открытый в
JupyterLab (``JPY_SESSION_NAME``), если он лежит в текущей папке, иначе единственный ноутбук текущей
папки с этой ячейкой ответа (``<лабораторная>.ipynb``). Если таких ноутбуков несколько (рядом лежит
``lab01_mini_rag-Copy1.ipynb``), проверка не гадает, а просит назвать файл: соседа она не читает.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

STUB = "ТВОЙ ОТВЕТ ЗДЕСЬ"  # начало ClearSolutions.text_stub из nbgrader_config.py (его видит и autograde check)
MIN_WORDS = 40
_WORD_RE = re.compile(r"[A-Za-zА-Яа-яЁё0-9]+")


_PASSED_KEY = "_labkit_passed"  # в пространстве имён проверок: какие проверки пройдены целиком (mark_passed)


def call_on_copies(function, *args, **kwargs):
    """Вызвать функцию слушателя над копиями входов: ``(результат, [входы после вызова])``.

    Входы теста не меняются при любом поведении функции; по второму значению видно, что функция
    сделала со своими копиями (правило «не меняет вход»). У судьи вызов идёт в ядро слушателя, и
    копии — это закодированные аргументы; в самом ядре (JupyterLab, Validate) — ``copy.deepcopy``.
    Пример: ``call_on_copies(sorted, [3, 1])`` → ``([1, 3], [[3, 1]])``.
    """
    remote = getattr(function, "with_inputs", None)
    if callable(remote):  # функция слушателя у судьи (прокси канала)
        return remote(*args, **kwargs)
    import copy

    args, kwargs = copy.deepcopy(args), copy.deepcopy(kwargs)
    result = function(*args, **kwargs)
    return result, list(args) + list(kwargs.values())


def mark_passed(grade_id: str) -> None:
    """Отметить, что проверка ``grade_id`` пройдена целиком (вызывать последней строкой её ячейки).

    Отметка живёт в пространстве имён, где исполняются проверки (у судьи — его собственное, код
    слушателя туда не попадает), поэтому у каждого прогона ноутбука она своя.
    """
    import sys

    sys._getframe(1).f_globals.setdefault(_PASSED_KEY, set()).add(grade_id)


def passed(grade_id: str) -> bool:
    """Пройдена ли проверка ``grade_id`` целиком раньше в этом прогоне (см. ``mark_passed``).

    Нужна, чтобы одна ошибка стоила баллов один раз: если функция слушателя уже не прошла свою
    проверку, следующая проверка, которая от неё зависит, судит по её же результатам.
    """
    import sys

    return grade_id in sys._getframe(1).f_globals.get(_PASSED_KEY, ())


def _plural(n: int, one: str, few: str, many: str) -> str:
    from minirag import plural  # только в проверках: в ядре лабораторной 1 minirag нет

    return plural(n, one, few, many)


def notebook_under_check(grade_id: str) -> Path:
    """Путь к ноутбуку, который сейчас проверяют (см. описание модуля); ошибка, если его не узнать.

    Пример: ``notebook_under_check("why_cosine")`` → ``PosixPath('.../lab01_mini_rag.ipynb')``.
    """
    here = Path.cwd()
    named = os.environ.get("AUTOGRADE_NOTEBOOK", "").strip()
    if named:
        path = Path(named) if Path(named).is_absolute() else here / named
        if not path.is_file():
            raise AssertionError(f"Проверка назвала ноутбук {named}, но такого файла нет.")
        return path
    session = os.environ.get("JPY_SESSION_NAME", "").strip()
    if session.endswith(".ipynb"):
        path = Path(session) if Path(session).is_absolute() else here / Path(session).name
        if path.is_file() and path.resolve().parent == here.resolve():
            return path
    # ни проверка, ни JupyterLab не сказали, какой это файл: годится только единственный ноутбук
    # папки с этой ячейкой ответа — <лабораторная>.ipynb; если их несколько, гадать нельзя
    candidates = sorted(p for p in here.glob("*.ipynb") if _find_cell(p, grade_id) is not None)
    if len(candidates) == 1:
        return candidates[0]
    if candidates:
        raise AssertionError(
            f"В папке {here} несколько ноутбуков с ячейкой ответа {grade_id!r}: "
            f"{', '.join(p.name for p in candidates)}. Непонятно, какой из них проверять: оставь в папке один "
            "ноутбук лабораторной или проверь нужный командой python -m autograde check <файл>.")
    raise AssertionError(
        f"В папке {here} нет ноутбука с ячейкой ответа {grade_id!r}. Не удаляй ячейку ответа, сохрани ноутбук "
        "(Ctrl+S) и запускай проверку из папки лабораторной.")


def _find_cell(path: Path, grade_id: str) -> str | None:
    try:
        cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
    except (OSError, ValueError, AttributeError):
        return None
    for cell in cells:
        if isinstance(cell, dict) and cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == grade_id:
            source = cell.get("source", "")
            return "".join(source) if isinstance(source, list) else str(source)
    return None


def written_answer(grade_id: str) -> str:
    """Текст markdown-ячейки ответа ``grade_id`` из сохранённого файла ноутбука под проверкой.

    Пример: ``written_answer("why_cosine")`` → ``'Косинус сравнивает направления…'``.
    """
    path = notebook_under_check(grade_id)
    text = _find_cell(path, grade_id)
    if text is None:
        raise AssertionError(
            f"В ноутбуке {path.name} нет ячейки ответа {grade_id!r}. Не удаляй ячейку ответа; "
            "сохрани ноутбук (Ctrl+S) и запусти проверку снова."
        )
    return text


def check_written(grade_id: str, title: str, min_words: int = MIN_WORDS) -> None:
    """Проверить, что письменный ответ написан (не заготовка, не короче min_words слов), и напечатать итог.

    Ничего не возвращает: число в выводе ячейки с тестом nbgrader принял бы за частичный балл.
    Пример: ``check_written("why_cosine", "Почему косинус")`` печатает «Ответ «Почему косинус» на месте: 57 слов…».
    """
    text = written_answer(grade_id)
    words = len(_WORD_RE.findall(text))
    assert STUB not in text, (
        f"Ответ «{title}» ещё не написан: в ячейке ответа осталась заготовка «{STUB}». "
        "Замени её своим текстом, сохрани ноутбук (Ctrl+S) и запусти эту ячейку снова."
    )
    assert words >= min_words, (
        f"Ответ «{title}» слишком короткий: {_plural(words, 'слово', 'слова', 'слов')}, нужно хотя бы "
        f"{min_words}. Объясни своими словами и приведи пример; сохрани ноутбук (Ctrl+S) и запусти эту ячейку снова."
    )
    print(f"Ответ «{title}» на месте: {_plural(words, 'слово', 'слова', 'слов')}. Содержание оценит преподаватель.")


def short(value, limit: int = 160) -> str:
    """``repr`` значения (строку — в кавычках «»), не длиннее ``limit`` символов: хвост заменяется на «…».

    Пример: ``short("Кот спит.")`` → ``'«Кот спит.»'``.
    """
    text = f"«{value}»" if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def first_difference(expected, got, show=short, context: int = 1) -> str:
    """Где списки впервые расходятся: место (считая с 1, как rank), что ждали и что пришло, соседи до и после.

    Пример: ``first_difference([1, 2, 3], [1, 5, 3])`` →
    ``'первое расхождение — на месте 2: ждали 2, получено 5; перед ним совпало: 1; дальше ждали: 3; дальше получено: 3'``.
    """
    expected, got = list(expected), list(got)
    i = next((i for i, (a, b) in enumerate(zip(expected, got)) if a != b), min(len(expected), len(got)))
    if i == len(expected) == len(got):
        return "списки совпадают"

    def at(items, j):
        return show(items[j]) if j < len(items) else f"ничего — в списке всего {_plural(len(items), 'элемент', 'элемента', 'элементов')}"

    parts = [f"первое расхождение — на месте {i + 1}: ждали {at(expected, i)}, получено {at(got, i)}"]
    before = expected[max(0, i - context):i]
    if before:
        parts.append("перед ним совпало: " + ", ".join(show(x) for x in before))
    after_e, after_g = expected[i + 1:i + 1 + context], got[i + 1:i + 1 + context]
    if after_e or after_g:
        parts.append("дальше ждали: " + (", ".join(show(x) for x in after_e) or "ничего")
                     + "; дальше получено: " + (", ".join(show(x) for x in after_g) or "ничего"))
    if len(expected) != len(got):
        parts.append(f"всего ждали {len(expected)}, получено {len(got)}")
    return "; ".join(parts)

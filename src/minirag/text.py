"""Текст → токены и предложения.

Токен — непрерывная последовательность символов ``[a-zа-яё0-9]`` после приведения
к нижнему регистру; всё остальное (пунктуация, подчёркивание, пробелы) — разделители.
Модуль не знает ни про лемматизацию, ни про морфологию: ``stem=True`` лишь
отрезает окончания стеммером Snowball (русским или английским — по буквам слова).
Предложения здесь — только резка строки по знакам конца (``split_sentences``, ``whole_sentences``);
разметку чанка — заголовки, пункты списков, таблицы, код — и то, какие его предложения можно
цитировать в ответе, читает ``sentences``.
"""

from __future__ import annotations

import re
from functools import lru_cache

from .errors import MiniRagError
from .validate import require_text

_TOKEN_RE = re.compile(r"[a-zа-яё0-9]+")
_CYRILLIC_RE = re.compile(r"[а-яё]")
_LATIN_RE = re.compile(r"[a-z]")
# Ссылка на источник в ответе: [1] или [2, 3] (глава 6).
CITATION_RE = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")
# Конец предложения: . ! ? или …, возможно с одной закрывающей кавычкой или скобкой, затем ссылки,
# оторванные от него точкой («дней. [1]», «дней. [1].»), — всё это остаётся в предложении; дальше
# пробельный символ или конец текста.
_SENTENCE_END_RE = re.compile(rf"[.!?…][»\"')\]]?(?:\s*{CITATION_RE.pattern})*[.!?…]?(?=\s|$)")


@lru_cache(maxsize=1)
def _stemmers():
    try:
        import snowballstemmer
    except ImportError as exc:  # pragma: no cover - зависит от окружения
        raise MiniRagError(
            "Для stem=True нужен пакет snowballstemmer: pip install -r requirements.txt"
        ) from exc
    return snowballstemmer.stemmer("russian"), snowballstemmer.stemmer("english")


@lru_cache(maxsize=200_000)
def stem_token(token: str) -> str:
    """Основа слова стеммером Snowball: русским для кириллицы, английским для латиницы.

    Пример: ``stem_token("отпуска")`` → ``'отпуск'``. Глава 8. Где hash-эмбеддер ломается.
    """
    russian, english = _stemmers()
    if _CYRILLIC_RE.search(token):
        return russian.stemWord(token)
    if _LATIN_RE.search(token):
        return english.stemWord(token)
    return token


def tokenize(text: str, *, stem: bool = False) -> list[str]:
    """Разбить текст на токены в нижнем регистре.

    Пример: ``tokenize("VPN: подключение к VPN")`` → ``['vpn', 'подключение', 'к', 'vpn']``.
    Глава 1. Эмбеддинги.
    """
    tokens = _TOKEN_RE.findall(require_text(text).lower())
    if stem:
        return [stem_token(token) for token in tokens]
    return tokens


def split_sentences(text: str) -> list[str]:
    """Разбить текст на предложения по ``.``, ``!``, ``?`` и ``…`` с пробелом после.

    Ссылка в квадратных скобках сразу после конца предложения принадлежит ему, а не следующему:
    ``split_sentences("Отпуск длится 28 дней. [1] Его можно перенести.")`` →
    ``['Отпуск длится 28 дней. [1]', 'Его можно перенести.']`` (так пишут ответы со ссылками, глава 6).
    Пробелы по краям убираются, пустые куски отбрасываются, порядок сохраняется, каждое предложение —
    кусок исходного текста, ни один символ, кроме пробелов между предложениями, не теряется.
    Сокращения («см. ниже») модуль не распознаёт: после «см.» с пробелом он тоже режет.
    Пример: ``split_sentences("Одно. Два! Три?")`` → ``['Одно.', 'Два!', 'Три?']``.
    Глава 4. Чанкинг.
    """
    text = require_text(text)
    parts, start = [], 0
    for end in _SENTENCE_END_RE.finditer(text):
        parts.append(text[start:end.end()])
        start = end.end()
    parts.append(text[start:])
    return [part.strip() for part in parts if part.strip()]


_ABBREVIATION_RE = re.compile(r"(?:^|[\s(])[а-яёa-z]{1,3}\.$")  # «доб.», «см.», «тел.», «т. е.» в конце куска
_CONTINUES_RE = re.compile(r"^[(«\"]?([а-яёa-z]|\d)")  # кусок со строчной буквы или цифры
# Сокращение, за которым идёт имя с заглавной: «ул. Садовая», «пр. Металлургов», «г. Заречный» (но не «2024 г.» в
# конце предложения), «им. А. Г. Прохорова» — и инициал («А.»); следующий кусок — продолжение, с какой бы буквы он ни
# начинался.
_BEFORE_NAME_RE = re.compile(r"(?:^|[\s(])(?:ул|пр|просп|пер|пл|наб|ш|пос|им|св|обл|проф|акад|доц|корп|стр|д|"
                             r"(?<!\d\s)г|[А-ЯЁA-Z])\.$")


def whole_sentences(text: str) -> list[str]:
    """``split_sentences``, но сокращение — не конец предложения: «(доб. 412)» и «см. ниже» остаются с тем, что до них.

    Кусок, который начинается со строчной буквы, приклеивается к предыдущему; кусок с цифры — если
    предыдущий кончается коротким (до трёх букв) словом с точкой, то есть сокращением; любой кусок — если
    предыдущий кончается сокращением перед именем («ул.», «пр.», «г.», «им.») или инициалом («А.»). Так читают
    предложения ответа генератор (``sentences``) и проверка цитат (``check_citations``), и так же режет
    ``layout_chunks`` команды ``index``; ``chunk_text`` режет по ``split_sentences``, как в главе 4.
    Пример: ``whole_sentences("Звоните диспетчеру (доб. 412). См. ниже.")``
    → ``['Звоните диспетчеру (доб. 412).', 'См. ниже.']``; ``whole_sentences("Мы на ул. Садовой. Ждём.")``
    → ``['Мы на ул. Садовой.', 'Ждём.']``. Глава 11. Генератор и настоящие модели.
    """
    pieces: list[str] = []
    for piece in split_sentences(text):
        if pieces and continues_sentence(pieces[-1], piece):
            pieces[-1] = f"{pieces[-1]} {piece}"
        else:
            pieces.append(piece)
    return pieces


def continues_sentence(previous: str, piece: str) -> bool:
    """Продолжает ли кусок ``piece`` из ``split_sentences`` предложение ``previous`` (правило ``whole_sentences``).

    Пример: ``continues_sentence("Мы на ул.", "Садовой.")`` → ``True``; ``continues_sentence("Ждём.", "Вас.")``
    → ``False``. Глава 11. Генератор и настоящие модели.
    """
    starts = _CONTINUES_RE.match(piece)
    return bool(_BEFORE_NAME_RE.search(previous)
                or starts and (not starts.group(1).isdigit() or _ABBREVIATION_RE.search(previous)))

"""Разбор аргументов командной строки по-русски: парсер, его ошибки и типы аргументов.

``argparse`` пишет справку и ошибки по-английски; ``Parser`` переводит заголовки справки и те
сообщения об ошибках, что видит пользователь («не хватает аргументов: ВОПРОС»), и вместо выхода
из программы бросает ``UsageError`` — ``__main__`` печатает её одной строкой с кодом выхода 2.
``positive_int`` и ``cosine_value`` — типы аргументов (``type=``) с русскими сообщениями.
Модуль не знает команд minirag: какие у неё аргументы, решает ``__main__``.
"""

from __future__ import annotations

import argparse
import re


class UsageError(Exception):
    """Ошибка в аргументах командной строки (её текст уже по-русски)."""


# Сообщения argparse приходят по-английски: переводим те, что видит пользователь.
_ARGPARSE_RU = (
    (r"the following arguments are required: (.+)", r"не хватает аргументов: \1"),
    (r"invalid choice: (.+?) \(choose from (.+)\)", r"недопустимое значение \1, можно: \2"),
    (r"invalid \w+ value: (.+)", r"неверное значение \1"),
    (r"unrecognized arguments: (.+)", r"лишние аргументы: \1"),
    (r"expected one argument", r"после параметра нужно значение"),
    (r"ambiguous option: (.+?) could match (.+)", r"неоднозначный параметр \1: подходят \2"),
    (r"^argument ", r"аргумент "),
)


class _RussianFormatter(argparse.HelpFormatter):
    def add_usage(self, usage, actions, groups, prefix=None):
        super().add_usage(usage, actions, groups, prefix if prefix is not None else "Использование: ")


class Parser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` по-русски: заголовки справки, «-h» и ошибки разбора (``UsageError``).

    Пример: ``Parser(prog="minirag").format_usage()`` → ``'Использование: minirag [-h]\\n'``.
    Глава 12. Переписать запрос: HyDE, расширение и командная строка.
    """

    def __init__(self, *args, **kwargs):
        super().__init__(*args, formatter_class=_RussianFormatter, add_help=False, **kwargs)
        self._positionals.title = "аргументы"
        self._optionals.title = "параметры"
        self.add_argument("-h", "--help", action="help", help="показать эту справку и выйти")

    def error(self, message):
        for pattern, russian in _ARGPARSE_RU:
            message = re.sub(pattern, russian, message)
        raise UsageError(f"{message}. Справка: {self.prog} --help")


def positive_int(value: str) -> int:
    """Тип аргумента: целое число ≥ 1. Пример: ``positive_int("5")`` → ``5``; ``positive_int("0")`` → ``argparse.ArgumentTypeError``."""
    if not value.strip().isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"нужно целое число ≥ 1, а получено {value!r}")
    return int(value)


def cosine_value(value: str) -> float:
    """Тип аргумента: косинус от −1 до 1 (порог). Пример: ``cosine_value("0.2")`` → ``0.2``."""
    try:
        number = float(value)
    except ValueError:
        number = None
    if number is None or not -1.0 <= number <= 1.0:
        raise argparse.ArgumentTypeError(f"порог — косинус от -1 до 1, например 0.2, а получено {value!r}")
    return number

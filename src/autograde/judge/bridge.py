"""Сторона канала в ядре слушателя: отдать значение по имени и вызвать функцию слушателя.

Исходник этого файла (вместе с codec.py) проверка исполняет в ядре слушателя до первой его
ячейки; получается модуль ``_autograde_bridge`` с сокетом, который слушает в ``/run/autograde``.
Пока судья проверяет ячейку с тестами, ядро исполняет ``serve()``: принимает соединение
проверки и отвечает на запросы по одному — «что такое ``cosine``?» (``get``) и «вызови функцию
№3 с такими аргументами» (``call``) — кадрами (4 байта длины + JSON), пока не придёт ``end``.
Функции слушателя исполняются в главном потоке ядра: прерывание по тайм-ауту работает как обычно.

Код слушателя может этот модуль сломать или подменить — тогда его же тесты получат не те
данные или ошибку канала. Поставить себе чужие баллы так нельзя: ответы проверяет судья в
другом процессе, эталона и скрытых тестов в ядре нет. Модуль ничего не печатает сам.
"""

import json as _json
import socket as _socket
import sys as _sys

_server = None
_functions = {}  # номер → функция слушателя
_numbers = {}  # id(функции) → номер


def _register(function) -> int:
    number = _numbers.get(id(function))
    if number is None or _functions.get(number) is not function:
        number = len(_functions) + 1
        _functions[number] = function
        _numbers[id(function)] = number
    return number


def _namespace() -> dict:
    return get_ipython().user_ns  # noqa: F821 — ядро IPython даёт get_ipython встроенной функцией


def _resolve_class(module: str, qualname: str):
    return dataclass_by_name(module, qualname, _namespace().get)  # noqa: F821 — из codec.py


def _mutable(value) -> bool:
    kind = type(value).__name__
    return kind in ("list", "dict", "set", "ndarray", "bytearray")


def _reply(request: dict) -> dict:
    encode = Encoder(_register)  # noqa: F821 — Encoder и Decoder из codec.py, исполненного в том же модуле
    if request.get("op") == "get":
        namespace = _namespace()
        name = request.get("name")
        if name not in namespace:
            return {"missing": True}
        try:
            return {"value": encode(namespace[name])}
        except CodecError as exc:  # noqa: F821
            return {"refused": f"{name}: {exc}"}
    if request.get("op") == "call":
        function = _functions.get(request.get("id"))
        if function is None:
            return {"refused": "функции с таким номером нет (ядро перезапускали?)"}
        try:
            decode = Decoder(_resolve_class)  # noqa: F821
            args = decode(request.get("args"))
            kwargs = decode(request.get("kwargs"))
        except CodecError as exc:  # noqa: F821
            return {"refused": f"аргументы не передались в ядро: {exc}"}
        try:
            result = function(*args, **kwargs)
        except BaseException as exc:  # noqa: BLE001 — ошибка кода слушателя тоже ответ
            return exception_reply(exc)  # noqa: F821
        try:
            value = encode(result)
        except CodecError as exc:  # noqa: F821
            name = getattr(function, "__qualname__", "функция")
            return {"refused": f"{name} вернула значение, которое нельзя проверить: {exc}"}
        after = []
        for arg in list(args) + list(kwargs.values()):
            try:
                after.append(Encoder(None)(arg) if _mutable(arg) else None)  # noqa: F821
            except CodecError:  # noqa: F821
                after.append(None)
        return {"value": value, "after": after}
    return {"refused": "неизвестный запрос"}


def listen(path: str) -> None:
    """Открыть сокет канала (один раз, до кода слушателя)."""
    global _server
    _server = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    _server.bind(path)
    _server.listen(1)


def cap_output(limit: int) -> None:
    """Потоки stdout и stderr ядра принимают не больше ``limit`` символов на всё ядро, остальное выбрасывают.

    Проверка останавливает ноутбук, как только его вывод превысил бюджет, поэтому ``limit`` — бюджет
    плюс один символ: превышение до проверки доходит всегда, а буфер ipykernel не растёт. Без этого
    ``while True: print(...)`` на загруженной машине успевал раздуть буфер до RLIMIT_AS, и ядро
    падало (MemoryError в OutStream._flush, затем SIGABRT) раньше, чем проверка видела превышение:
    один и тот же ноутбук получал то «вывел больше …», то «ядро завершилось».
    """
    from collections import defaultdict
    from io import StringIO

    import ipykernel.iostream as iostream

    left = [limit]

    class Capped(StringIO):
        def write(self, text):
            room = left[0]
            left[0] = max(0, room - len(text))
            if room > 0:
                super().write(text[:room])
            return len(text)

    iostream.StringIO = Capped  # новые буферы (ipykernel заводит их на каждой отправке)
    for stream in (_sys.stdout, _sys.stderr):
        lock = getattr(stream, "_buffer_lock", None)
        if lock is not None:
            with lock:
                stream._buffers = defaultdict(Capped)


def _receive(conn):
    body = read_frame(conn.recv, 1 << 31)  # noqa: F821 — из codec.py; запросы шлёт доверенная проверка
    return None if body is None else _json.loads(body)


def serve() -> None:
    """Отвечать на запросы проверки, пока она не скажет ``end`` (или не закроет соединение)."""
    conn, _ = _server.accept()
    with conn:
        while True:
            request = _receive(conn)
            if request is None or request.get("op") == "end":
                return
            try:
                reply = _reply(request)
            except BaseException as exc:  # noqa: BLE001 — канал не должен ронять ядро
                reply = {"refused": f"сбой канала в ядре: {type(exc).__name__}: {exc}"}
            conn.sendall(frame(reply))  # noqa: F821 — из codec.py

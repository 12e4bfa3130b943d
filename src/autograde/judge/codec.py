"""Узкий канал между ядром слушателя и судьёй: только простые данные, закодированные в JSON.

Один и тот же модуль работает по обе стороны: в ядре слушателя (кодирует результаты его
функций, раскодирует аргументы) и в процессе судьи (кодирует аргументы тестов, раскодирует
результаты). Каждое значение — JSON-объект с одним ключом-тегом, кроме None, bool, str и
конечных чисел; раскодирование строгое: неизвестный тег, лишний ключ, слишком глубокая
вложенность или слишком много узлов — ``CodecError``.

Что проходит: None, bool, int, float (и nan/inf), complex, str, bytes, list, tuple, dict, set,
frozenset, numpy-массивы числовых и логических типов, numpy-скаляры (тип сохраняется),
экземпляры dataclass из разрешённых классов (их пересобирает принимающая сторона своим
классом) и функции (как ссылки: их вызывают через канал). Подкласс встроенного типа
(``class Example(dict)``, ``class Score(float)``) передаётся как сам встроенный тип: содержимое
читается методами базового типа, поэтому свои ``__eq__``, ``__getitem__`` и т. п. до судьи не
доходят. Всё остальное — объекты со своими классами, генераторы, модули — отказ с понятной причиной.

Модуль не импортирует ничего, кроме стандартной библиотеки и numpy (если он есть): он
живёт внутри песочницы, где нет пакета autograde.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import math
import re

try:
    import numpy as np
except ImportError:  # pragma: no cover — в курсе numpy есть всегда
    np = None

MAX_DEPTH = 64
MAX_NODES = 100_000
# Кадр канала в JSON: уровень значения — до трёх уровней JSON (тег, список, пара словаря), значение — до трёх
# значений JSON; так любой ответ, который честно собрал Encoder, проходит, а разбор кадра стоит десятки МБ, не сотни
FRAME_DEPTH = 3 * MAX_DEPTH + 8
FRAME_NODES = 3 * MAX_NODES
NUMERIC_KINDS = "biufc"  # bool, int, uint, float, complex


class CodecError(ValueError):
    """Значение нельзя передать через канал: сообщение — причина по-русски."""


class LimitError(ValueError):
    """Чужой JSON больше лимита (размер, вложенность, число значений) — его не разбирали.

    ``kind`` — что превышено (``bytes``, ``depth``, ``nodes``), ``limit`` — предел; сообщение — по-русски.
    """

    def __init__(self, kind: str, limit: int, message: str):
        super().__init__(message)
        self.kind, self.limit = kind, limit


# ---------- кадры: одни на всех сторонах канала (проверка, судья, ядро) ----------
HEADER = 4  # длина тела кадра: 4 байта, big-endian; тело — JSON в UTF-8


def frame(message) -> bytes:
    """Кадр сообщения: 4 байта длины и JSON в UTF-8."""
    data = json.dumps(message, ensure_ascii=False).encode("utf-8")
    return len(data).to_bytes(HEADER, "big") + data


def frame_size(head: bytes) -> int:
    """Длина тела кадра по его первым ``HEADER`` байтам."""
    return int.from_bytes(head[:HEADER], "big")


def read_frame(read, limit: int) -> bytes | None:
    """Тело одного кадра из потока: ``read(n)`` отдаёт до n байт (``b""`` — поток закрыт). None — поток закрылся
    раньше, чем пришёл кадр целиком; тело длиннее ``limit`` байт — ``LimitError``, и его не читают."""
    head = _read_exact(read, HEADER)
    if head is None:
        return None
    size = frame_size(head)
    if size > limit:
        raise LimitError("bytes", limit, f"кадр больше {limit // 2**20} МБ ({size // 2**20} МБ)")
    return _read_exact(read, size)


def _read_exact(read, size: int) -> bytes | None:
    chunks = []
    while size:
        chunk = read(min(size, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


# строка JSON целиком (с экранированием) или одна структурная литера (группа 1); строки пропускаются движком re
# и не копируются: у строки группа 1 пуста
_TOKENS = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|([\[\]{},])')


def _plural(n: int, one: str, few: str, many: str) -> str:
    n = abs(n) % 100
    if 10 < n < 20:
        return many
    return one if n % 10 == 1 else few if 2 <= n % 10 <= 4 else many


def scan(data: bytes, max_bytes: int, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> None:
    """Проверить сырой JSON до разбора, без рекурсии: не длиннее ``max_bytes``, не глубже ``max_depth``,
    не больше ``max_nodes`` значений (элементов списков и словарей). Иначе — ``LimitError``.

    Разбор (``json.loads``) рекурсивен и строит каждое значение в памяти: список из 200 000 «[»
    роняет его с RecursionError, миллион пустых списков стоит сотни мегабайт. Поэтому сначала —
    этот счёт по байтам: строки пропускаются целиком, скобки и запятые считаются; работа
    останавливается на первой литере сверх лимита, так что и сам счёт ограничен.
    """
    if len(data) > max_bytes:
        raise LimitError("bytes", max_bytes, f"больше {max_bytes // 1024} КБ ({len(data) // 1024} КБ)")
    depth = nodes = tokens = 0
    for match in _TOKENS.finditer(data):
        token = match.group(1)
        tokens += 1
        if token in (b"[", b"{"):
            depth += 1
            nodes += 1
            if depth > max_depth:
                raise LimitError("depth", max_depth, f"вложен глубже {max_depth} "
                                                     f"{_plural(max_depth, 'уровня', 'уровней', 'уровней')}")
        elif token in (b"]", b"}"):
            depth -= 1
            if depth < 0:
                return  # лишняя закрывающая скобка: это не JSON, скажет json.loads
        elif token == b",":
            nodes += 1
        if nodes > max_nodes or tokens > 4 * max_nodes + 16:  # строк в JSON не больше двух на значение
            raise LimitError("nodes", max_nodes, f"больше {max_nodes:,} ".replace(",", " ")
                             + _plural(max_nodes, "значения", "значений", "значений"))


def loads(data: bytes, max_bytes: int, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES):
    """``json.loads`` после ``scan``: чужой JSON разбирается, только если он в пределах лимитов.

    Только UTF-8: ``json.loads`` от байтов сам угадывает UTF-16 и UTF-32, а ``scan`` считает скобки
    по байтам UTF-8 — кадр в UTF-16 прошёл бы счёт мимо. Поэтому байты сначала строго
    декодируются (иначе ``UnicodeDecodeError``, это ``ValueError``), а разбирается уже текст."""
    scan(data, max_bytes, max_depth, max_nodes)
    return json.loads(bytes(data).decode("utf-8"))


def _type_name(value) -> str:
    kind = type(value)
    return kind.__qualname__ if kind.__module__ in ("builtins", "__main__") else f"{kind.__module__}.{kind.__qualname__}"


class Encoder:
    """Кодирует значение в JSON-совместимое дерево.

    ``register_function(f) -> id`` решает, что делать с функциями: в ядре — запомнить и выдать
    номер, у судьи — отказать (функции судьи в ядро не передаются).
    """

    def __init__(self, register_function=None):
        self.register_function = register_function
        self.nodes = 0

    def __call__(self, value, depth: int = 0):
        self.nodes += 1
        if depth > MAX_DEPTH:
            raise CodecError(f"вложенность глубже {MAX_DEPTH} уровней (или список содержит сам себя)")
        if self.nodes > MAX_NODES:
            raise CodecError(f"больше {MAX_NODES} значений в одном ответе")
        value = _builtin(value)
        kind = type(value)
        if value is None or kind is bool or kind is str:
            return value
        if kind is int:
            if abs(value) < 2**53:
                return value
            try:
                return {"int": str(value)}
            except ValueError:  # больше 4300 цифр: str() отказывается (защита Python от долгих переводов)
                raise CodecError("целое число длиннее 4300 цифр не передаётся") from None
        if kind is float:
            return value if math.isfinite(value) else {"float": repr(value)}
        if kind is complex:
            return {"complex": [self(value.real, depth + 1), self(value.imag, depth + 1)]}
        if kind is bytes:
            return {"bytes": base64.b64encode(value).decode("ascii")}
        if kind in (list, tuple, set, frozenset):
            items = value if kind in (list, tuple) else _sorted(value)
            return {kind.__name__: [self(v, depth + 1) for v in items]}
        if kind is dict:
            return {"dict": [[self(k, depth + 1), self(v, depth + 1)] for k, v in value.items()]}
        if np is not None and kind is np.ndarray:
            if value.dtype.kind not in NUMERIC_KINDS:
                raise CodecError(f"numpy-массив с типом {value.dtype} (нужны числа или bool)")
            # tobytes() — байты в порядке C при любом расположении; форма — как есть (и у 0-мерного массива)
            return {"ndarray": [value.dtype.str, list(value.shape), base64.b64encode(value.tobytes()).decode("ascii")]}
        if np is not None and isinstance(value, np.generic) and kind.__module__ == "numpy":
            if value.dtype.kind not in NUMERIC_KINDS:
                raise CodecError(f"numpy-скаляр типа {value.dtype}")
            return {"npscalar": [value.dtype.str, base64.b64encode(value.tobytes()).decode("ascii")]}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            fields = {f.name: self(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)}
            return {"dataclass": [kind.__module__, kind.__qualname__, fields]}
        if callable(value) and not isinstance(value, type):
            if self.register_function is None:
                raise CodecError("функцию нельзя передать в эту сторону")
            return {"function": [self.register_function(value), getattr(value, "__qualname__", "функция")]}
        raise CodecError(f"значение типа {_type_name(value)} не передаётся: нужны простые данные "
                         "(числа, строки, списки, словари, numpy-массивы) или dataclass из задания")


_BASES = {  # встроенный тип → как прочитать подкласс его собственными методами (без переопределений)
    dict: lambda v: dict(dict.items(v)), list: lambda v: list(list.__iter__(v)),
    tuple: lambda v: tuple(tuple.__iter__(v)), set: lambda v: set(set.__iter__(v)),
    frozenset: lambda v: frozenset(frozenset.__iter__(v)), str: str.__str__, bytes: lambda v: bytes(memoryview(v)),
    float: float.__float__, int: int.__index__,
}


def _builtin(value):
    """Подкласс встроенного типа → значение самого встроенного типа; остальное — как есть."""
    kind = type(value)
    if kind in _BASES or kind is bool or kind.__module__ == "numpy" or dataclasses.is_dataclass(kind):
        return value
    for base, read in _BASES.items():
        if isinstance(value, base):
            return read(value)
    return value


def _sorted(items) -> list:
    """Элементы множества в устойчивом порядке: одинаковый вход — одинаковый JSON."""
    try:
        return sorted(items)
    except TypeError:
        return sorted(items, key=repr)


class Decoder:
    """Раскодирует дерево из JSON строго.

    ``resolve_class(module, qualname) -> класс | None`` — какие dataclass разрешены;
    ``make_function(id, name)`` — во что превращается функция (у судьи — в прокси; в ядре — отказ).
    """

    def __init__(self, resolve_class, make_function=None):
        self.resolve_class = resolve_class
        self.make_function = make_function
        self.nodes = 0

    def __call__(self, data, depth: int = 0):
        if depth:
            return self._decode(data, depth)
        try:  # битое тело внутри верного тега (int "abc", не base64, чужой dtype) — тоже отказ канала
            return self._decode(data, 0)
        except (ValueError, TypeError, OverflowError) as exc:
            raise CodecError(f"повреждённое значение в канале ({type(exc).__name__}: {str(exc)[:200]})") from None

    def _decode(self, data, depth: int):
        self.nodes += 1
        if depth > MAX_DEPTH or self.nodes > MAX_NODES:
            raise CodecError("слишком глубокое или слишком большое значение")
        if data is None or type(data) in (bool, str):
            return data
        if type(data) is int:
            return data
        if type(data) is float:
            return data
        if type(data) is not dict or len(data) != 1:
            raise CodecError("повреждённое значение в канале")
        (tag, body), = data.items()
        if tag in ("list", "tuple", "set", "frozenset") and type(body) is list:
            items = [self(v, depth + 1) for v in body]
            try:
                return {"list": list, "tuple": tuple, "set": set, "frozenset": frozenset}[tag](items)
            except TypeError:
                raise CodecError("во множестве нехешируемый элемент") from None
        if tag == "dict" and type(body) is list:
            out = {}
            for pair in body:
                if type(pair) is not list or len(pair) != 2:
                    raise CodecError("повреждённый словарь в канале")
                key = self(pair[0], depth + 1)
                try:
                    out[key] = self(pair[1], depth + 1)
                except TypeError:
                    raise CodecError(f"ключ словаря типа {type(key).__name__} не хешируется") from None
            return out
        if tag == "int" and type(body) is str and len(body) < 5000:
            return int(body)
        if tag == "float" and body in ("nan", "inf", "-inf"):
            return float(body)
        if tag == "complex" and type(body) is list and len(body) == 2:
            return complex(float(self(body[0], depth + 1)), float(self(body[1], depth + 1)))
        if tag == "bytes" and type(body) is str:
            return base64.b64decode(body, validate=True)
        if tag == "ndarray" and type(body) is list and len(body) == 3:
            return _array(*body)
        if tag == "npscalar" and type(body) is list and len(body) == 2:
            return _array(body[0], [], body[1])[()]
        if tag == "dataclass" and type(body) is list and len(body) == 3:
            return self._dataclass(*body, depth=depth)
        if tag == "function" and type(body) is list and len(body) == 2 and type(body[0]) is int:
            if self.make_function is None:
                raise CodecError("функцию нельзя передать в эту сторону")
            return self.make_function(body[0], str(body[1])[:200])
        raise CodecError(f"неизвестное значение в канале: {tag!r:.40}")

    def _dataclass(self, module, qualname, fields, depth: int):
        if type(module) is not str or type(qualname) is not str or type(fields) is not dict:
            raise CodecError("повреждённый dataclass в канале")
        cls = self.resolve_class(module, qualname)
        if cls is None:
            raise CodecError(f"dataclass {qualname} не из задания: верни объекты классов, которые дало задание "
                             "(или простые данные)")
        every = [f.name for f in dataclasses.fields(cls)]
        if sorted(fields) != sorted(every):
            raise CodecError(f"у {qualname} поля {sorted(fields)}, а в задании {sorted(every)}")
        values = {name: self(fields[name], depth + 1) for name in every}
        init = {f.name for f in dataclasses.fields(cls) if f.init}
        obj = cls(**{name: value for name, value in values.items() if name in init})
        for name in every:  # поля field(init=False): как были у отправителя, а не как их заново посчитал класс
            if name not in init:
                object.__setattr__(obj, name, values[name])
        return obj


def _array(dtype, shape, data):
    if np is None:
        raise CodecError("numpy недоступен")
    if type(dtype) is not str or type(shape) is not list or type(data) is not str:
        raise CodecError("повреждённый numpy-массив в канале")
    kind = np.dtype(dtype)
    if kind.kind not in NUMERIC_KINDS or kind.hasobject:
        raise CodecError(f"numpy-массив с типом {dtype}")
    if any(type(n) is not int or n < 0 for n in shape) or len(shape) > 32:
        raise CodecError("повреждённая форма numpy-массива")
    raw = base64.b64decode(data, validate=True)
    count = math.prod(shape)
    if count * kind.itemsize != len(raw):
        raise CodecError("размер numpy-массива не сходится с формой")
    return np.frombuffer(raw, dtype=kind).reshape(shape).copy()


def dataclass_by_name(module: str, qualname: str, local) -> type | None:
    """Разрешённый класс dataclass по имени: из задания (``__main__``, ``local(имя)``) или из minirag, иначе None."""
    cls = None
    if module == "__main__":
        cls = local(qualname)
    elif module.split(".")[0] == "minirag":
        try:
            import minirag

            cls = getattr(minirag, qualname, None)
        except ImportError:
            cls = None
    return cls if isinstance(cls, type) and dataclasses.is_dataclass(cls) else None


def exception_reply(exc: BaseException) -> dict:
    """Исключение из кода слушателя — как данные: тип, его предки, сообщение и где оно случилось."""
    mro = [c.__name__ for c in type(exc).__mro__ if c is not object]
    reply = {"type": type(exc).__name__, "mro": mro[:20], "message": str(exc)[:4000]}
    where = _where(exc)
    if where:
        reply["where"] = where
    return {"raise": reply}


def _where(exc: BaseException) -> str:
    """«функция top_k, строка 3 её ячейки: return scores.lines()» — последний кадр кода из ячеек ноутбука.

    Ячейки ipykernel компилирует как файлы ``…/ipykernel_<pid>/<hash>.py`` (в старых версиях —
    ``<ipython-input-…>``), номер строки — внутри ячейки. Кадры библиотек (numpy) и самого канала
    пропускаются: слушателю нужна строка его кода.
    """
    import linecache

    found = None
    tb = exc.__traceback__
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if "ipykernel_" in name or name.startswith("<ipython-input"):
            found = tb
        tb = tb.tb_next
    if found is None:
        return ""
    code = found.tb_frame.f_code
    line = linecache.getline(code.co_filename, found.tb_lineno).strip()
    where = f"строка {found.tb_lineno} её ячейки" if code.co_name == "<module>" else \
        f"функция {code.co_name}, строка {found.tb_lineno} её ячейки"
    return (f"{where}: {line}" if line else where)[:300]

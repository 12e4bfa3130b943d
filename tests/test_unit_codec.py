"""Канал между ядром слушателя и судьёй (``autograde/judge/codec.py``) — напрямую, без песочницы и ядер.

Что передаётся туда и обратно без потерь (тип, форма, порядок байт), что отказывается с
понятной причиной по-русски (``CodecError``) и что чужой JSON не разбирается вовсе сверх
пределов (``LimitError`` с видом превышения). Пределы огромных ответов (глубина 200 000, миллион
списков, размер кадра) уже проверяет tests/test_limits.py — здесь границы, виды и сообщения.
"""

from __future__ import annotations

import dataclasses
import json
import math
import socket
import struct
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from autograde.judge import codec
from autograde.judge.codec import (
    FRAME_DEPTH,
    FRAME_NODES,
    MAX_DEPTH,
    MAX_NODES,
    CodecError,
    Decoder,
    Encoder,
    LimitError,
    dataclass_by_name,
    exception_reply,
    loads,
    scan,
)

PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def no_classes(module, qualname):
    return None


def through_frame(value, resolve_class=no_classes, register=None, make_function=None):
    """Путь значения по каналу целиком: Encoder → JSON-кадр (UTF-8) → loads с пределами кадра → Decoder."""
    frame = json.dumps({"value": Encoder(register)(value)}, ensure_ascii=False, allow_nan=False).encode("utf-8")
    tree = loads(frame, 64 * 2**20, FRAME_DEPTH, FRAME_NODES)["value"]
    return Decoder(resolve_class, make_function)(tree)


def same(a, b) -> bool:
    """Строгое равенство: тот же тип на каждом уровне, nan равен nan, -0.0 не равен 0.0, массивы — байт в байт."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, complex):
        return same(a.real, b.real) and same(a.imag, b.imag)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return len(a) == len(b) and all(same(ka, kb) and same(va, vb) for (ka, va), (kb, vb) in zip(a.items(), b.items()))
    if isinstance(a, np.ndarray):
        return a.dtype.str == b.dtype.str and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, np.generic):
        return a.dtype.str == b.dtype.str and a.tobytes() == b.tobytes()
    return a == b


# ---------- туда и обратно: каждое значение, которое канал обещает передать ----------
hashable = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20) | st.binary(max_size=20),
    lambda inner: st.tuples(inner, inner), max_leaves=6)
scalars = (st.none() | st.booleans() | st.integers() | st.integers(min_value=-(10**300), max_value=10**300)
           | st.floats() | st.complex_numbers() | st.text() | st.binary())
values = st.recursive(
    scalars,
    lambda inner: (st.lists(inner, max_size=5) | st.lists(inner, max_size=5).map(tuple)
                   | st.dictionaries(hashable, inner, max_size=5)
                   | st.sets(hashable, max_size=5) | st.frozensets(hashable, max_size=5)),
    max_leaves=30)


@PROPERTY
@given(values)
def test_plain_data_comes_back_with_the_same_types_and_values(value):
    """Тест судьи сравнивает то, что вернула функция слушателя: кортеж остаётся кортежем, 1 — не 1.0 и не True."""
    assert same(through_frame(value), value)


@PROPERTY
@given(values)
def test_equal_input_gives_the_same_bytes_in_the_frame(value):
    """Множества упорядочены: одинаковый ответ — одинаковый кадр (ключ кэша и повторная проверка не зависят от хеша)."""
    first = json.dumps(Encoder()(value))
    assert json.dumps(Encoder()(through_frame(value))) == first


numeric_dtypes = st.one_of(hnp.boolean_dtypes(), hnp.integer_dtypes(endianness="?"),
                           hnp.unsigned_integer_dtypes(endianness="?"), hnp.floating_dtypes(endianness="?"),
                           hnp.complex_number_dtypes(endianness="?"))


@PROPERTY  # ndim 0 тоже: np.array(3.0) — массив формы (), а не (1,)
@given(hnp.arrays(numeric_dtypes, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)))
def test_numeric_numpy_arrays_keep_dtype_byte_order_shape_and_every_bit(array):
    decoded = through_frame(array)
    assert same(decoded, array)
    assert decoded.flags.writeable and decoded.flags.c_contiguous  # своя копия у судьи, не вид на буфер кадра


def test_a_non_contiguous_array_arrives_as_its_values():
    """Срез с шагом и транспонированная матрица (так их часто возвращают) — те же значения, что видел слушатель."""
    matrix = np.arange(12, dtype=np.float32).reshape(3, 4)
    for view in (matrix.T, matrix[:, ::2], np.asfortranarray(matrix)):
        decoded = through_frame(view)
        assert decoded.dtype == np.float32 and decoded.shape == view.shape and np.array_equal(decoded, view)


@pytest.mark.parametrize("scalar", [np.float64(0.1), np.float32(-0.0), np.float16(np.inf), np.int8(-128),
                                    np.uint64(2**64 - 1), np.bool_(True), np.complex64(1 - 2j),
                                    np.dtype(">i4").type(7)])
def test_numpy_scalars_keep_their_type(scalar):
    """np.float32 остаётся np.float32: тест, который проверяет тип результата, видит то, что вернул слушатель."""
    decoded = through_frame(scalar)
    assert type(decoded) is type(scalar) and same(decoded, scalar)


@pytest.mark.parametrize("value, wire", [
    (2**53 - 1, 2**53 - 1), (2**53, {"int": str(2**53)}), (-(2**53), {"int": str(-(2**53))}),
    (float("nan"), {"float": "nan"}), (float("inf"), {"float": "inf"}), (float("-inf"), {"float": "-inf"}),
    (1.5, 1.5), (b"\x00\xff", {"bytes": "AP8="}), ("строка", "строка"), (None, None), (True, True),
])
def test_the_wire_form_is_strict_json_that_any_parser_reads_exactly(value, wire):
    """Целые вне 2**53 и не-конечные числа идут тегами: кадр — обычный JSON без NaN, и JavaScript/double не теряют цифр."""
    encoded = Encoder()(value)
    assert encoded == wire
    json.dumps(encoded, allow_nan=False)  # строгий JSON: без NaN и Infinity


def test_integers_up_to_the_interpreters_digit_limit_round_trip():
    limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 4300
    for value in (10**(limit - 1), -(10**(limit - 1)), 2**64, -(2**64) - 1):
        assert same(through_frame(value), value)
    with pytest.raises(CodecError, match="длиннее 4300 цифр"):  # не ValueError из str(): это отказ канала
        Encoder()(10**5000)


@dataclasses.dataclass(frozen=True)
class Chunk:
    text: str
    start: int
    tags: tuple = ()


@dataclasses.dataclass
class Hit:
    chunk: Chunk
    score: float


def test_dataclasses_of_the_task_are_rebuilt_by_the_receivers_own_class():
    value = [Hit(Chunk("Отпуск 28 дней.", 0, ("hr",)), 0.75), Hit(Chunk("x", 5), float("nan"))]
    encoded = Encoder()(value)
    assert encoded["list"][0]["dataclass"][:2] == [Chunk.__module__, "Hit"]
    decoded = Decoder(lambda m, q: {"Hit": Hit, "Chunk": Chunk}[q])(encoded)
    assert type(decoded[0]) is Hit and type(decoded[0].chunk) is Chunk and decoded[0].chunk.tags == ("hr",)
    assert same(decoded[0].score, 0.75) and math.isnan(decoded[1].score)


@dataclasses.dataclass
class Scored:
    text: str
    words: int = dataclasses.field(init=False)

    def __post_init__(self):
        self.words = len(self.text.split())


def test_a_dataclass_field_outside_init_arrives_as_the_sender_had_it():
    """field(init=False) не мешает передаче: значение — отправителя (слушатель мог его поменять), не пересчитанное."""
    sent = Scored("два слова")
    sent.words = 7
    decoded = Decoder(lambda m, q: Scored)(Encoder()(sent))
    assert type(decoded) is Scored and (decoded.text, decoded.words) == ("два слова", 7)


def test_dataclass_by_name_allows_only_task_and_minirag_dataclasses():
    local = {"Chunk": Chunk, "NotData": dict, "helper": len}.get
    assert dataclass_by_name("__main__", "Chunk", local) is Chunk
    assert dataclass_by_name("__main__", "NotData", local) is None  # класс, но не dataclass
    assert dataclass_by_name("__main__", "helper", local) is None
    assert dataclass_by_name("os", "PathLike", local) is None  # чужие модули не импортируются
    assert dataclass_by_name("subprocess", "CompletedProcess", local) is None
    import minirag

    name = next(n for n in dir(minirag) if dataclasses.is_dataclass(getattr(minirag, n)))
    assert dataclass_by_name("minirag.types", name, local) is getattr(minirag, name)


def test_a_dataclass_not_from_the_task_or_with_other_fields_is_refused_by_name():
    encoded = Encoder()(Chunk("a", 1))
    with pytest.raises(CodecError, match="dataclass Chunk не из задания"):
        Decoder(no_classes)(encoded)

    @dataclasses.dataclass
    class Other:
        text: str

    with pytest.raises(CodecError, match=r"у Chunk поля \['start', 'tags', 'text'\], а в задании \['text'\]"):
        Decoder(lambda m, q: Other)(encoded)


def test_functions_travel_as_numbered_references_only_from_the_kernel():
    """Функция слушателя — номер; судья получает прокси, а не код. В ядро функции судьи не уходят."""
    registered = []

    def top_k(x):
        return x

    def register(function):
        registered.append(function)
        return len(registered)

    encoded = Encoder(register)({"f": top_k})
    number, name = encoded["dict"][0][1]["function"]
    assert number == 1 and name.endswith("<locals>.top_k") and registered == [top_k]
    proxy = Decoder(no_classes, lambda number, name: ("proxy", number, name))(encoded)["f"]
    assert proxy[:2] == ("proxy", 1)
    with pytest.raises(CodecError, match="функцию нельзя передать в эту сторону"):
        Encoder(None)(top_k)
    with pytest.raises(CodecError, match="функцию нельзя передать в эту сторону"):
        Decoder(no_classes)(encoded)
    long_name = Decoder(no_classes, lambda number, name: name)({"function": [1, "x" * 10_000]})
    assert len(long_name) == 200  # имя из ядра — чужая строка: обрезано


# ---------- подмена поведения не переходит канал ----------
def test_builtin_subclasses_arrive_as_plain_builtins_without_their_methods():
    """``class Always(float): __eq__ → True`` не обманет сравнение у судьи: туда приходит обычный float."""

    class Always(float):
        def __eq__(self, other):
            return True

        __hash__ = float.__hash__

    class Fake(dict):
        def items(self):
            return [("answer", 42)]

        def __getitem__(self, key):
            return 42

    class Loud(str):
        def __str__(self):
            return "подмена"

    class Shifty(list):
        def __iter__(self):
            return iter([1, 2, 3])

    decoded = through_frame([Always(0.5), Fake(real=1), Loud("текст"), Shifty([9])])
    assert same(decoded, [0.5, {"real": 1}, "текст", [9]])
    assert type(decoded[0]) is float and decoded[0] != 0.7


@pytest.mark.parametrize("value, reason", [
    (object(), "значение типа object не передаётся"),
    ((i for i in range(3)), "значение типа generator не передаётся"),
    (sys, "значение типа module не передаётся"),
    (Chunk, "значение типа type не передаётся"),
    (np.array(["a", "b"]), "numpy-массив с типом <U1 (нужны числа или bool)"),
    (np.array([{}], dtype=object), "numpy-массив с типом object"),
    (np.datetime64("2024-01-01"), "numpy-скаляр типа datetime64[D]"),
    (np.ma.masked_array([1, 2]), "значение типа numpy.ma.MaskedArray не передаётся"),
])
def test_values_that_cannot_be_checked_are_refused_with_the_reason(value, reason):
    with pytest.raises(CodecError) as info:
        Encoder()(value)
    assert reason in str(info.value)


# ---------- пределы кодирования: отказ, а не RecursionError или MemoryError ----------
def nested(levels: int, leaf=1):
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


def test_encoder_depth_limit_is_exactly_max_depth_and_a_self_containing_list_is_refused():
    assert Encoder()(nested(MAX_DEPTH)) is not None
    with pytest.raises(CodecError, match=f"вложенность глубже {MAX_DEPTH} уровней"):
        Encoder()(nested(MAX_DEPTH + 1))
    loop: list = []
    loop.append(loop)
    mapping: dict = {}
    mapping["self"] = mapping
    for value in (loop, mapping):
        with pytest.raises(CodecError, match="или список содержит сам себя"):
            Encoder()(value)


def test_encoder_refuses_more_than_max_nodes_values_in_one_reply():
    Encoder()(list(range(MAX_NODES - 1)))  # список и его элементы: ровно MAX_NODES значений
    with pytest.raises(CodecError, match=f"больше {MAX_NODES} значений в одном ответе"):
        Encoder()(list(range(MAX_NODES)))


def test_decoder_refuses_a_tree_deeper_than_max_depth_that_fits_the_frame_limits():
    """Кадр в пределах scan (тег — два уровня JSON), но глубже MAX_DEPTH значений — всё равно отказ."""
    tree = 1
    for _ in range(MAX_DEPTH + 1):
        tree = {"list": [tree]}
    frame = json.dumps(tree).encode()
    parsed = loads(frame, 2**20, FRAME_DEPTH, FRAME_NODES)  # кадр проходит
    with pytest.raises(CodecError, match="слишком глубокое или слишком большое значение"):
        Decoder(no_classes)(parsed)
    with pytest.raises(CodecError, match="слишком глубокое или слишком большое значение"):
        Decoder(no_classes)({"list": list(range(MAX_NODES))})


# ---------- враждебные кадры: строгий разбор ----------
@pytest.mark.parametrize("tree, reason", [
    ({"list": [], "tuple": []}, "повреждённое значение в канале"),
    ({}, "повреждённое значение в канале"),
    ([1, 2], "повреждённое значение в канале"),
    ({"eval": "__import__('os')"}, "неизвестное значение в канале: 'eval'"),
    ({"x" * 100: 1}, "неизвестное значение в канале: 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"),
    ({"list": "abc"}, "неизвестное значение в канале: 'list'"),
    ({"dict": {"a": 1}}, "неизвестное значение в канале: 'dict'"),
    ({"dict": [[1]]}, "повреждённый словарь в канале"),
    ({"dict": [[1, 2, 3]]}, "повреждённый словарь в канале"),
    ({"dict": [[{"list": []}, 1]]}, "ключ словаря типа list не хешируется"),
    ({"set": [{"list": [1]}]}, "во множестве нехешируемый элемент"),
    ({"float": "1.5"}, "неизвестное значение в канале: 'float'"),
    ({"float": "NaN"}, "неизвестное значение в канале: 'float'"),
    ({"float": ["nan"]}, "неизвестное значение в канале: 'float'"),
    ({"int": 5}, "неизвестное значение в канале: 'int'"),
    ({"int": "9" * 5000}, "неизвестное значение в канале: 'int'"),
    ({"bytes": 123}, "неизвестное значение в канале: 'bytes'"),
    ({"complex": [1]}, "неизвестное значение в канале: 'complex'"),
    ({"ndarray": ["<f8", [1]]}, "неизвестное значение в канале: 'ndarray'"),
    ({"ndarray": [8, [1], "AAAAAAAAAAA="]}, "повреждённый numpy-массив в канале"),
    ({"ndarray": ["|O", [1], "AAAAAAAAAAA="]}, "numpy-массив с типом |O"),
    ({"ndarray": ["<U1", [1], "AAAAAA=="]}, "numpy-массив с типом <U1"),
    ({"ndarray": ["<M8[s]", [1], "AAAAAAAAAAA="]}, "numpy-массив с типом <M8[s]"),
    ({"ndarray": ["|V8", [1], "AAAAAAAAAAA="]}, "numpy-массив с типом |V8"),
    ({"ndarray": ["<f8", [-1], ""]}, "повреждённая форма numpy-массива"),
    ({"ndarray": ["<f8", [True], "AAAAAAAAAAA="]}, "повреждённая форма numpy-массива"),
    ({"ndarray": ["<f8", [1.0], "AAAAAAAAAAA="]}, "повреждённая форма numpy-массива"),
    ({"ndarray": ["<f8", [1] * 33, "AAAAAAAAAAA="]}, "повреждённая форма numpy-массива"),
    ({"ndarray": ["<f8", [2**40, 2**40], ""]}, "размер numpy-массива не сходится с формой"),
    ({"ndarray": ["<f8", [2], "AAAAAAAAAAA="]}, "размер numpy-массива не сходится с формой"),
    ({"npscalar": ["<f8", "AA=="]}, "размер numpy-массива не сходится с формой"),
    ({"dataclass": [1, "X", {}]}, "повреждённый dataclass в канале"),
    ({"dataclass": ["__main__", "X", []]}, "повреждённый dataclass в канале"),
    ({"function": ["1", "f"]}, "неизвестное значение в канале: 'function'"),
    ({"function": [True, "f"]}, "неизвестное значение в канале: 'function'"),
    ({"int": "abc"}, "повреждённое значение в канале (ValueError"),
    ({"list": [{"int": "12x"}]}, "повреждённое значение в канале (ValueError"),
    ({"bytes": "не base64"}, "повреждённое значение в канале"),
    ({"ndarray": ["<f8", [1], "!!!"]}, "повреждённое значение в канале"),
    ({"ndarray": ["нет такого типа", [1], "AAAAAAAAAAA="]}, "повреждённое значение в канале (TypeError"),
    ({"npscalar": ["<f8", 5]}, "повреждённый numpy-массив в канале"),
])
def test_a_malformed_value_is_a_codec_error_with_a_russian_reason(tree, reason):
    with pytest.raises(CodecError) as info:
        Decoder(no_classes, lambda number, name: None)(tree)
    assert reason in str(info.value)


def test_a_huge_shape_is_refused_before_any_memory_is_allocated():
    """Форма 2**40 × 2**40 с пустыми данными: сверяется с длиной данных, массив не создаётся."""
    import tracemalloc

    tracemalloc.start()
    try:
        with pytest.raises(CodecError):
            Decoder(no_classes)({"ndarray": ["<f8", [2**31, 2**31, 2**31], ""]})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20


# ---------- пределы сырого JSON (scan/loads): границы, виды, сообщения ----------
@pytest.mark.parametrize("data, depth", [(b"[[1]]", 2), (b'{"a": {"b": 1}}', 2), (b'[{"a": [1]}]', 3),
                                         (b'"[[[[[[["', 0), (b"[]", 1)])
def test_depth_limit_is_exact_and_counts_lists_and_objects_alike(data, depth):
    scan(data, 2**20, max_depth=depth, max_nodes=100)
    if depth:
        with pytest.raises(LimitError) as info:
            scan(data, 2**20, max_depth=depth - 1, max_nodes=100)
        assert (info.value.kind, info.value.limit) == ("depth", depth - 1)


def test_node_limit_counts_containers_and_separators():
    scan(b"[1,2,3]", 2**20, max_nodes=3)
    with pytest.raises(LimitError) as info:
        scan(b"[1,2,3]", 2**20, max_nodes=2)
    assert (info.value.kind, info.value.limit) == ("nodes", 2)
    with pytest.raises(LimitError) as info:  # строки подряд без запятых (не JSON) — тоже счёт, а не бесконечный разбор
        scan(b'"a"' * 10_000, 2**20, max_nodes=100)
    assert info.value.kind == "nodes"


def test_byte_limit_is_inclusive():
    scan(b" " * 4096, 4096)
    with pytest.raises(LimitError) as info:
        scan(b" " * 4097, 4096)
    assert (info.value.kind, info.value.limit, str(info.value)) == ("bytes", 4096, "больше 4 КБ (4 КБ)")


@pytest.mark.parametrize("limit, depth_text, nodes_text", [
    (1, "вложен глубже 1 уровня", "больше 1 значения"),
    (2, "вложен глубже 2 уровней", "больше 2 значений"),
    (11, "вложен глубже 11 уровней", "больше 11 значений"),
    (21, "вложен глубже 21 уровня", "больше 21 значения"),
    (100_000, "вложен глубже 100000 уровней", "больше 100 000 значений"),
])
def test_limit_messages_are_grammatical_russian(limit, depth_text, nodes_text):
    """Сообщение доходит до слушателя в строке итога: «глубже 21 уровня», «больше 100 000 значений»."""
    with pytest.raises(LimitError, match=f"^{depth_text}$"):
        scan(b"[" * (limit + 1) + b"]" * (limit + 1), 2**30, max_depth=limit, max_nodes=10**9)
    with pytest.raises(LimitError, match=f"^{nodes_text}$"):
        scan(b"[" + b"0," * (limit + 1) + b"0]", 2**30, max_depth=10, max_nodes=limit)


@pytest.mark.parametrize("data", [b'{"value": {"list": [1, 2', '{"value": "обрыв'.encode(), b"", b"\xff\xfe\xfd",
                                  b'{"value": 1} {"value": 2}', b"]" + b"[" * 100_000])
def test_broken_json_within_limits_is_a_value_error_not_a_crash(data):
    """Обрезанный, пустой, не UTF-8 кадр, лишняя закрывающая скобка — ValueError, который канал превращает в отказ."""
    with pytest.raises(ValueError) as info:
        loads(data, 2**20, FRAME_DEPTH, FRAME_NODES)
    assert not isinstance(info.value, LimitError)  # в пределах: это не «слишком большой ответ», а битый


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le"])
def test_a_frame_in_utf16_or_utf32_cannot_slip_past_the_limits(encoding):
    """json.loads от байтов угадывает UTF-16/32 сам, а счёт скобок идёт по UTF-8: такой кадр — битый, не разобранный."""
    deep = ("[" * 200_000 + "]" * 200_000).encode(encoding)
    with pytest.raises(ValueError):
        loads(deep, 2**30, FRAME_DEPTH, 10**9)  # без строгого UTF-8 здесь был RecursionError
    small = '{"value": [1, 2]}'.encode(encoding)
    with pytest.raises(ValueError):
        loads(small, 2**20, FRAME_DEPTH, FRAME_NODES)


@PROPERTY
@given(st.recursive(st.none() | st.integers() | st.text(alphabet='[]{},"\\:ab ', max_size=8),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
                        st.text(alphabet='[]{}",\\ab', max_size=4), inner, max_size=4), max_leaves=25),
       st.integers(min_value=0, max_value=8))
def test_scan_refuses_exactly_the_utf8_json_that_is_nested_deeper_than_the_limit(value, limit):
    """Скобки внутри строк (с экранированием) не обманывают счёт: отказ — ровно когда значение глубже предела."""

    def depth(v):
        if isinstance(v, list):
            return 1 + max((depth(x) for x in v), default=0)
        if isinstance(v, dict):
            return 1 + max((depth(x) for x in v.values()), default=0)
        return 0

    data = json.dumps(value, ensure_ascii=False).encode("utf-8")
    if depth(value) > limit:
        with pytest.raises(LimitError) as info:
            loads(data, 2**20, max_depth=limit, max_nodes=10**6)
        assert info.value.kind == "depth"
    else:
        assert loads(data, 2**20, max_depth=limit, max_nodes=10**6) == value


# ---------- ошибки кода слушателя как данные ----------
def test_an_exception_reply_keeps_type_ancestry_and_a_bounded_message():
    class ScoreError(KeyError):
        pass

    reply = exception_reply(ScoreError("x" * 10_000))["raise"]
    assert reply["type"] == "ScoreError" and reply["mro"][:3] == ["ScoreError", "KeyError", "LookupError"]
    assert "object" not in reply["mro"] and len(reply["message"]) == 4000
    deep = type("Deep", (Exception,), {})
    for level in range(30):
        deep = type(f"Deep{level}", (deep,), {})
    assert len(exception_reply(deep())["raise"]["mro"]) == 20


# ---------- ответ ядра в доверенном процессе: битый кадр — отказ, а не сбой ----------
@pytest.mark.parametrize("payload", [b'{"value": [1, 2', b"[1, 2, 3]", '"строка"'.encode(), b"\xff\xfe not json", b"null"])
def test_the_relay_turns_a_corrupt_or_non_object_reply_into_a_refusal(payload):
    from autograde.run.channel import FrameReader

    ours, theirs = socket.socketpair()
    with ours, theirs:
        theirs.sendall(struct.pack(">I", len(payload)) + payload)
        reader = FrameReader(ours, 2**20)
        while not reader.ready():
            reader.pull()
    assert reader.violation is None and reader.message == {"refused": "повреждённый ответ ядра"}


# ---------- кадры: одна реализация на проверку, судью и ядро ----------
def reader(data: bytes, step: int = 3):
    """Поток, который отдаёт байты кусками не больше ``step`` (как сокет под нагрузкой)."""
    position = 0

    def read(n: int) -> bytes:
        nonlocal position
        chunk = data[position:position + min(n, step)]
        position += len(chunk)
        return chunk
    return read


def test_a_frame_read_back_in_small_pieces_is_the_message_and_the_next_frame_follows():
    message = {"op": "get", "name": "Отпуск", "n": [1, 2.5, None]}
    read = reader(codec.frame(message) + codec.frame({"op": "end"}))
    assert json.loads(codec.read_frame(read, 1 << 20)) == message
    assert json.loads(codec.read_frame(read, 1 << 20)) == {"op": "end"}
    assert codec.read_frame(read, 1 << 20) is None  # поток кончился — не кадр


def test_a_stream_closed_mid_frame_is_no_frame_and_an_oversized_one_is_not_read():
    data = codec.frame({"x": "y" * 100})
    assert codec.read_frame(reader(data[:-1]), 1 << 20) is None
    assert codec.read_frame(reader(data[:2]), 1 << 20) is None
    read = reader(data)
    with pytest.raises(codec.LimitError):
        codec.read_frame(read, 50)
    assert read(1 << 20) == data[codec.HEADER:][:3]  # тело не читали: в потоке — его начало

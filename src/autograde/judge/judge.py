"""Судья: исполняет ячейки с тестами в своём процессе, отдельно от кода слушателя.

Проверка (доверенный процесс) запускает судью в его собственной песочнице и говорит с ним
кадрами по stdin/stdout (4 байта длины + JSON). Судья получает код ячеек преподавателя и
тестов — их нет в ядре слушателя — и исполняет их в своём пространстве имён. Имя, которого у
судьи нет (или которое задаёт решение слушателя), он спрашивает у ядра через канал (codec.py):
простые данные приходят копией, функции слушателя — прокси, вызов которого исполняется в ядре.
Сравнения, допуски и эталонная библиотека — здесь, где код слушателя не исполняется.

Запросы проверки: ``init`` (какие имена принадлежат слушателю, путь к ноутбуку для письменных
ответов), ``instructor`` (ячейка преподавателя: исполнить молча), ``test`` (ячейка с тестами:
исполнить и вернуть её выходы как у Jupyter). Пока судья исполняет ячейку, он сам спрашивает
проверку: ``get`` (значение имени) и ``call`` (вызов функции слушателя).
"""

import builtins
import contextlib
import copy
import io
import json
import os
import sys
import traceback

from codec import CodecError, Decoder, Encoder, LimitError, dataclass_by_name, frame, read_frame

MAX_FRAME = 64 * 1024 * 1024
MAX_STREAM = 256 * 1024  # столько печати теста сохраняем
CELL_FILE = "<тест>"


class Channel:
    """Кадры по двум дескрипторам (``codec.frame``): 4 байта длины и JSON в UTF-8."""

    def __init__(self, read_fd: int, write_fd: int):
        self.read_fd, self.write_fd = read_fd, write_fd

    def receive(self) -> dict:
        try:
            data = read_frame(lambda n: os.read(self.read_fd, n), MAX_FRAME)
        except LimitError:
            raise EOFError("слишком большой кадр") from None
        if data is None:
            raise EOFError("проверка закрыла канал")
        return json.loads(data)

    def send(self, message: dict) -> None:
        view = memoryview(frame(message))
        while view:
            view = view[os.write(self.write_fd, view):]


class StudentError(Exception):
    """Исключение из кода слушателя, тип которого у судьи неизвестен."""


class TransferError(Exception):
    """Значение слушателя не передаётся через канал (не простые данные)."""


def _exception(reply: dict) -> BaseException:
    info = reply.get("raise") or {}
    name, message = str(info.get("type", "Exception")), str(info.get("message", ""))
    if info.get("where"):  # где в коде слушателя: функция, строка её ячейки и сама строка
        message = f"{message} ({str(info['where'])[:300]})"
    mro = [str(n) for n in info.get("mro", [])]
    if "MiniRagError" in mro or "EmbedderMismatchError" in mro:
        try:
            import minirag

            return getattr(minirag, name if name in ("MiniRagError", "EmbedderMismatchError") else "MiniRagError")(message)
        except (ImportError, AttributeError):
            pass
    for candidate in mro:
        known = getattr(builtins, candidate, None)
        if isinstance(known, type) and issubclass(known, Exception):
            if candidate == name:
                return known(message)
            error = known(message)
            error.student_type = name
            return error
    return StudentError(f"{name}: {message}" if message else name)


class Judge:
    def __init__(self, channel: Channel):
        self.channel = channel
        self.namespace = Namespace(self)
        self.owned: set[str] = set()
        self.fetched: set[str] = set()

    # ---------- канал к ядру слушателя ----------
    def ask(self, request: dict) -> dict:
        self.channel.send(request)
        return self.channel.receive()

    def decoder(self) -> Decoder:
        return Decoder(self.resolve_class, self.proxy)

    def resolve_class(self, module: str, qualname: str):
        return dataclass_by_name(module, qualname, lambda name: dict.get(self.namespace, name))

    def fetch(self, name: str):
        reply = self.ask({"op": "get", "name": name})
        if reply.get("missing"):
            raise KeyError(name)
        if "refused" in reply:
            raise TransferError(str(reply["refused"]))
        if "raise" in reply:
            raise _exception(reply)
        try:
            return self.decoder()(reply.get("value"))
        except CodecError as exc:
            raise TransferError(f"{name}: {exc}") from None

    def proxy(self, number: int, name: str):
        """Функция слушателя у судьи: вызов исполняется в ядре над копиями аргументов.

        Аргументы уходят в ядро закодированными — функция слушателя получает свои копии, а объекты
        судьи (входы тестов, ``DOCS`` преподавателя, эталон) она не видит и изменить не может. Что
        функция сделала со своими копиями, ядро сообщает (``after``), но судья это ни во что своё не
        записывает: тест, которому важно правило «не меняет вход», спрашивает явно —
        ``labkit.call_on_copies(функция, …)`` → ``(результат, входы после вызова)``.
        """
        judge = self

        def invoke(args, kwargs):
            encode = Encoder(None)
            try:
                payload = {"op": "call", "id": number, "args": encode(list(args)), "kwargs": encode(dict(kwargs))}
            except CodecError as exc:
                raise TransferError(f"аргументы {name} не передаются в ядро: {exc}") from None
            reply = judge.ask(payload)
            if "raise" in reply:
                raise _exception(reply)
            if "refused" in reply:
                raise TransferError(str(reply["refused"]))
            decode = judge.decoder()
            try:
                value = decode(reply.get("value"))
            except CodecError as exc:
                raise TransferError(f"{name}: {exc}") from None
            return value, reply.get("after"), decode

        def call(*args, **kwargs):
            return invoke(args, kwargs)[0]

        def with_inputs(*args, **kwargs):
            """(результат, входы после вызова — новые объекты судьи, по порядку: позиционные, затем именованные)."""
            value, after, decode = invoke(args, kwargs)
            inputs = list(args) + list(kwargs.values())
            after = after if isinstance(after, list) and len(after) == len(inputs) else [None] * len(inputs)
            changed = []
            for original, report in zip(inputs, after):
                try:
                    changed.append(copy.deepcopy(original) if report is None else decode(report))
                except CodecError as exc:
                    raise TransferError(f"{name}: {exc}") from None
            return value, changed

        call.__name__ = call.__qualname__ = name
        call.with_inputs = with_inputs
        return call

    # ---------- ячейки ----------
    def run(self, source: str, capture: bool):
        """Исполнить ячейку; вернуть (stdout, stderr, ошибка или None)."""
        for name in self.owned | self.fetched:
            dict.pop(self.namespace, name, None)  # имена слушателя — каждый раз свежие из ядра
        self.fetched.clear()
        out, err = _Bounded(), _Bounded()
        error = None
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                exec(compile(source, CELL_FILE, "exec"), self.namespace)  # noqa: S102 — код преподавателя
            except BaseException as exc:  # noqa: BLE001
                if isinstance(exc, (EOFError, BrokenPipeError)) and not capture:
                    raise
                error = exc
        return out.getvalue(), err.getvalue(), error

    def serve(self) -> None:
        while True:
            try:
                request = self.channel.receive()
            except EOFError:
                return
            op = request.get("op")
            if op == "init":
                self.owned = set(request.get("owned", []))
                if request.get("notebook"):
                    os.environ["AUTOGRADE_NOTEBOOK"] = request["notebook"]
                self.channel.send({"op": "ready"})
            elif op == "instructor":
                _, _, error = self.run(request["source"], capture=False)
                self.channel.send({"op": "done", "ok": error is None,
                                   "error": "" if error is None else f"{type(error).__name__}: {error}"[:500]})
            elif op == "test":
                stdout, stderr, error = self.run(request["source"], capture=True)
                self.channel.send({"op": "done", "outputs": _outputs(stdout, stderr, error)})
            else:
                self.channel.send({"op": "done", "outputs": [], "error": f"неизвестный запрос {op!r}"})


class Namespace(dict):
    """Пространство имён тестов: чего нет у судьи — спросить у ядра слушателя."""

    def __init__(self, judge: Judge):
        super().__init__(__name__="__main__", __builtins__=builtins)
        self.judge = judge

    def __missing__(self, name: str):
        if name in builtins.__dict__ and name not in self.judge.owned:
            raise KeyError(name)  # встроенные имена — свои: интерпретатор возьмёт их из builtins
        value = self.judge.fetch(name)
        self[name] = value
        self.judge.fetched.add(name)
        return value


class _Bounded(io.StringIO):
    def write(self, text):
        if self.tell() < MAX_STREAM:
            return super().write(text[: MAX_STREAM - self.tell()])
        return len(text)


def _outputs(stdout: str, stderr: str, error) -> list[dict]:
    outputs = []
    if stdout:
        outputs.append({"output_type": "stream", "name": "stdout", "text": stdout})
    if stderr:
        outputs.append({"output_type": "stream", "name": "stderr", "text": stderr})
    if error is not None:
        name = type(error).__name__
        value = str(error)
        if getattr(error, "student_type", None):
            value = f"{value} (в коде слушателя — {error.student_type})"
        frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == CELL_FILE]
        lines = [f"строка {f.lineno} ячейки: {f.line}" for f in frames[-5:]]
        outputs.append({"output_type": "error", "ename": name, "evalue": value[:20000],
                        "traceback": lines + [f"{name}: {value[:20000]}"]})
    return outputs


def main() -> None:
    # кадры — по своим копиям дескрипторов; fd 1 — в stderr, чтобы случайная печать не сломала протокол
    channel = Channel(os.dup(0), os.dup(1))
    os.dup2(2, 1)
    sys.path.insert(0, os.getcwd())  # файлы задания (помощники, данные) — как у ядра слушателя
    sys.setrecursionlimit(4000)
    Judge(channel).serve()


if __name__ == "__main__":
    main()

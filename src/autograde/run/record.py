"""Что даёт исполнение ячейки: выходы в пределах общего бюджета, события (тайм-аут, память…) и ошибки-объяснения.

Бюджет вывода — на весь ноутбук: stdout, stderr, картинки и ошибки с трассировками вместе; что
сверх него, не хранится (поток текста — ровно до последнего байта бюджета, как бы ядро его ни
нарезало), а ячейка, которая его превысила, останавливает ядро. Модуль ничего не
исполняет: его заполняют kernel.py (выходы ядра) и execute.py (выходы судьи).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from nbformat import NotebookNode
from nbformat.v4 import new_output, output_from_msg

TRACEBACK_LINES = 100
NOT_EXECUTED = "NotExecuted"



@dataclass
class Event:
    """Что случилось: timeout, output, memory, processes, died, wall, startup, transfer, reply, judge."""

    kind: str
    cell: int | None
    detail: str = ""


@dataclass
class Execution:
    events: list[Event] = field(default_factory=list)
    completed: bool = True
    seconds: float = 0.0

    def first(self, *kinds: str) -> Event | None:
        return next((e for e in self.events if e.kind in kinds), None)


class Stop(Exception):
    """Дальше ноутбук не исполняем: причина — ``kind`` события."""

    def __init__(self, kind: str):
        super().__init__(kind)
        self.kind = kind


def error(ename: str, evalue: str) -> NotebookNode:
    return new_output("error", ename=ename, evalue=evalue, traceback=[f"{ename}: {evalue}"])


def size(output: dict) -> int:
    if output.get("output_type") == "stream":
        return len(output.get("text", ""))
    if output.get("output_type") == "error":
        return len(output.get("evalue", "")) + sum(len(line) for line in output.get("traceback", []))
    data = output.get("data", {})
    return sum(len(v) if isinstance(v, str) else len(json.dumps(v)) for v in data.values())


class Budget:
    """Сколько байт вывода ещё можно принять от всего ноутбука."""

    def __init__(self, limit: int):
        self.limit, self.used = limit, 0

    def take(self, size: int) -> bool:
        self.used += size
        return self.used <= self.limit


class Sink:
    """Выходы одной ячейки: всё считается в общий бюджет ноутбука."""

    def __init__(self, cell: NotebookNode, budget: Budget):
        self.cell, self.budget = cell, budget
        self.flooded = False
        self.clear_pending = False
        cell.outputs = []

    def add(self, msg: dict) -> None:
        kind, content = msg["msg_type"], msg["content"]
        if kind == "clear_output":
            if content.get("wait"):
                self.clear_pending = True
            else:
                self.cell.outputs = []
            return
        if kind not in ("stream", "display_data", "execute_result", "error") or self.flooded:
            return
        if self.clear_pending:
            self.cell.outputs = []
            self.clear_pending = False
        output = output_from_msg(msg)
        if kind == "error":
            tb = output.get("traceback", [])
            if len(tb) > TRACEBACK_LINES:
                output.traceback = tb[: TRACEBACK_LINES // 2] + ["… трассировка обрезана …"] + tb[-TRACEBACK_LINES // 2:]
            output.traceback = [line[:4000] for line in output.traceback]
            output.evalue = (output.get("evalue") or "")[:20000]
        left = self.budget.limit - self.budget.used
        if not self.budget.take(size(output)):
            self.flooded = True
            if kind != "stream" or left <= 0:
                return
            # поток — до последнего байта бюджета: сохранённое не зависит от того, как ядро нарезало вывод
            output.text = output.text[:left]
        last = self.cell.outputs[-1] if self.cell.outputs else None
        if kind == "stream" and last is not None and last.get("output_type") == "stream" and last.name == output.name:
            last.text += output.text  # результат не зависит от того, как ядро нарезало поток
        else:
            self.cell.outputs.append(output)


class Quiet:
    """Выходы, которые никому не нужны (установка канала, печать кода слушателя внутри вызовов из тестов)."""

    flooded = False

    def add(self, msg: dict) -> None:
        return None


STOP_ERRORS = {
    "wall": lambda lim: ("TimeoutError", f"ноутбук выполнялся дольше {lim.timeout:g} с и был остановлен"),
    "output": lambda lim: ("OutputLimitError", f"ноутбук вывел больше {lim.output_kb} КБ; ядро остановлено"),
    "memory": lambda lim: ("MemoryError", f"процессы ячейки заняли больше {lim.memory_mb} МБ"),
    "processes": lambda lim: ("RuntimeError", f"ячейка запустила больше {lim.processes} процессов"),
    "died": lambda lim: ("DeadKernelError", "ядро Python завершилось"),
    "hung": lambda lim: ("TimeoutError", f"ячейка выполнялась дольше {lim.cell_timeout:g} с и не остановилась "
                                         "по прерыванию"),
    "transfer": lambda lim: ("OutputLimitError", f"тестам передано больше {lim.transfer_mb} МБ данных"),
    "reply": lambda lim: ("OutputLimitError", "ответ ядра больше пределов проверки; ядро остановлено"),
}
STOP_REASONS = {
    "wall": lambda lim: f"весь ноутбук выполнялся дольше {lim.timeout:g} с",
    "output": lambda lim: "вывод ноутбука превысил лимит",
    "memory": lambda lim: "превышен лимит памяти",
    "processes": lambda lim: "слишком много процессов",
    "died": lambda lim: "ядро Python завершилось",
    "hung": lambda lim: "ядро не ответило на прерывание",
    "transfer": lambda lim: "тестам передано слишком много данных",
    "reply": lambda lim: "ответ ядра больше пределов проверки",
}






def not_executed(nb: NotebookNode, start: int, why: str) -> None:
    """Ячейки, до которых исполнение не дошло, получают ошибку: иначе пустой выход теста засчитался бы."""
    for cell in nb.cells[start:]:
        if cell.cell_type == "code" and cell.source.strip():
            cell.outputs = [error(NOT_EXECUTED, f"ячейка не выполнялась: {why}")]
            cell.execution_count = None

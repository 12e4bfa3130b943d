"""Статус работы и сообщение по-русски: что случилось при исполнении и что с этим делать.

Статусы: ``ok`` — ноутбук исполнен до конца; ``error`` — работу не исполнить (файл) или ядро умерло;
``timeout`` — ячейка или ноутбук не уложились во время; ``killed`` — песочница остановила код
(память, вывод, процессы); ``not_submitted`` — работы нет (она не в этом списке: её ставит
приём). Первая беда задаёт статус, сообщение перечисляет все. Модуль ничего не исполняет.
"""

from __future__ import annotations

import re

from autograde.lab.master import gid
from autograde.sandbox import Limits

STATUSES = ("ok", "error", "timeout", "killed", "not_submitted")

BLOCKED = [  # (вид, шаблон по «ename: evalue», что сказать после «ячейка …:»)
    ("exit", r"^SystemExit\b", "sys.exit() — выйти из ядра и так пропустить тесты нельзя, ячейка просто прервана"),
    ("network", r"Temporary failure in name resolution|Name or service not known|Network is unreachable|"
                r"No address associated|\[Errno -[235]\]|\[Errno 101\]|NameResolutionError",
     "попытка выйти в сеть — сети в песочнице нет"),
    ("write", r"Read-only file system|\[Errno 30\]|^PermissionError\b", "попытка записи вне рабочей папки — запрещено"),
    ("fork", r"^BlockingIOError\b.*(Resource temporarily unavailable|\[Errno 11\])",
     "попытка запустить процессы упёрлась в лимит песочницы"),
]

EVENTS = {  # событие исполнения → статус и сообщение
    "startup": ("error", "ядро Python в песочнице не запустилось ({detail}): это сбой проверки, а не работы — "
                         "запустите проверку этой работы ещё раз"),
    "judge": ("error", "{cell}: сбой процесса проверки ({detail}): это не вина работы — запустите проверку снова"),
    "died": ("error", "{cell}: ядро Python завершилось ({detail}: os._exit, exit(), падение расширения или убито "
                      "системой); следующие ячейки не выполнялись и баллов не дали"),
    "wall": ("timeout", "{cell}: весь ноутбук выполнялся дольше {limits.timeout:g} с и остановлен здесь; "
                        "следующие ячейки баллов не дали"),
    "timeout": ("timeout", "{cell}: выполнялась дольше {limits.cell_timeout:g} с и прервана "
                           "(бесконечный цикл или слишком медленный код)"),
    "hung": ("timeout", "{cell}: выполнялась дольше {limits.cell_timeout:g} с и не остановилась по прерыванию — "
                        "ядро остановлено, следующие ячейки не выполнялись"),
    "output": ("killed", "{cell}: ноутбук вывел больше {limits.output_kb} КБ (вывод, картинки и ошибки вместе) — "
                         "ядро остановлено, следующие ячейки не выполнялись"),
    "transfer": ("killed", "{cell}: тесты получили из ядра больше {limits.transfer_mb} МБ данных — ядро остановлено"),
    "reply": ("killed", "{cell}: ответ ядра {detail} — такой ответ проверка не разбирает (это ответ "
                        "работы, а не сбой проверки); ядро остановлено, следующие ячейки не выполнялись"),
    "memory": ("killed", "{cell}: превышен лимит памяти {limits.memory_mb} МБ — ядро остановлено, "
                         "следующие ячейки не выполнялись"),
    "processes": ("killed", "{cell}: запустила больше {limits.processes} процессов (fork-бомба?) — ядро остановлено, "
                            "следующие ячейки не выполнялись"),
}
RETRY = {"startup", "judge"}  # сбой проверки, а не работы: следующий запуск перепроверит

# Замечания преподавателю в сообщении результата: в отзыв слушателю они не идут (render/feedback.py вырезает их).
REVIEW_PREFIX = "подозрительные конструкции в решении"  # run/worker.py: решение стоит посмотреть глазами
IDENTITY_PREFIX = "знакомое имя с новым номером LMS"  # intake/roster.py: сдача подписана именем из списка группы
INSTRUCTOR_ONLY = (REVIEW_PREFIX, IDENTITY_PREFIX)


def cell_name(nb, index: int) -> str:
    cell = nb.cells[index]
    grade_id = gid(cell)
    if grade_id:
        return f"«{grade_id}»"
    first = next((line.strip() for line in cell.source.splitlines() if line.strip()), "")
    return f"ячейка {index + 1} («{first[:40]}{'…' if len(first) > 40 else ''}»)"


def _blocked(nb, skip: set[int]) -> list[tuple[str, str]]:
    """Что код пытался сделать и на что наткнулся в песочнице: [(вид, сообщение)], по разу на вид."""
    found: dict[str, str] = {}
    for index, cell in enumerate(nb.cells):
        if index in skip:
            continue
        for output in cell.get("outputs", []):
            if output.get("output_type") != "error":
                continue
            text = f"{output.get('ename', '')}: {output.get('evalue', '')}"
            if output.get("ename") == "MemoryError" and "memory" not in found:
                found["memory"] = f"{cell_name(nb, index)}: превышен лимит памяти {{memory}} МБ (MemoryError), ячейка прервана"
            for kind, pattern, message in BLOCKED:
                if kind not in found and re.search(pattern, text):
                    found[kind] = f"{cell_name(nb, index)}: {message}"
    return list(found.items())


def verdict(events, nb, limits: Limits, notes: list[str]) -> tuple[str, str]:
    """Статус и сообщение по событиям исполнения и замечаниям приёма."""
    status, parts, seen = "ok", list(notes), set()
    for event in events:
        if event.kind not in EVENTS or (event.kind, event.cell) in seen:
            continue
        seen.add((event.kind, event.cell))
        event_status, template = EVENTS[event.kind]
        status = event_status if status == "ok" else status
        cell = cell_name(nb, event.cell) if event.cell is not None else "ноутбук"
        parts.append(template.format(cell=cell, detail=event.detail, limits=limits))
    stopped = {e.kind for e in events}
    for kind, message in _blocked(nb, {e.cell for e in events if e.cell is not None}):
        if (kind == "fork" and "processes" in stopped) or (kind == "memory" and "memory" in stopped):
            continue  # о том же уже сказано: сторож остановил ядро
        if kind == "memory":
            status = "killed" if status == "ok" else status
            message = message.format(memory=limits.memory_mb)
        parts.append(message)
    return status, "; ".join(parts)

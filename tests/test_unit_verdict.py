"""Статус и сообщение работы (``autograde/lab/verdict.py``) по событиям исполнения — события собраны руками.

``Event`` — из ``autograde.run.record``, как их записали бы ядро, сторож и судья; выходы ячеек — как
после исполнения. Так каждая беда (тайм-аут, память, процессы, смерть ядра, сбой запуска) и её
сообщение по-русски проверяются за миллисекунды, без песочницы. Сообщение об ответе ядра сверх
пределов (``reply``) проверяет tests/test_limits.py.
"""

from __future__ import annotations

import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output
from unit_lab import cell

from autograde.lab.verdict import EVENTS, RETRY, STATUSES, verdict
from autograde.run.record import Event
from autograde.sandbox import Limits

LIMITS = Limits(cell_timeout=5, timeout=30, memory_mb=512, output_kb=64, transfer_mb=8, processes=6)


def notebook():
    return new_notebook(cells=[
        new_code_cell("x = 1"),
        cell("code", "assert f(1) == 2", "test_f", grade=True, locked=True, points=2),
        new_code_cell("\n\n   while True:  # очень длинная строка кода, которая в сорок символов не влезет\n  pass"),
        new_markdown_cell("текст"),
    ])


def error(ename, evalue):
    return new_output("error", ename=ename, evalue=evalue, traceback=[])


@pytest.mark.parametrize("event, status, message", [
    (Event("timeout", 2), "timeout", "ячейка 3 («while True:  # очень длинная строка кода…»): выполнялась дольше 5 с "
                                     "и прервана (бесконечный цикл или слишком медленный код)"),
    (Event("hung", 2), "timeout", "выполнялась дольше 5 с и не остановилась по прерыванию — ядро остановлено, "
                                  "следующие ячейки не выполнялись"),
    (Event("wall", 1), "timeout", "«test_f»: весь ноутбук выполнялся дольше 30 с и остановлен здесь; следующие "
                                  "ячейки баллов не дали"),
    (Event("memory", 0, "600 МБ"), "killed", "ячейка 1 («x = 1»): превышен лимит памяти 512 МБ — ядро остановлено"),
    (Event("processes", 0), "killed", "ячейка 1 («x = 1»): запустила больше 6 процессов (fork-бомба?)"),
    (Event("output", 0), "killed", "ноутбук вывел больше 64 КБ (вывод, картинки и ошибки вместе) — ядро остановлено"),
    (Event("transfer", 1), "killed", "«test_f»: тесты получили из ядра больше 8 МБ данных — ядро остановлено"),
    (Event("died", 0, "SIGSEGV"), "error", "ячейка 1 («x = 1»): ядро Python завершилось (SIGSEGV: os._exit, exit(), "
                                           "падение расширения или убито системой)"),
    (Event("startup", None, "bwrap: нет прав"), "error", "ядро Python в песочнице не запустилось (bwrap: нет прав): это "
                                                         "сбой проверки, а не работы — запустите проверку этой работы ещё раз"),
    (Event("judge", 1, "EOF"), "error", "«test_f»: сбой процесса проверки (EOF): это не вина работы — запустите "
                                        "проверку снова"),
])
def test_each_stop_sets_its_status_and_names_the_cell_and_the_limit(event, status, message):
    got_status, got_message = verdict([event], notebook(), LIMITS, [])
    assert got_status == status and message in got_message


def test_every_event_maps_to_a_known_status_and_only_grader_failures_are_retried():
    assert {status for status, _ in EVENTS.values()} <= set(STATUSES)
    assert RETRY == {"startup", "judge"}  # остальное — вина работы: итог кэшируется, повтор ничего не даст
    for kind in RETRY:  # и слушателю сказано, что это не его вина
        status, template = EVENTS[kind]
        assert status == "error" and ("не вина работы" in template or "сбой проверки, а не работы" in template)


def test_a_clean_run_is_ok_and_intake_notes_come_first():
    status, message = verdict([], notebook(), LIMITS, ["ноутбук называется x.ipynb", "лишние файлы не проверяются: a.py"])
    assert (status, message) == ("ok", "ноутбук называется x.ipynb; лишние файлы не проверяются: a.py")


def test_the_first_trouble_sets_the_status_and_the_message_lists_all_of_them_once():
    events = [Event("timeout", 2), Event("timeout", 2), Event("memory", 0), Event("timeout", 0), Event("unknown", 1)]
    status, message = verdict(events, notebook(), LIMITS, ["замечание"])
    assert status == "timeout"
    parts = message.split("; ")
    assert parts[0] == "замечание" and len(parts) == 4
    assert parts[1].startswith("ячейка 3") and parts[2].startswith("ячейка 1 («x = 1»): превышен лимит памяти")
    assert parts[3].startswith("ячейка 1 («x = 1»): выполнялась дольше 5 с")


@pytest.mark.parametrize("ename, evalue, said", [
    ("SystemExit", "0", "sys.exit() — выйти из ядра и так пропустить тесты нельзя, ячейка просто прервана"),
    ("ConnectionError", "[Errno -3] Temporary failure in name resolution", "попытка выйти в сеть — сети в песочнице нет"),
    ("OSError", "[Errno 101] Network is unreachable", "попытка выйти в сеть — сети в песочнице нет"),
    ("OSError", "[Errno 30] Read-only file system: '/home/x'", "попытка записи вне рабочей папки — запрещено"),
    ("PermissionError", "[Errno 13] Permission denied: '/etc/passwd'", "попытка записи вне рабочей папки — запрещено"),
    ("BlockingIOError", "[Errno 11] Resource temporarily unavailable", "попытка запустить процессы упёрлась в лимит песочницы"),
])
def test_what_the_code_bumped_into_in_the_sandbox_is_explained_but_does_not_stop_the_work(ename, evalue, said):
    nb = notebook()
    nb.cells[0].outputs = [error(ename, evalue)]
    status, message = verdict([], nb, LIMITS, [])
    assert status == "ok" and message == f"ячейка 1 («x = 1»): {said}"


def test_a_memory_error_inside_a_cell_marks_the_work_killed_with_the_limit():
    nb = notebook()
    nb.cells[2].outputs = [error("MemoryError", "")]
    status, message = verdict([], nb, LIMITS, [])
    assert status == "killed" and message.endswith("превышен лимит памяти 512 МБ (MemoryError), ячейка прервана")


def test_what_the_watchdog_already_reported_is_not_said_twice():
    nb = notebook()
    nb.cells[0].outputs = [error("BlockingIOError", "[Errno 11] Resource temporarily unavailable")]
    nb.cells[1].outputs = [error("MemoryError", "")]
    status, message = verdict([Event("processes", 2), Event("memory", 2)], nb, LIMITS, [])
    assert status == "killed"
    assert "процессы упёрлась" not in message and "(MemoryError)" not in message
    assert message.count("превышен лимит памяти") == 1


def test_outputs_of_the_cell_that_was_stopped_are_not_reinterpreted():
    """Ячейка, которую остановил сторож, получает своё сообщение — её ошибки «сеть»/«sys.exit» уже не к месту."""
    nb = notebook()
    nb.cells[2].outputs = [error("SystemExit", "1")]
    status, message = verdict([Event("timeout", 2)], nb, LIMITS, [])
    assert status == "timeout" and "sys.exit" not in message


def test_each_kind_of_sandbox_block_is_named_once_at_its_first_cell():
    nb = notebook()
    nb.cells[0].outputs = [error("SystemExit", "0")]
    nb.cells[2].outputs = [error("SystemExit", "0"), error("OSError", "[Errno 101] Network is unreachable")]
    _, message = verdict([], nb, LIMITS, [])
    assert message.count("sys.exit()") == 1 and message.index("ячейка 1") < message.index("ячейка 3")
    assert message.count("сети в песочнице нет") == 1

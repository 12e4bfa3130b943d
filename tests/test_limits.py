"""Пределы разбора всего, что приходит со стороны слушателя (ответы канала, сообщения ядра, сданный ноутбук), — без песочницы.

Разбор JSON рекурсивен и строит каждое значение в памяти, поэтому чужие байты сначала считаются
(``codec.scan``): размер, вложенность, число значений. Превышение — ``LimitError`` (вина работы),
а не RecursionError или сотни мегабайт в доверенном процессе.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from autograde.judge.codec import FRAME_DEPTH, FRAME_NODES, MAX_NODES, Decoder, Encoder, LimitError, loads, scan

DEEP = b"[" * 200_000 + b"]" * 200_000
MILLION = b'{"value": {"list": [' + b",".join([b'{"list": []}'] * 1_000_000) + b"]}}"


def test_deep_reply_is_refused_before_parsing():
    with pytest.raises(LimitError) as info:
        loads(DEEP, 16 * 2**20, FRAME_DEPTH, FRAME_NODES)
    assert info.value.kind == "depth" and f"вложен глубже {FRAME_DEPTH} уровней" in str(info.value)


def test_a_million_empty_lists_are_refused_without_building_them():
    tracemalloc.start()
    try:
        with pytest.raises(LimitError) as info:
            loads(MILLION, 16 * 2**20, FRAME_DEPTH, FRAME_NODES)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.kind == "nodes" and "значений" in str(info.value)
    assert peak < 20 * 2**20, f"счёт до разбора занял {peak / 2**20:.0f} МБ"


def test_size_is_checked_first():
    with pytest.raises(LimitError) as info:
        scan(b"[" + b"1," * 1000 + b"1]", max_bytes=1024)
    assert info.value.kind == "bytes" and "больше 1 КБ" in str(info.value)


def test_brackets_and_commas_inside_strings_do_not_count():
    text = json.dumps({"s": "[" * 10_000 + "," * 10_000 + '\\"]' * 100, "t": ["a\\", "b"]}).encode()
    assert loads(text, 2**20, max_depth=3, max_nodes=10)["t"] == ["a\\", "b"]


@pytest.mark.parametrize("value", [
    {"deep": [[[[[[1.5]]]]]], "floats": [0.1] * 1000, "array": np.arange(10_000.0), "text": "[{,}]" * 1000},
    [[i, str(i)] for i in range(MAX_NODES // 4)],
])
def test_every_honest_value_the_encoder_produces_passes(value):
    frame = json.dumps({"value": Encoder(None)(value)}).encode()
    decoded = Decoder(lambda m, q: None)(loads(frame, 64 * 2**20, FRAME_DEPTH, FRAME_NODES)["value"])
    assert json.dumps(Encoder(None)(decoded)) == json.dumps(Encoder(None)(value))


def test_the_relay_refuses_an_oversized_reply_as_the_works_fault():
    from autograde.run.channel import FrameReader

    for payload, kind in ((DEEP, "depth"), (MILLION, "nodes")):
        ours, theirs = socket.socketpair()
        with ours, theirs:
            theirs.setblocking(False)
            reader = FrameReader(ours, 16 * 2**20)
            data = struct.pack(">I", len(payload)) + payload
            sent = 0
            while not reader.ready():
                try:
                    sent += theirs.send(data[sent:sent + (1 << 20)]) if sent < len(data) else 0
                except BlockingIOError:
                    pass
                reader.pull()
            assert reader.message is None and reader.violation is not None and reader.violation.kind == kind


def test_a_kernel_message_over_the_limits_stops_the_kernel_with_a_reason():
    from autograde.lab.verdict import verdict
    from autograde.run.kernel import MESSAGE_DEPTH, _unpack
    from autograde.sandbox import Limits

    assert _unpack(b'{"name": "stdout", "text": "[[[["}') == {"name": "stdout", "text": "[[[["}
    with pytest.raises(LimitError) as info:
        _unpack(b'{"data": {"application/json": ' + b"[" * 100_000 + b"]" * 100_000 + b"}}")
    assert f"глубже {MESSAGE_DEPTH} уровней" in str(info.value)

    from nbformat.v4 import new_code_cell, new_notebook

    from autograde.run.record import Event

    nb = new_notebook(cells=[new_code_cell("print(1)")])
    status, message = verdict([Event("reply", 0, str(info.value))], nb, Limits(), [])
    assert status == "killed"
    assert message.startswith(f"ячейка 1 («print(1)»): ответ ядра вложен глубже {MESSAGE_DEPTH} уровней")
    assert "сбой проверки" not in message.replace("а не сбой проверки", "")


# ---------- приём: пределы файла и ячеек до разбора и до любого преобразования ----------
def _notebook(*sources: str, grade_id: str | None = None) -> bytes:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": s} for s in sources]
    if grade_id:
        cells[-1]["metadata"] = {"nbgrader": {"grade_id": grade_id, "solution": True}}
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}).encode()


def test_a_cell_over_256_kb_is_one_clear_error_naming_it():
    from autograde.lab.notebook import MAX_CELL, SubmissionError, read_submission

    assert read_submission(_notebook("x" * MAX_CELL))[0][0]["source"] == "x" * MAX_CELL
    with pytest.raises(SubmissionError, match=r"^«why_cosine»: ответ длиннее 256 КБ \(1 024 КБ\) — работа не проверена"):
        read_submission(_notebook("кратко", "Ж" * 2**19, grade_id="why_cosine"))
    with pytest.raises(SubmissionError, match=r"^ячейка 2 \(«мой текст»\): текст ячейки длиннее 256 КБ"):
        read_submission(_notebook("кратко", "мой текст\n" + "y" * MAX_CELL))


def test_all_cells_together_are_capped_and_so_are_file_size_and_json_values():
    from autograde.lab.notebook import MAX_CELL, MAX_FILE, SubmissionError, read_submission

    with pytest.raises(SubmissionError, match="текст всех ячеек длиннее 2 048 КБ"):
        read_submission(_notebook(*["z" * MAX_CELL] * 9))
    with pytest.raises(SubmissionError, match="файл больше предела 16 МБ"):
        read_submission(b" " * (MAX_FILE + 1))
    many = b'{"cells": [], "metadata": {"x": [' + b",".join([b"[]"] * 600_000) + b"]}, \"nbformat\": 4}"
    with pytest.raises(SubmissionError, match="файл больше 500 000 значений: очистите выходы"):
        read_submission(many)


def test_intake_reads_no_more_than_the_file_cap(tmp_path):
    from autograde.intake.submissions import collect
    from autograde.lab.notebook import MAX_FILE

    folder = tmp_path / "petrov" / "lab01_mini_rag"
    folder.mkdir(parents=True)
    (folder / "lab01_mini_rag.ipynb").write_bytes(b" " * (MAX_FILE + 10))
    (sub,), _ = collect(tmp_path, "lab01_mini_rag")
    assert sub.data is None and "больше предела 16 МБ (16.0 МБ)" in sub.error


# ---------- слот песочницы начинает с чистого uid ----------
@pytest.mark.skipif(os.geteuid() != 0, reason="свой uid у песочницы бывает только под root")
def test_a_slot_starts_without_processes_left_from_its_previous_sandbox():
    """Остатки убитой песочницы (fork-бомба, поток вывода) съедали бы RLIMIT_NPROC следующей работы того же слота
    тем сильнее, чем загружена машина; ``reap`` перед запуском ждёт их конца и добивает оставшихся."""
    from autograde.sandbox.launch import UID_BASE, _processes_of, reap

    uid = UID_BASE + 0x0FFFFFF0  # uid, которого нет ни у одного слота этой проверки
    leftovers = [subprocess.Popen(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "sleep", "60"])
                 for _ in range(3)]
    try:
        deadline = time.monotonic() + 10
        while len(_processes_of(uid)) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(_processes_of(uid)) == 3
        reap(uid, grace=0.2)
        for proc in leftovers:
            proc.wait(timeout=5)  # наш дочерний процесс: зомби уходит, когда его дождались
        assert _processes_of(uid) == []
        assert all(proc.returncode == -signal.SIGKILL for proc in leftovers)
    finally:
        for proc in leftovers:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_an_exception_from_learner_code_names_the_function_and_its_line():
    """«AttributeError: 'str' object has no attribute 'lines'» одного мало: слушателю нужна функция и строка."""
    import linecache

    from autograde.judge.codec import exception_reply

    cell = "def claims(answer):\n    text = answer.strip()\n    return text.lines()\n"
    filename = "/tmp/ipykernel_4242/123456.py"  # так ipykernel называет ячейку
    linecache.cache[filename] = (len(cell), None, cell.splitlines(keepends=True), filename)
    namespace: dict = {}
    exec(compile(cell, filename, "exec"), namespace)
    try:
        namespace["claims"]("Отпуск 28 дней.")
    except AttributeError as exc:
        reply = exception_reply(exc)["raise"]
    assert reply["where"] == "функция claims, строка 3 её ячейки: return text.lines()"
    try:
        raise ValueError("вне ячеек")
    except ValueError as exc:
        assert "where" not in exception_reply(exc)["raise"]  # кадров из ячеек нет — и места нет


def test_a_flooding_kernel_holds_no_more_output_than_the_budget_plus_one():
    """Ядро само отбрасывает вывод сверх бюджета: превышение до проверки доходит, а буфер не растёт до RLIMIT_AS."""
    from jupyter_client.manager import start_new_kernel

    from autograde.run.channel import INSTALL_BRIDGE

    manager, client = start_new_kernel(kernel_name="python3")
    try:
        install = INSTALL_BRIDGE.replace("{path!r}", repr(str(Path(tempfile.mkdtemp()) / "bridge"))) \
            .replace("{output_cap}", "1001")
        assert client.execute_interactive(install, timeout=30)["content"]["status"] == "ok"
        streamed = []
        code = ("import sys\nfor i in range(400):\n    print('x' * 99)\n    sys.stderr.write('y' * 50)\n"
                "print('после потока ячейка работает дальше')")
        reply = client.execute_interactive(code, timeout=60, output_hook=lambda msg: streamed.append(
            msg["content"]["text"] if msg["msg_type"] == "stream" else ""))
        assert reply["content"]["status"] == "ok"
        assert len("".join(streamed)) == 1001  # бюджет 1000 — и ровно один символ сверх него
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)

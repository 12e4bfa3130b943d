"""Главный процесс не держит группу в памяти: байты сдачи читаются, когда работа уходит работнику.

``task.loaded``, ключ итога по файлу сдачи и окно пула (``pool._refill``) — без песочницы и процессов.
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

from autograde.lab.task import Context, Task, loaded, task_key
from autograde.run import pool
from autograde.sandbox import Limits


def context():
    return Context(SimpleNamespace(digest="d"), Limits(), True, (), {}, [], False)


def stored(tmp_path, n):
    tasks = []
    for i in range(n):
        path = tmp_path / f"s{i}.ipynb"
        path.write_bytes(b'{"n": %d}' % i)
        tasks.append(Task(f"s{i}", f"s{i}", "", None, source=path))
    return tasks


def test_a_task_read_from_its_file_has_the_same_key_as_one_holding_the_bytes(tmp_path):
    """Ключ итога не изменился оттого, что байты теперь читаются позже: прежние итоги не перепроверяются."""
    task = stored(tmp_path, 1)[0]
    held = dataclasses.replace(task, data=task.source.read_bytes(), source=None)
    assert task_key(context(), task) == task_key(context(), held)
    assert loaded(task).data == held.data and task.data is None  # сама задача байтов не получает
    task.source.write_bytes(b'{"n": "new"}')
    assert task_key(context(), task) != task_key(context(), held)


def test_a_submission_file_gone_before_dispatch_becomes_an_empty_work_not_a_crash(tmp_path):
    task = stored(tmp_path, 1)[0]
    task.source.unlink()
    assert loaded(task).data is None


class FakeExecutor:
    def __init__(self):
        self.submitted = []

    def submit(self, function, task):
        self.submitted.append(task)
        return object()


def test_the_pool_has_a_bounded_number_of_works_in_flight_and_reads_only_their_bytes(tmp_path):
    tasks = stored(tmp_path, 100)
    waiting, futures, executor = list(reversed(tasks)), {}, FakeExecutor()
    pool._refill(executor, futures, waiting, limit=4)
    assert len(futures) == 4 and len(waiting) == 96
    assert [t.student for t in executor.submitted] == ["s0", "s1", "s2", "s3"]  # порядок группы сохраняется
    assert all(t.data == b'{"n": %d}' % i for i, t in enumerate(executor.submitted))
    assert all(t.data is None for t in waiting)  # остальные 96 — только пути
    futures.pop(next(iter(futures)))  # одна работа вернулась — уходит ровно одна следующая
    pool._refill(executor, futures, waiting, limit=4)
    assert len(futures) == 4 and executor.submitted[-1].student == "s4"

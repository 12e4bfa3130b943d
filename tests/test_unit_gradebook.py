"""База оценок создаётся без программы alembic: та же схема и та же версия, что у nbgrader (``store/gradebook.create``)."""

from __future__ import annotations

import os
import sqlite3
import sys
from pathlib import Path

import pytest

from autograde.store.gradebook import create, open_gradebook


def schema(path: Path) -> tuple[list, list]:
    with sqlite3.connect(path) as db:
        tables = sorted(db.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table'").fetchall())
        version = db.execute("SELECT version_num FROM alembic_version").fetchall()
    return tables, version


@pytest.mark.slow  # nbgrader для сравнения запускает программу alembic: секунды
def test_a_new_gradebook_has_the_schema_and_version_nbgrader_would_give_it(tmp_path, monkeypatch):
    from nbgrader.api import Gradebook

    ours, theirs = tmp_path / "ours" / "gradebook.db", tmp_path / "theirs.db"
    create(f"sqlite:///{ours}")  # папки ещё нет — создаётся
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    Gradebook(f"sqlite:///{theirs}").close()
    assert schema(ours) == schema(theirs)


def test_the_gradebook_opens_without_alembic_on_path_and_a_second_create_changes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "nothing-here"))  # так запускают .venv/bin/python без активации
    db = tmp_path / "gradebook.db"
    with open_gradebook(f"sqlite:///{db}", "course") as gb:
        gb.add_student("petrov", first_name="Пётр")
    before = schema(db)
    create(f"sqlite:///{db}")
    with open_gradebook(f"sqlite:///{db}", "course") as gb:
        assert gb.find_student("petrov").first_name == "Пётр" and schema(db) == before

"""История сдач (``autograde/intake/history.py``) напрямую, в tmp_path: какие версии хранятся и какая проверяется.

Обещания модуля: каждая версия работы сохраняется один раз, проверяется самая новая по времени
сдачи LMS (а не по порядку выгрузок), слияние двух записей одного слушателя переносит его версии,
а тексты тестов всех выпусков задания копятся, чтобы не обвинить сдавшего прошлый выпуск.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta, timezone

from unit_lab import master

from autograde.intake.history import History, releases
from autograde.intake.submissions import Submission

MSK = timezone(timedelta(hours=3))


def sub(data: bytes | None, when: datetime | None, error: str | None = None, raw_id: str = "petrov_123", notes=()):
    return Submission(raw_id, data, f"moodle.zip:{raw_id}/lab.ipynb", list(notes), error, when)


def test_each_version_is_stored_once_with_its_lms_time_in_utc(tmp_path):
    history = History(tmp_path)
    first = history.add("petrov", sub(b'{"v": 1}', datetime(2026, 10, 1, 23, 0, tzinfo=MSK), notes=["замечание"]),
                        "Пётр Петров")
    again = history.add("petrov", sub(b'{"v": 1}', datetime(2026, 10, 3, 9, 0, tzinfo=MSK)), "Пётр Петров")
    assert again == first and len(history.versions("petrov")) == 1  # та же работа из другой выгрузки — не новая
    assert first.submitted_at == "2026-10-01T20:00:00+00:00" and first.notes == ["замечание"]
    assert (first.display_id, first.raw_id, first.source) == ("Пётр Петров", "petrov_123", "moodle.zip:petrov_123/lab.ipynb")
    assert history.path("petrov", first).read_bytes() == b'{"v": 1}'
    assert sorted(p.name for p in (tmp_path / "petrov").iterdir()) == [f"{first.digest}.ipynb", f"{first.digest}.json"]


def test_the_newest_by_lms_time_is_graded_whatever_order_the_uploads_came_in(tmp_path):
    """Повторный запуск на старой выгрузке не откатывает работу назад."""
    history = History(tmp_path)
    newer = history.add("petrov", sub(b"new", datetime(2026, 10, 2, 12, 0, tzinfo=timezone.utc)), "petrov")
    older = history.add("petrov", sub(b"old", datetime(2026, 10, 1, 12, 0, tzinfo=timezone.utc)), "petrov")
    assert history.newest("petrov") == newer
    assert [v.digest for v in history.versions("petrov")] == [older.digest, newer.digest]


def test_times_in_different_zones_are_compared_as_moments(tmp_path):
    history = History(tmp_path)
    moscow = history.add("k", sub(b"a", datetime(2026, 10, 2, 2, 0, tzinfo=MSK)), "k")  # 23:00 UTC 1 октября
    utc = history.add("k", sub(b"b", datetime(2026, 10, 1, 23, 30, tzinfo=timezone.utc)), "k")
    assert history.newest("k") == utc and history.versions("k")[0] == moscow


def test_a_version_without_lms_time_is_ordered_by_when_it_was_received(tmp_path):
    history = History(tmp_path)
    first = history.add("k", sub(b"a", None), "k")
    second = history.add("k", sub(b"b", None), "k")
    assert first.submitted_at == "" and history.newest("k") == second


def test_a_broken_submission_is_a_version_too_and_has_no_notebook_file(tmp_path):
    """Битый файл — тоже сдача: её ошибка видна в строке, а следующая исправная версия её заменит."""
    history = History(tmp_path)
    broken = history.add("k", sub(None, datetime(2026, 10, 1, tzinfo=timezone.utc), error="файл не JSON"), "k")
    assert broken.error == "файл не JSON" and history.path("k", broken) is None
    assert history.add("k", sub(None, datetime(2026, 10, 1, tzinfo=timezone.utc), error="файл не JSON"), "k") == broken
    fixed = history.add("k", sub(b"{}", datetime(2026, 10, 2, tzinfo=timezone.utc)), "k")
    assert history.newest("k") == fixed


def test_a_damaged_record_is_skipped_not_fatal(tmp_path):
    history = History(tmp_path)
    good = history.add("k", sub(b"a", datetime(2026, 10, 1, tzinfo=timezone.utc)), "k")
    (tmp_path / "k" / "broken.json").write_text("{не json", encoding="utf-8")
    (tmp_path / "k" / "alien.json").write_text('{"digest": "x", "unexpected": 1}', encoding="utf-8")
    assert history.versions("k") == [good]
    assert History(tmp_path / "nothing").versions("k") == [] and History(tmp_path / "nothing").newest("k") is None


def test_keys_are_the_students_with_versions(tmp_path):
    history = History(tmp_path)
    assert history.keys() == [] and History(tmp_path / "absent").keys() == []
    for key in ("petrov", "ivanova"):
        history.add(key, sub(key.encode(), None), key)
    (tmp_path / "stray.txt").write_text("x")
    assert history.keys() == ["ivanova", "petrov"]


def test_merging_two_records_moves_every_version_and_drops_the_old_key(tmp_path):
    """``roster merge``: версии «petrov_555» переходят к petrov, общие не удваиваются, старой папки нет."""
    history = History(tmp_path)
    shared = history.add("petrov_555", sub(b"same", datetime(2026, 10, 1, tzinfo=timezone.utc)), "petrov_555")
    own = history.add("petrov_555", sub(b"later", datetime(2026, 10, 3, tzinfo=timezone.utc)), "petrov_555")
    history.add("petrov", sub(b"same", datetime(2026, 10, 1, tzinfo=timezone.utc)), "petrov")
    history.move("petrov_555", "petrov")
    assert history.keys() == ["petrov"] and not (tmp_path / "petrov_555").exists()
    assert sorted(v.digest for v in history.versions("petrov")) == sorted([shared.digest, own.digest])
    assert history.newest("petrov") == own and history.path("petrov", own).read_bytes() == b"later"
    history.move("nobody", "petrov")  # нечего переносить — ничего и не меняется
    assert history.keys() == ["petrov"]


def test_test_texts_of_every_release_are_kept_and_the_file_is_rewritten_only_on_change(tmp_path):
    path = tmp_path / "releases.json"
    lab = master()
    first = releases(path, lab)
    assert set(first) == {"setup", "test_f"}  # код тестов и ячеек преподавателя; решения — нет
    assert first["test_f"] == [lab.release_by_id["test_f"].source]  # выданный текст — без скрытых тестов
    stamp = path.stat().st_mtime_ns
    os.utime(path, ns=(stamp - 10**9, stamp - 10**9))
    assert releases(path, lab) == first and path.stat().st_mtime_ns == stamp - 10**9  # без изменений — не пишется
    lab.release_by_id["test_f"].source = "assert f(1) == 2  # исправлен"
    assert releases(path, lab)["test_f"] == [first["test_f"][0], "assert f(1) == 2  # исправлен"]
    assert json.loads(path.read_text(encoding="utf-8"))["test_f"][1] == "assert f(1) == 2  # исправлен"


def test_a_damaged_releases_file_starts_over_instead_of_failing(tmp_path):
    path = tmp_path / "releases.json"
    path.write_text("{обрыв", encoding="utf-8")
    assert releases(path, master())["test_f"] == [master().release_by_id["test_f"].source]

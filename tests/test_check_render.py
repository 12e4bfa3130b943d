"""Итог ``python -m autograde check``: слушатель видит не только «всё видимое пройдено», но и сколько баллов
ещё не проверено — скрытыми тестами и преподавателем вручную (числа с согласованными существительными)."""

from pathlib import Path

from autograde.commands.check import CheckResult, Report, render


def _report(*results):
    return Report(Path("lab.ipynb"), list(results), sandboxed=True)


def test_all_visible_passed_still_names_the_unseen_points():
    text = render(_report(CheckResult("задание 1 — видимые", "passed", 11, 11),
                          CheckResult("задание 1 — скрытые", "hidden", 0, 15),
                          CheckResult("письменный ответ: почему", "manual", 0, 4)))
    assert "Видимые тесты: 11 из 11 баллов. Ещё 15 баллов проверят скрытые тесты преподавателя и 4 — " \
           "преподаватель вручную (письменные ответы)." in text
    assert "Всё видимое пройдено." in text and "можно сдавать" not in text


def test_points_agree_with_their_noun():
    text = render(_report(CheckResult("задание 1 — видимые", "failed", 0, 2),
                          CheckResult("задание 1 — скрытые", "hidden", 0, 1)))
    assert "Видимые тесты: 0 из 2 баллов. Ещё 1 балл проверят скрытые тесты преподавателя." in text
    assert "Есть ошибки" in text

"""Число и существительное: одна функция на весь курс и сканер, который ловит несогласованность."""

import pytest
from agreement import disagreements

from minirag import MiniRagError, plural, plural_form

# выписано вручную по правилу русской грамматики: 1, 21, 101 — «документ»; 2–4, 22–24 — «документа»;
# 0, 5–20, 25–30, 111–114 — «документов»
ONE = {1, 21, 31, 41, 51, 61, 71, 81, 91, 101, 121}
FEW = {2, 3, 4, 22, 23, 24, 32, 33, 34, 42, 43, 44, 52, 53, 54, 62, 63, 64, 72, 73, 74, 82, 83, 84, 92, 93, 94,
       102, 103, 104, 122, 123, 124}


@pytest.mark.parametrize("n", range(126))
def test_plural_form_for_every_number_up_to_125(n):
    expected = "документ" if n in ONE else "документа" if n in FEW else "документов"
    assert plural_form(n, "документ", "документа", "документов") == expected
    assert plural(n, "документ", "документа", "документов") == f"{n} {expected}"


def test_fractions_take_the_form_for_two_and_bad_numbers_are_refused():
    assert plural(2.5, "балл", "балла", "баллов") == "2.5 балла"
    assert plural(3.0, "балл", "балла", "баллов") == "3 балла"
    for bad in (float("nan"), "5", True):
        with pytest.raises(MiniRagError):
            plural_form(bad, "балл", "балла", "баллов")


def test_scanner_finds_what_the_helper_would_have_fixed():
    found = disagreements("Всего 33 баллов, в корпусе 42 документов, 182 слов.")
    assert [f.split("ждали ")[1] for f in found] == ["«33 балла»", "«42 документа»", "«182 слова»"]
    assert "33 баллов" in found[0]
    fine = ("Всего 33 балла, 42 документа, 182 слова, 11 символов, 1 работа; один из 21 документа, "
            "из 3 документов, лучше у 3 запросов и у 21 запроса, более 5 секунд, с 5 документами, 2.5 балла.")
    assert disagreements(fine) == []

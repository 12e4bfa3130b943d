"""Правило авторов проверок (src/autograde/README.md, «Правило для авторов проверок»): ожидаемое значение
скрытого теста не считается из результата функции слушателя — иначе слушатель, который знает, когда его
зовёт судья, подгоняет под свою ошибку и ответ, и «ожидание». Разбор — tests/lab_rules.py."""

import pytest
from lab_rules import ROOT, cell_violations, student_functions, violations

LABS = sorted(p.name for p in (ROOT / "solutions").glob("lab0*"))


def test_every_lab_is_reviewed():
    assert len(LABS) == 6
    for lab in LABS:
        assert student_functions(ROOT / "solutions" / lab / f"{lab}.ipynb"), f"{lab}: не нашлось функций слушателя"


@pytest.mark.parametrize("lab", LABS)
def test_no_test_cell_builds_its_expected_value_from_student_output(lab):
    found = violations(ROOT / "solutions" / lab)
    assert not found, "Ожидаемое значение считается из результата функции слушателя:\n" + "\n".join(map(str, found))


# прежняя проверка bm25_top (лаб. 5): ожидание строилось по оценкам bm25_scores слушателя
OWN_SCORES = '''
def _check_top(query, n):
    scores = [float(s) for s in bm25_scores(tokenize(query), CHUNK_TOKENS)]
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    want = [KEYS[i] for i in order if scores[i] > 0][:n]
    got = bm25_top(query, n)
    assert got == want
'''
CHAINED = '''
_bm25 = bm25_top(_text, 20)
_want = [key for key, _ in rrf([cosine_top(_text, 20), _bm25], 60)]
'''
IN_EXPECTED_CALL = '''
_a, _b = cosine(x, y), 3
assert _a == _expected_cosine(normalize(x), y)
'''
CONCEDED = '''
_scores = reference(q) if labkit.passed("bm25_hidden") else bm25_scores(q, DOCS)
_want = sorted(_scores)
'''
JUDGE_OWNED = '''
_got, _want = cosine(_a, _b), _expected_cosine(_a, _b)
assert abs(_got - _want) <= 1e-6
'''


@pytest.mark.parametrize("source, bad", [(OWN_SCORES, True), (CHAINED, True), (IN_EXPECTED_CALL, True),
                                         (CONCEDED, False), (JUDGE_OWNED, False)])
def test_the_review_tells_student_output_from_judge_owned_inputs(source, bad):
    students = {"bm25_scores", "bm25_top", "rrf", "cosine", "normalize"}
    assert bool(cell_violations(source, students)) is bad


def test_the_written_answer_stub_of_the_config_is_the_one_labkit_and_check_look_for():
    """Заготовку письменного ответа пишет nbgrader (ClearSolutions.text_stub), ищут её labkit и check — одна строка."""
    from autograde.course import load_config
    from labkit import STUB

    assert load_config(ROOT).ClearSolutions.text_stub.startswith(STUB)
    for lab in LABS:
        released = (ROOT / "labs" / lab / f"{lab}.ipynb").read_text(encoding="utf-8")
        assert STUB in released, f"{lab}: в выданной версии нет заготовки «{STUB}»"

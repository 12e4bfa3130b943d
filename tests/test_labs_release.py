"""Выданные лабораторные и настоящий nbgrader: labs/ — ровно то, что nbgrader генерирует из solutions/
(``python -m autograde release``), в labs/ нет ни решений, ни скрытых тестов; устройство ноутбуков (баллы,
заголовки, русские сообщения); ``nbgrader autograde`` во временной копии курса: решение набирает все
автоматические баллы, нетронутая выданная версия — не больше пятой части, удалённая ячейка с тестом
возвращается; данные лабораторной 5 — то, что считает minirag; числа и существительные согласованы.

nbgrader гоняется один раз за сессию (фикстура ``course``) во временной папке: в репозитории
не появляется ни gradebook.db, ни проверенных работ.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import re
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from conftest import ROOT
from lab_notebooks import LABS, SECRET_MARKERS, load, nbgrader, release_nb, run, solution_nb, source
from learner_class import ALL as LEARNER_CLASS
from learner_class import notebook as learner_notebook

HONEST_LEARNERS = [learner for learner in LEARNER_CLASS if learner.expect_full]


# ---------- фикстура: временный каталог курса, выдача и автопроверка nbgrader ----------
STUDENTS = ("solution", "untouched")
DELETED_CELL = ("lab01_mini_rag", "top_k_visible")  # эту ячейку с тестом «слушатель» удалит


@pytest.fixture(scope="session")
def course(tmp_path_factory):
    """Копия курса во временной папке: release нашей командой, три «слушателя» (решение, нетронутая выдача,
    удалённая ячейка тестов) и честные работы класса слушателей (tests/learners), nbgrader autograde."""
    root = tmp_path_factory.mktemp("course")
    shutil.copy2(ROOT / "nbgrader_config.py", root)
    shutil.copytree(ROOT / "solutions", root / "solutions",
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    released = run([sys.executable, "-m", "autograde", "release"], cwd=root)
    assert released.returncode == 0, f"release упал:\n{released.stdout}\n{released.stderr}"

    submitted = root / "autograde" / "submitted"
    for lab in LABS:
        for student, origin in (("solution", root / "solutions"), ("untouched", root / "labs")):
            target = submitted / student / lab
            target.mkdir(parents=True)
            shutil.copy2(origin / lab / f"{lab}.ipynb", target)
    for learner in HONEST_LEARNERS:  # Validate честных работ класса слушателей — в том же запуске nbgrader
        target = submitted / f"learner_{learner.name}" / learner.lab
        target.mkdir(parents=True)
        (target / f"{learner.lab}.ipynb").write_bytes(learner_notebook(learner))
    lab, grade_id = DELETED_CELL
    notebook = load(root / "solutions" / lab / f"{lab}.ipynb")
    notebook["cells"] = [c for c in notebook["cells"] if nbgrader(c).get("grade_id") != grade_id]
    (submitted / "deleter" / lab).mkdir(parents=True)
    (submitted / "deleter" / lab / f"{lab}.ipynb").write_text(json.dumps(notebook, ensure_ascii=False), encoding="utf-8")

    def autograde(lab: str) -> tuple[Path, str]:
        """nbgrader autograde одной лабораторной в своей копии курса (своя база оценок): две идут параллельно."""
        lab_root = root.parent / f"{root.name}-{lab}"
        shutil.copytree(root, lab_root)
        result = run([sys.executable, "-m", "nbgrader", "autograde", lab, "--create", "--log-level=WARN"], cwd=lab_root)
        return lab_root, result.stdout + result.stderr + ("" if result.returncode == 0 else f"\nкод выхода {result.returncode}")

    with ThreadPoolExecutor(max_workers=2) as pool:
        done = dict(zip(LABS, pool.map(autograde, LABS)))
    logs = {lab: log for lab, (_, log) in done.items()}
    for lab, (lab_root, log) in done.items():
        assert "\nкод выхода" not in log, f"nbgrader autograde {lab} упал:\n{log[-4000:]}"
        for graded in (lab_root / "autograde" / "autograded").glob(f"*/{lab}"):  # проверенные ноутбуки — в общий курс
            shutil.copytree(graded, root / "autograde" / "autograded" / graded.parent.name / lab)

    from nbgrader.api import Gradebook

    scores = {}
    for lab in LABS:
        with Gradebook(f"sqlite:///{done[lab][0] / 'autograde' / 'gradebook.db'}") as gb:
            for submission in gb.assignment_submissions(lab):
                student = submission.student.id
                grades = [g for nb in submission.notebooks for g in nb.grades]
                scores[lab, student] = {
                    "auto": sum(g.auto_score or 0 for g in grades if g.cell_type == "code"),
                    "max_auto": sum(g.max_score for g in grades if g.cell_type == "code"),
                    "max_manual": sum(g.max_score for g in grades if g.cell_type == "markdown"),
                    "failed": sorted(g.name for g in grades if g.cell_type == "code" and (g.auto_score or 0) < g.max_score),
                }
    return {"root": root, "scores": scores, "logs": logs}


# ---------- labs/ сгенерированы из solutions/ ----------
def test_every_lab_has_a_solution_and_a_release():
    from autograde.course import lab_names

    assert lab_names(ROOT) == LABS
    for lab in LABS:
        assert (ROOT / "solutions" / lab / f"{lab}.ipynb").is_file()
        assert (ROOT / "labs" / lab / f"{lab}.ipynb").is_file(), f"нет labs/{lab}: запусти python -m autograde release"
    assert sorted(p.name for p in (ROOT / "labs").iterdir()) == LABS, "в labs/ есть папки, которых нет в solutions/"


@pytest.mark.slow
def test_labs_are_exactly_what_nbgrader_generates(course):
    generated = course["root"] / "labs"
    for lab in LABS:
        ours = sorted(p.relative_to(ROOT / "labs") for p in (ROOT / "labs" / lab).rglob("*") if p.is_file())
        theirs = sorted(p.relative_to(generated) for p in (generated / lab).rglob("*") if p.is_file())
        assert ours == theirs, f"{lab}: файлы в labs/ и в выдаче nbgrader разные"
        for path in ours:
            assert (ROOT / "labs" / path).read_bytes() == (generated / path).read_bytes(), (
                f"labs/{path} не совпадает с тем, что генерирует nbgrader из solutions/: "
                "запусти python -m autograde release и не правь labs/ руками")


def _split_by_markers(cell_source: str) -> tuple[list[str], list[str]]:
    """Строки ячейки внутри маркеров решений и скрытых тестов nbgrader и вне их."""
    inside_lines, outside_lines, inside = [], [], False
    for line in cell_source.splitlines():
        if "BEGIN SOLUTION" in line or "BEGIN HIDDEN TESTS" in line:
            inside = True
        elif "END SOLUTION" in line or "END HIDDEN TESTS" in line:
            inside = False
        else:
            (inside_lines if inside else outside_lines).append(line)
    return inside_lines, outside_lines


def _secret_lines(cell_source: str) -> list[str]:
    """Содержательные строки решений и скрытых тестов (внутри маркеров nbgrader)."""
    inside, _ = _split_by_markers(cell_source)
    return [line.strip() for line in inside if len(line.strip()) >= 25 and not line.strip().startswith("#")]


def _public_lines(cell_source: str) -> str:
    """Строки ячейки вне маркеров решений и скрытых тестов — их слушатель видит и так."""
    return "\n".join(_split_by_markers(cell_source)[1])


@pytest.mark.parametrize("lab", LABS)
def test_release_has_no_solutions_and_no_hidden_tests(lab):
    released = (ROOT / "labs" / lab / f"{lab}.ipynb").read_text(encoding="utf-8")
    for marker in SECRET_MARKERS:
        assert marker not in released, f"labs/{lab}: в выданной версии остался маркер {marker}"
    notebook = release_nb(lab)
    release_text = "\n".join(source(c) for c in notebook["cells"])
    secrets = [line for c in solution_nb(lab)["cells"] for line in _secret_lines(source(c))]
    assert secrets, f"{lab}: в решении не нашлось ни одного решения и скрытого теста — разметка сломана?"
    public = "\n".join(_public_lines(source(c)) for c in solution_nb(lab)["cells"])  # то, что видно и так
    leaked = [line for line in secrets if line in release_text and line not in public]
    assert not leaked, f"labs/{lab}: в выданную версию попали строки решения или скрытых тестов: {leaked[:3]}"
    written = [source(c) for c in solution_nb(lab)["cells"] if nbgrader(c).get("solution") and c["cell_type"] == "markdown"]
    for answer in written:
        assert answer.strip()[:80] not in release_text, f"labs/{lab}: образцовый письменный ответ попал в выданную версию"
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code":
            assert not cell["outputs"] and cell["execution_count"] is None, f"labs/{lab}: у ячеек есть выходы"


# ---------- устройство ноутбуков ----------
@pytest.mark.parametrize("lab", LABS)
def test_lab_structure_tests_have_points_titles_and_russian_messages(lab):
    cells = solution_nb(lab)["cells"]
    assert cells[0]["cell_type"] == "markdown" and nbgrader(cells[0]).get("locked"), "первая ячейка — заблокированный заголовок"
    from minirag import plural

    header = source(cells[0])
    auto = sum(nbgrader(c)["points"] for c in cells if nbgrader(c).get("grade") and c["cell_type"] == "code")
    manual = sum(nbgrader(c)["points"] for c in cells if nbgrader(c).get("grade") and c["cell_type"] == "markdown")
    points = lambda n: plural(n, "балл", "балла", "баллов")  # noqa: E731
    assert f"**{points(auto)} — автопроверка" in header, f"{lab}: заголовок должен назвать «{points(auto)} — автопроверка»"
    assert f"**{points(manual)} — вручную" in header, f"{lab}: заголовок должен назвать «{points(manual)} — вручную»"
    assert f"Всего {points(auto + manual)}" in header, f"{lab}: заголовок должен назвать «Всего {points(auto + manual)}»"
    assert "Время." in header and "Цели." in header
    assert manual > 0, f"{lab}: нет письменного ответа с ручной оценкой"
    for i, cell in enumerate(cells):
        meta = nbgrader(cell)
        if cell["cell_type"] == "markdown" and not meta.get("solution"):
            assert meta.get("locked"), f"{lab}: инструкция в ячейке {i} не заблокирована"
        if meta.get("grade") and cell["cell_type"] == "code":
            text = source(cell)
            assert text.startswith("# Проверка:"), f"{lab}: ячейка с тестом {meta['grade_id']} начинается не с «# Проверка: …»"
            assert meta.get("locked") and meta.get("points", 0) > 0
            previous = nbgrader(cells[i - 1])
            assert previous.get("solution") or previous.get("grade"), (
                f"{lab}: перед тестом {meta['grade_id']} должна стоять ячейка решения или другого теста — "
                "иначе nbgrader (add_missing_cells) не вернёт удалённый тест на место")
            code = re.sub(r"^\s*### (BEGIN|END) HIDDEN TESTS\s*$", "", text, flags=re.M)
            for node in ast.walk(ast.parse(code)):
                if isinstance(node, ast.Assert):
                    assert node.msg is not None, f"{lab}: в {meta['grade_id']} assert без сообщения (строка {node.lineno})"
                    message = ast.unparse(node.msg)
                    assert re.search(r"[а-яё]", message, re.I), f"{lab}: сообщение assert в {meta['grade_id']} не по-русски"
        if meta.get("grade") and cell["cell_type"] == "markdown":
            companion = [c for c in cells if nbgrader(c).get("grade") and c["cell_type"] == "code"
                         and f'check_written("{meta["grade_id"]}"' in source(c)]
            assert companion, f"{lab}: у письменного ответа {meta['grade_id']} нет автоматической проверки наличия"
            assert 1 <= nbgrader(companion[0])["points"] <= 2
    hidden = [c for c in cells if "BEGIN HIDDEN TESTS" in source(c)]
    visible = [c for c in cells if nbgrader(c).get("grade") and c["cell_type"] == "code" and c not in hidden]
    assert hidden and visible, f"{lab}: нужны и видимые, и скрытые тесты"


def test_labs_page_states_the_points_of_every_lab():
    page = (ROOT / "book" / "labs.md").read_text(encoding="utf-8")
    for lab in LABS:
        assert f"({lab})=" in page, f"на странице book/labs.md нет метки ({lab})= — на неё ссылаются главы"
        cells = solution_nb(lab)["cells"]
        auto = sum(nbgrader(c)["points"] for c in cells if nbgrader(c).get("grade") and c["cell_type"] == "code")
        manual = sum(nbgrader(c)["points"] for c in cells if nbgrader(c).get("grade") and c["cell_type"] == "markdown")
        section = page.split(f"({lab})=", 1)[1].split("\n(lab", 1)[0]
        assert f"**Баллы:** {auto} автоматически и {manual} вручную" in section, (
            f"book/labs.md: у {lab} должно быть «**Баллы:** {auto} автоматически и {manual} вручную»")
    assert "python -m autograde check" in page and "Validate" in page and "python -m autograde release" in page


# лабораторные «руками»: чего не импортируют их решения и подготовка (то, что слушатель пишет сам)
BY_HAND = {"lab01_mini_rag": ("minirag",), "lab05_bm25_hybrid": ("minirag", "rank_bm25", "bm25s")}


@pytest.mark.parametrize("lab", list(BY_HAND))
def test_by_hand_labs_import_no_library_they_teach_and_grade_without_minirag(lab):
    from autograde.course import Course

    assert lab in Course.load(ROOT).settings.no_reference_labs, (
        f"{lab} — лабораторная «руками»: добавь её в c.Grading.no_reference_labs, чтобы при проверке minirag в ядре не было")
    banned = "|".join(BY_HAND[lab])
    for cell in solution_nb(lab)["cells"]:
        meta = nbgrader(cell)
        if meta.get("solution") or (meta.get("locked") and not meta.get("grade")):
            assert not re.search(rf"^\s*(import|from)\s+({banned})\b", source(cell), re.M), (
                f"{lab}: ячейка {meta.get('grade_id')} импортирует {banned}, а лабораторная — без этих библиотек")


def test_lab05_data_is_what_minirag_computes():
    """Чанки, запросы и выдачи косинуса в lab05_data.json не разошлись с библиотекой и демо-корпусом."""
    spec = importlib.util.spec_from_file_location("make_lab_data", ROOT / "solutions" / "make_lab_data.py")
    make_lab_data = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(make_lab_data)
    stored = json.loads(make_lab_data.LAB05_DATA.read_text(encoding="utf-8"))
    assert stored == json.loads(json.dumps(make_lab_data.lab05_data())), (
        "solutions/lab05_bm25_hybrid/lab05_data.json устарел: запусти python solutions/make_lab_data.py, "
        "затем python -m autograde release lab05_bm25_hybrid")
    assert make_lab_data.LAB05_DATA.read_text(encoding="utf-8") == make_lab_data.dumps(stored)


# ---------- nbgrader autograde ----------
@pytest.mark.slow
@pytest.mark.parametrize("lab", LABS)
def test_solution_earns_every_autograded_point(course, lab):
    score = course["scores"][lab, "solution"]
    assert score["max_auto"] > 0 and score["max_manual"] > 0
    assert score["auto"] == score["max_auto"], (
        f"{lab}: решение набрало {score['auto']} из {score['max_auto']}; упали {score['failed']}\n"
        f"{course['logs'][lab][-3000:]}")


@pytest.mark.slow
@pytest.mark.parametrize("lab", LABS)
def test_untouched_release_earns_at_most_a_fifth(course, lab):
    score = course["scores"][lab, "untouched"]
    assert score["max_auto"] == course["scores"][lab, "solution"]["max_auto"]
    assert score["auto"] <= score["max_auto"] / 5, f"{lab}: нетронутая выданная версия набрала {score['auto']} из {score['max_auto']}"


@pytest.mark.slow
def test_validate_gives_every_honest_learner_every_autograded_point(course):
    """Validate в JupyterLab исполняет тесты в ядре слушателя (как ``nbgrader autograde``); честной работе класса
    слушателей он обязан дать тот же итог, что судья (``test_learners.py``): все автоматические баллы."""
    lost = {f"{learner.lab}:{learner.name}": course["scores"][learner.lab, f"learner_{learner.name}"]["failed"]
            for learner in HONEST_LEARNERS}
    assert len(lost) >= 3 * len(LABS)
    assert {name: cells for name, cells in lost.items() if cells} == {}


@pytest.mark.slow
def test_autograde_restores_a_deleted_test_cell(course):
    lab, grade_id = DELETED_CELL
    score = course["scores"][lab, "deleter"]
    assert score["auto"] == score["max_auto"], f"удалённый тест не вернулся или упал: {score['failed']}"
    graded = load(course["root"] / "autograde" / "autograded" / "deleter" / lab / f"{lab}.ipynb")
    restored = [c for c in graded["cells"] if nbgrader(c).get("grade_id") == grade_id]
    assert len(restored) == 1 and "nbgrader вернул" in source(restored[0])




# ---------- число и существительное согласованы ----------
@pytest.mark.parametrize("lab", LABS)
def test_lab_texts_agree_in_number(lab):
    from agreement import disagreements

    for kind in ("solutions", "labs"):
        notebook = load(ROOT / kind / lab / f"{lab}.ipynb")
        found = [f"{nbgrader(c).get('grade_id')}: {d}" for c in notebook["cells"] for d in disagreements(source(c))]
        assert not found, f"{kind}/{lab}: число не согласовано с существительным: {found}"


@pytest.mark.slow
@pytest.mark.parametrize("lab", LABS)
def test_lab_outputs_agree_in_number(course, lab):
    """Что напечатали ячейки и сообщения тестов при автопроверке решения и нетронутой версии."""
    from agreement import disagreements

    for student in STUDENTS:
        graded = load(course["root"] / "autograde" / "autograded" / student / lab / f"{lab}.ipynb")
        texts = [output.get("text", "") if isinstance(output.get("text", ""), str) else "".join(output["text"])
                 for cell in graded["cells"] for output in cell.get("outputs", []) if output.get("output_type") == "stream"]
        texts += [output.get("evalue", "") for cell in graded["cells"] for output in cell.get("outputs", [])
                  if output.get("output_type") == "error"]
        found = [d for text in texts for d in disagreements(text)]
        assert not found, f"{student}/{lab}: число не согласовано с существительным: {found}"

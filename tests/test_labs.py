"""Лабораторные nbgrader: выданные версии, автопроверка, самопроверка и проверки самих заданий.

Что здесь проверяется:
* labs/ — ровно то, что nbgrader генерирует из solutions/ (``python -m autograde release``),
  и в labs/ нет ни решений, ни скрытых тестов;
* настоящий ``nbgrader autograde`` во временной копии каталога курса: решение набирает все
  автоматические баллы, нетронутая выданная версия — не больше пятой части, удалённая ячейка
  с тестом возвращается (add_missing_cells);
* ``python -m autograde check`` пропускает решения и валит выданные версии понятными сообщениями;
* проверки лабораторных ловят то, что должны: корпус из 19 документов, повтор id, документ
  в 150 символов, копию демо-корпуса, документ из одного предложения (лаб. 2), «провал», который
  на деле находится, и примеры из выдуманных слов (лаб. 4) — и не наказывают честную работу:
  косинус, посчитанный циклом, на пороге (лаб. 1), честный отказ, когда найденный чанк нужного
  документа не содержит ответа (лаб. 2); настоящие ошибки в BM25, RRF, проверке ответа и пороге
  теряют баллы с сообщением, которое их называет, а другие честные реализации — нет (лаб. 5 и 6);
* данные лабораторной 5 (lab05_data.json) — ровно то, что считает minirag; «ручные» лабораторные не
  импортируют библиотек, которые пишут руками, и при проверке minirag в их ядре нет;
* письменный ответ читается только из ноутбука под проверкой, не из соседнего файла (labkit);
* в текстах и выводе лабораторных числа согласованы с существительными («33 балла»).

nbgrader гоняется один раз за сессию (фикстура ``course``) во временной папке: в репозитории
не появляется ни gradebook.db, ни проверенных работ.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from learner_class import ALL as LEARNER_CLASS
from learner_class import notebook as learner_notebook

ROOT = Path(__file__).resolve().parents[1]
HONEST_LEARNERS = [learner for learner in LEARNER_CLASS if learner.expect_full]
LABS = ["lab01_mini_rag", "lab02_own_docs", "lab03_k3_vs_k5", "lab04_hash_failures", "lab05_bm25_hybrid",
        "lab06_grounded_answers"]
SECRET_MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")
WORK_DIRS = ("submitted", "autograded", "feedback", "grades", "work", "solution", "source_with_tests")


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def nbgrader(cell: dict) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def solution_nb(lab: str) -> dict:
    return load(ROOT / "solutions" / lab / f"{lab}.ipynb")


def release_nb(lab: str) -> dict:
    return load(ROOT / "labs" / lab / f"{lab}.ipynb")


def run(args: list[str], cwd: Path, timeout: int = 600, path: str = "/usr/local/bin:/usr/bin:/bin") -> subprocess.CompletedProcess:
    """Команда как у преподавателя: окружение не активировано. nbgrader autograde здесь — то же, что делает
    Validate в JupyterLab (тесты в ядре слушателя), поэтому запрет курса на него снят (AUTOGRADE_ALLOW_NBGRADER)."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV",)}
    env.update(PATH=path, AUTOGRADE_ALLOW_NBGRADER="1")
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=env)


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


# ---------- самопроверка: python -m autograde check ----------
def check(path: Path) -> subprocess.CompletedProcess:
    return run([sys.executable, "-m", "autograde", "check", str(path)], cwd=ROOT)


@pytest.fixture(scope="session")
def checks():
    """Самопроверка каждого решения и каждой выданной версии — параллельно по две."""
    paths = [ROOT / kind / lab / f"{lab}.ipynb" for lab in LABS for kind in ("solutions", "labs")]
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(check, paths))
    return {(path.parts[-3], path.parts[-2]): result for path, result in zip(paths, results)}


@pytest.mark.slow
@pytest.mark.parametrize("lab", LABS)
def test_checker_passes_the_solution(checks, lab):
    result = checks["solutions", lab]
    assert result.returncode == 0, f"{lab}: самопроверка решения не прошла:\n{result.stdout}\n{result.stderr}"
    assert "[пройдено]" in result.stdout and "[ошибка]" not in result.stdout and "[не сделано]" not in result.stdout
    assert "Всё видимое пройдено" in result.stdout and "проверят скрытые тесты преподавателя" in result.stdout


@pytest.mark.slow
@pytest.mark.parametrize("lab", LABS)
def test_checker_fails_the_untouched_release_with_readable_messages(checks, lab):
    result = checks["labs", lab]
    assert result.returncode == 1, f"{lab}: самопроверка нетронутой версии должна выйти с кодом 1:\n{result.stdout}\n{result.stderr}"
    out = result.stdout
    assert "[не сделано]" in out and "удали raise NotImplementedError()" in out
    assert "[скрыто]" in out, "скрытые тесты должны быть названы, а не засчитаны"
    assert "ТВОЙ ОТВЕТ ЗДЕСЬ" in out, "несделанный письменный ответ должен быть виден"
    assert "[ошибка]" not in out, f"{lab}: в нетронутой версии всё — «не сделано», а не ошибка:\n{out}"
    assert "Traceback" not in out and "Внимание" not in out, out
    assert "Итог:" in out and "[пройдено]" not in out


@pytest.mark.slow
def test_checker_shows_the_assertion_message_of_a_wrong_solution(tmp_path):
    lab = "lab01_mini_rag"
    notebook = release_nb(lab)
    for cell in notebook["cells"]:
        if nbgrader(cell).get("grade_id") == "l2_normalize":
            cell["source"] = "def l2_normalize(x):\n    x = np.asarray(x, dtype=float)\n    return x / np.linalg.norm(x, axis=-1, keepdims=True)\n"
    path = tmp_path / f"{lab}.ipynb"
    path.write_text(json.dumps(notebook, ensure_ascii=False), encoding="utf-8")
    result = check(path)
    assert result.returncode == 1
    line = next(line for line in result.stdout.splitlines() if "l2_normalize — видимые" in line)
    assert line.startswith("[ошибка]"), result.stdout
    assert "дала nan" in result.stdout and "Нулевой вектор должен остаться нулевым" in result.stdout


def test_checker_without_a_sandbox_says_why_and_still_checks(tmp_path):
    """Без bwrap (или с закрытой папкой Python под root) самопроверка идёт обычными процессами и называет
    причину, а не гадает «bubblewrap не найден»."""
    lab = "lab01_mini_rag"
    (tmp_path / "bin").mkdir()  # PATH без bwrap
    result = run([sys.executable, "-m", "autograde", "check", str(ROOT / "solutions" / lab / f"{lab}.ipynb")],
                 cwd=ROOT, path=str(tmp_path / "bin"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "без песочницы, обычными процессами" in result.stdout
    assert "Почему без песочницы: Не найден bubblewrap (bwrap)" in result.stdout
    assert "Всё видимое пройдено" in result.stdout and "проверят скрытые тесты преподавателя" in result.stdout


def test_checker_reports_a_missing_notebook_with_exit_code_2(tmp_path):
    result = check(tmp_path / "нет.ipynb")
    assert result.returncode == 2 and "Нет ноутбука" in result.stderr


# ---------- проверки лабораторных ловят то, что должны ----------
def lab_cells(lab: str) -> dict[str, str]:
    """grade_id → код ячейки решения (с решениями и скрытыми тестами)."""
    return {nbgrader(c)["grade_id"]: source(c) for c in solution_nb(lab)["cells"]
            if c["cell_type"] == "code" and nbgrader(c).get("grade_id")}


def run_until(lab: str, last: str, replace: dict[str, str] | None = None) -> dict:
    """Исполнить в этом процессе код ячеек лабораторной по порядку до ячейки ``last`` включительно.

    ``replace`` — свой код вместо ячеек решения: grade_id → код (как его написал бы слушатель).
    """
    module = types.ModuleType(f"lab_{lab}")  # dataclasses ищут модуль класса в sys.modules
    sys.modules[module.__name__] = module
    namespace = module.__dict__
    for grade_id, code in lab_cells(lab).items():
        if nbgrader_is_test(lab, grade_id):
            continue
        code = (replace or {}).get(grade_id, code)
        exec(compile(code, f"{lab}:{grade_id}", "exec"), namespace)
        if grade_id == last:
            return namespace
    raise KeyError(last)


def nbgrader_is_test(lab: str, grade_id: str) -> bool:
    return any(nbgrader(c).get("grade_id") == grade_id and nbgrader(c).get("grade") for c in solution_nb(lab)["cells"])


def run_check(lab: str, namespace: dict, grade_id: str) -> None:
    exec(compile(lab_cells(lab)[grade_id], f"{lab}:{grade_id}", "exec"), namespace)


# лаб. 1: честная работа не теряет баллов, ошибка теряет — с сообщением, которое её называет
LOOP_SEARCH = """
def search(query, docs, k=3, threshold=None):
    rows = [(doc, n, text) for doc in docs for n, text in enumerate(chunk_text(doc["text"]), start=1)]
    q = embed(query)
    q_len = sum(x * x for x in q) ** 0.5
    scores = []
    for _, _, text in rows:
        v = embed(text)
        v_len = sum(x * x for x in v) ** 0.5
        scores.append(sum((a / v_len) * (b / q_len) for a, b in zip(v, q)) if v_len and q_len else 0.0)
    return [Hit(rank, float(scores[i]), rows[i][0]["id"], rows[i][1], rows[i][0]["title"], rows[i][2])
            for rank, i in enumerate(top_k(scores, k, threshold), start=1)]
"""


def test_lab1_a_cosine_computed_by_a_loop_passes_the_threshold():
    """Цикл даёт 0.19999999999999993 там, где истинный косинус — ровно 0.2 (порог 0.2): допуск 1e-9 это принимает."""
    namespace = run_until("lab01_mini_rag", "search", replace={"search": LOOP_SEARCH})
    hits = namespace["search"]("потерял пропуск", namespace["DOCS"], k=2, threshold=0.2)
    assert [h.doc_id for h in hits] == ["pass"] and hits[0].score < 0.2, "пример перестал быть пограничным"
    for grade_id in ("search_visible", "search_hidden"):
        run_check("lab01_mini_rag", namespace, grade_id)


LAB1_BUGS = {
    "строгое > на пороге": ("top_k", """
def top_k(scores, k, threshold=None):
    passed = [i for i, s in enumerate(scores) if threshold is None or s > threshold]
    return sorted(passed, key=lambda i: (-float(scores[i]), i))[:k]
""", "top_k_hidden", "равная порогу, проходит"),
    "порог без допуска": ("top_k", """
def top_k(scores, k, threshold=None):
    passed = [i for i, s in enumerate(scores) if threshold is None or s >= threshold]
    return sorted(passed, key=lambda i: (-float(scores[i]), i))[:k]
""", "top_k_visible", "threshold - SCORE_TOLERANCE"),
    "ничья — больший индекс": ("top_k", """
def top_k(scores, k, threshold=None):
    passed = [i for i, s in enumerate(scores) if threshold is None or s >= threshold - SCORE_TOLERANCE]
    return sorted(passed, key=lambda i: (-float(scores[i]), -i))[:k]
""", "top_k_hidden", "ничьей раньше идёт меньший индекс"),
    "меняет вход": ("l2_normalize", """
def l2_normalize(x):
    x = np.asarray(x, dtype=float)
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    np.divide(x, norms, out=x, where=norms > 0)
    return x
""", "l2_normalize_hidden", "изменила входной массив"),
    "ссылка после точки не приклеена": ("check_citations", """
CITATION_RE = re.compile(r"\\[(\\d+(?:\\s*,\\s*\\d+)*)\\]")


def check_citations(answer, hits):
    cited = [int(n) for group in CITATION_RE.findall(answer) for n in group.split(",")]
    unknown = tuple(sorted({n for n in cited if not 1 <= n <= len(hits)}))
    core = REFUSAL.rstrip(".").lower()
    claims = [s for s in split_sentences(answer) if s.rstrip(".!…").strip().lower() != core]
    uncited = tuple(c for c in claims if not CITATION_RE.search(c))
    ok = not unknown and not uncited and (bool(claims) or core in answer.lower())
    return CitationReport(ok, tuple(dict.fromkeys(cited)), unknown, uncited)
""", "check_citations_hidden", "uncited"),
}


@pytest.mark.parametrize("bug", list(LAB1_BUGS))
def test_lab1_a_real_bug_loses_points_with_a_message_that_names_it(bug):
    grade_id, code, failing, message = LAB1_BUGS[bug]
    namespace = run_until("lab01_mini_rag", "search", replace={grade_id: code})
    with pytest.raises(AssertionError, match=re.escape(message)):
        run_check("lab01_mini_rag", namespace, failing)


def test_lab1_a_dropped_last_chunk_is_named_as_lost_text():
    code = lab_cells("lab01_mini_rag")["chunk_text"]
    dropped = code.replace("    if start is not None:\n        chunks.append(text[start:end])\n    return chunks",
                           "    return chunks")
    assert dropped != code
    namespace = run_until("lab01_mini_rag", "chunk_text", replace={"chunk_text": dropped})
    with pytest.raises(AssertionError, match="текст потерян"):
        run_check("lab01_mini_rag", namespace, "chunk_text_hidden")


def test_lab1_the_long_word_leftover_rule_is_shown_by_a_visible_test():
    """Прочтение «остаток слова — отдельный кусок» задание исключает словами и видимым примером."""
    namespace = run_until("lab01_mini_rag", "chunk_text")
    reference = namespace["chunk_text"]

    def leftover_alone(text, max_chars=220, overlap=0):
        return ["Сверхдлинн", "оеслово", "и ещё раз."] if text == "Сверхдлинноеслово и ещё раз." else reference(text, max_chars, overlap)

    namespace["chunk_text"] = leftover_alone
    with pytest.raises(AssertionError, match="остаток начинает новый кусок"):
        run_check("lab01_mini_rag", namespace, "chunk_text_visible")


# лаб. 2: корпус по правилам задания, честный отказ не наказывается
def _lab2_variants():
    from minirag import DEMO_DOCS, Document

    def replace(docs, i, **changes):
        doc = docs[i]
        fields = {"id": doc.id, "title": doc.title, "text": doc.text, **changes}
        return [*docs[:i], Document(fields["id"], fields["title"], fields["text"]), *docs[i + 1:]]

    one_sentence = ("Мастерская принимает велосипеды в ремонт каждый день кроме понедельника с десяти утра и до "
                    "восьми вечера а по субботам работает дежурный механик который чинит только проколы и цепи "
                    "и ничего не заказывает у поставщиков")
    return {
        "19 документов": (lambda docs: docs[:19], "docs_shape", "В DOCS 19 документов, нужно ровно 20"),
        "21 документ": (lambda docs: docs + [replace(docs, 0, id="spica-extra")[0]], "docs_shape", "В DOCS 21 документ, нужно"),
        "повтор id": (lambda docs: replace(docs, 1, id=docs[0].id), "docs_shape", "id повторяются"),
        "150 символов": (lambda docs: replace(docs, 3, text=docs[3].text[:150]), "docs_lengths", "150 символов, нужно от 200"),
        "копия демо-корпуса": (lambda docs: list(DEMO_DOCS[:20]), "docs_original", "взяты из демо-корпуса"),
        "почти-дубликат": (lambda docs: replace(docs, 5, text=docs[4].text + " Это правило действует с весны."),
                           "docs_original", "почти одинаковые"),
        "номер вместо id": (lambda docs: replace(docs, 2, id="doc3"), "docs_shape", "просто номер по порядку"),
        "хеш вместо id": (lambda docs: replace(docs, 2, id="note-3f9a0c77be21d4"), "docs_hidden", "похож на случайный хеш"),
        "одно предложение": (lambda docs: replace(docs, 6, text=one_sentence), "docs_hidden", "нужно хотя бы 2"),
        "повтор заголовка": (lambda docs: replace(docs, 7, title=docs[8].title.upper()), "docs_hidden", "Заголовки повторяются"),
    }


LAB2_CHECKS = ("docs_shape", "docs_lengths", "docs_original", "docs_hidden")


def test_lab2_the_document_rules_of_hidden_tests_are_stated_in_the_task():
    task = source(next(c for c in solution_nb("lab02_own_docs")["cells"] if nbgrader(c).get("grade_id") == "task1"))
    for rule in ("200 до 1000 символов", "двух предложений", "25 слов", "у каждого документа свой",
                 "шестнадцатеричных", "номер по порядку", "0,5"):
        assert rule in task, f"правило «{rule}» проверяется тестами, но не написано в задании 1"


def test_lab2_checks_accept_the_solution_corpus():
    namespace = run_until("lab02_own_docs", "docs")
    for grade_id in LAB2_CHECKS:
        run_check("lab02_own_docs", namespace, grade_id)


@pytest.mark.parametrize("variant", list(_lab2_variants()))
def test_lab2_checks_reject_a_bad_corpus(variant):
    change, grade_id, message = _lab2_variants()[variant]
    namespace = run_until("lab02_own_docs", "docs")
    namespace["DOCS"] = change(list(namespace["DOCS"]))
    with pytest.raises(AssertionError, match=re.escape(message)):
        run_check("lab02_own_docs", namespace, grade_id)


LAB2_ANSWER_CHECKS = ("table_visible", "table_hidden", "prompts_visible", "answers_visible", "answers_hidden")


def test_lab2_an_honest_refusal_is_not_penalised():
    """Нужный документ найден, но его чанк ответа не содержит: «не попал» и отказ — все баллы."""
    namespace = run_until("lab02_own_docs", "answers")
    query = namespace["QUERIES"][0]
    found = [row for row in namespace["HIT_TABLE"] if row["query"] == query and row["hit"]]
    assert found and all(row["doc_id"] in namespace["RELEVANT"][query] for row in found)
    for row in found:
        row["hit"] = False
    namespace["ANSWERS"][query] = namespace["REFUSAL"]
    for grade_id in LAB2_ANSWER_CHECKS:
        run_check("lab02_own_docs", namespace, grade_id)


def test_lab2_a_refusal_next_to_marked_hits_and_a_hit_outside_the_labels_are_caught():
    namespace = run_until("lab02_own_docs", "answers")
    query = namespace["QUERIES"][0]
    namespace["ANSWERS"][query] = namespace["REFUSAL"]
    with pytest.raises(AssertionError, match="в ответе отказ, хотя в таблице отмечены попадания"):
        run_check("lab02_own_docs", namespace, "answers_hidden")

    namespace = run_until("lab02_own_docs", "answers")
    wrong = next(row for row in namespace["HIT_TABLE"] if row["doc_id"] not in namespace["RELEVANT"][row["query"]])
    wrong["hit"] = True
    with pytest.raises(AssertionError, match="не отмечен в RELEVANT"):
        run_check("lab02_own_docs", namespace, "table_hidden")


# лаб. 4: примеры — то, за что себя выдают; rank_of получает список, а не индекс
LAB4_EXAMPLE_CHECKS = ("examples_shape", "examples_words", "examples_kinds", "examples_fail", "controls")


def test_lab4_checks_accept_the_solution_examples():
    namespace = run_until("lab04_hash_failures", "examples")
    for grade_id in LAB4_EXAMPLE_CHECKS:
        run_check("lab04_hash_failures", namespace, grade_id)


@pytest.mark.parametrize("kind", ["synonym", "typo", "homonym"])
def test_lab4_checks_reject_an_example_that_in_fact_succeeds(kind):
    namespace = run_until("lab04_hash_failures", "examples")
    example = namespace["EXAMPLES"][kind]
    example["query"] = example["control"]  # запрос словами документа находится
    with pytest.raises(AssertionError, match="не ломается"):
        run_check("lab04_hash_failures", namespace, "examples_fail")


def test_lab4_an_example_that_is_found_costs_points_in_task_2_only():
    """Задание 3 сверяет TABLE с поиском, а не требует None: пример, который находится, стоит баллов один раз."""
    namespace = run_until("lab04_hash_failures", "examples")
    example = namespace["EXAMPLES"]["synonym"]
    example["query"] = example["control"]  # запрос словами документа находится
    with pytest.raises(AssertionError, match="не ломается"):
        run_check("lab04_hash_failures", namespace, "examples_fail")
    namespace = run_until("lab04_hash_failures", "fixes", replace={"examples": lab_cells("lab04_hash_failures")[
        "examples"] + "\nEXAMPLES['synonym']['query'] = EXAMPLES['synonym']['control']\n"})
    assert namespace["TABLE"]["synonym"]["query"] in (1, 2, 3)
    run_check("lab04_hash_failures", namespace, "fixes_visible")
    namespace["TABLE"]["synonym"]["query"] = None  # «как велели» вместо того, что дал поиск
    with pytest.raises(AssertionError, match=r"TABLE\['synonym'\]\['query'\] = None, а поиск"):
        run_check("lab04_hash_failures", namespace, "fixes_visible")


# пример не того вида, что заявлен: шум (issue 11 — всё это проходило на 18 из 18) и настоящие слова не своего вида
NOT_WHAT_THEY_CLAIM = [
    ("abbreviation", "ЪЪЪ йцук", {"ЪЪЪ": "налога на доходы"}, "буквы «ЪЪЪ» не складываются из начал слов", True),
    ("typo", "ккк ггг", {"ккк": "книгу"}, "опечатка — это 1 или 2 правки", True),
    # слово не из словаря стоит баллов один раз — в examples_words; правила вида к такой паре не применяются
    ("negation", "не ффф", {"не ффф": "компания не компенсирует"}, None, True),
    ("synonym", "щщщ ююю", {"щщщ": "велосипед"}, None, True),
    ("negation", "Что из спорта мне не подарят?", {"не подарят": "компания не компенсирует"},
     "нет общей основы значимого слова", False),
    ("synonym", "Куда поставить велосипеды, если приехал в офис?", {"велосипеды": "велосипед"}, "общие основы", False),
    ("typo", "на сколько недель дают книгу в библиотеке", {"книгу": "книгу"}, "есть в корпусе", False),
    ("abbreviation", "Как оформить возврат НДС за курсы?", {"НДС": "налога на доходы физических лиц"},
     "не складываются из начал слов", False),
]


@pytest.mark.parametrize("kind, query, words, rule, junk", NOT_WHAT_THEY_CLAIM)
def test_lab4_an_example_that_is_not_what_it_claims_loses_its_points_with_the_rule_named(kind, query, words, rule, junk):
    namespace = run_until("lab04_hash_failures", "examples")
    namespace["EXAMPLES"][kind].update(query=query, words=words)
    if junk:
        run_check("lab04_hash_failures", namespace, "examples_fail")  # шум и правда «не находится» — но баллов не даёт
        with pytest.raises(AssertionError, match="нет в словаре русского языка"):
            run_check("lab04_hash_failures", namespace, "examples_words")
    else:
        run_check("lab04_hash_failures", namespace, "examples_words")
    if rule is None:
        run_check("lab04_hash_failures", namespace, "examples_kinds")
        return
    with pytest.raises(AssertionError, match=re.escape(rule)):
        run_check("lab04_hash_failures", namespace, "examples_kinds")


def test_lab4_rank_of_gets_plain_hits_and_returns_their_rank():
    namespace = run_until("lab04_hash_failures", "rank_of")
    for grade_id in ("rank_of_visible", "rank_of_hidden"):
        run_check("lab04_hash_failures", namespace, grade_id)
    namespace["rank_of"] = lambda hits, doc_id: next((i + 1 for i, h in enumerate(hits) if h.doc_id == doc_id), None)
    with pytest.raises(AssertionError, match="поле rank, а не номер в списке"):
        run_check("lab04_hash_failures", namespace, "rank_of_hidden")


def test_lab4_checks_reject_a_wrong_fixes_table():
    namespace = run_until("lab04_hash_failures", "fixes")
    run_check("lab04_hash_failures", namespace, "fixes_hidden")
    namespace["FIXES"]["synonym"]["stem"] = not namespace["FIXES"]["synonym"]["stem"]
    with pytest.raises(AssertionError, match="на самом деле"):
        run_check("lab04_hash_failures", namespace, "fixes_hidden")


# лаб. 5: BM25 и RRF руками — настоящие ошибки теряют баллы своего задания, с названной причиной (честные
# варианты — циклы, numpy, дроби, Counter — проверяет класс слушателей, tests/learners/lab05_bm25_hybrid)
LAB5 = "lab05_bm25_hybrid"


@pytest.fixture
def lab5_folder(monkeypatch):
    """Ячейки лабораторной 5 читают lab05_data.json из текущей папки, labkit — ноутбук под проверкой."""
    monkeypatch.chdir(ROOT / "solutions" / LAB5)
    monkeypatch.setenv("AUTOGRADE_NOTEBOOK", str(ROOT / "solutions" / LAB5 / f"{LAB5}.ipynb"))


_IDF_HEAD = """
def okapi_idf(corpus_tokens):
    n_docs = len(corpus_tokens)
    df = {}
    for doc in corpus_tokens:
        for word in set(doc):
            df[word] = df.get(word, 0) + 1
    raw = {w: math.log((n_docs - n + 0.5) / (n + 0.5)) for w, n in df.items()}
"""
_BM25 = """
def bm25_scores(query_tokens, corpus_tokens, k1=K1, b=B):
    idf = okapi_idf(corpus_tokens)
    avgdl = sum(len(d) for d in corpus_tokens) / len(corpus_tokens)
    out = []
    for doc in corpus_tokens:
        norm = k1 * (1 - b + b * len(doc) / avgdl)
        out.append(sum(idf[t] * doc.count(t) * (k1 + 1) / (doc.count(t) + norm) for t in query_tokens if t in doc))
    return out
"""
_TOP = """
def bm25_top(query, n=CANDIDATES):
    scores = bm25_scores(tokenize(query), CHUNK_TOKENS)
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
    return [KEYS[i] for i in order if scores[i] > 0][:n]
"""
_RRF = """
def rrf(rankings, rank_constant=RANK_CONSTANT):
    scores = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + 1.0 / (rank_constant + rank)
    return sorted(scores.items(), key=lambda item: -item[1])
"""
LAB5_BUGS = {  # ошибка → (ячейка, код, тест, который её ловит, кусок сообщения)
    "отрицательный idf оставлен": ("idf", _IDF_HEAD + "    return raw\n", "idf_hidden", "0.25 · среднее idf"),
    "отрицательный idf обнулён": ("idf", _IDF_HEAD + "    return {w: max(0.0, v) for w, v in raw.items()}\n",
                                  "idf_visible", "включая отрицательный idf"),
    "среднее без отрицательных": ("idf", _IDF_HEAD + """
    positive = [v for v in raw.values() if v >= 0] or [0.0]
    floor = OKAPI_EPSILON * sum(positive) / len(positive)
    return {w: floor if v < 0 else v for w, v in raw.items()}
""", "idf_hidden", "среднее idf всех слов"),
    "без множителя k1 + 1": ("bm25", _BM25.replace(" * (k1 + 1)", ""), "bm25_hidden", "нет множителя (k1 + 1)"),
    "повтор слова в запросе один раз": ("bm25", _BM25.replace("for t in query_tokens", "for t in set(query_tokens)"),
                                        "bm25_hidden", "повтор слова в запросе посчитан один раз"),
    "avgdl без пустых документов": ("bm25", _BM25.replace(
        "sum(len(d) for d in corpus_tokens) / len(corpus_tokens)",
        "sum(len(d) for d in corpus_tokens) / sum(1 for d in corpus_tokens if d)"), "bm25_hidden", "avgdl = сумма длин / N"),
    "чанки с нулевой оценкой": ("top", _TOP.replace(" if scores[i] > 0", ""), "top_hidden", "только оценка > 0"),
    "ничьи в обратном порядке": ("top", _TOP.replace("(-scores[i], i)", "(-scores[i], -i)"), "top_hidden",
                                 "раньше в CHUNKS"),
    "места с 0": ("fusion", _RRF.replace("enumerate(ranking, start=1)", "enumerate(ranking)"), "rrf_visible",
                  "места считаются с 1"),
    "слияние по doc_id": ("fusion", _RRF.replace("scores[key] = scores.get(key, 0.0)", "scores[key[0], 1] = scores.get((key[0], 1), 0.0)"),
                          "rrf_hidden", "ключ (doc_id, chunk_id) целиком"),
    "ничьи по имени ключа": ("fusion", _RRF.replace("key=lambda item: -item[1]", "key=lambda item: (-item[1], item[0])"),
                             "rrf_hidden", "раньше встретился"),
}


@pytest.mark.parametrize("bug", list(LAB5_BUGS))
def test_lab5_a_real_bug_loses_points_with_a_message_that_names_it(bug, lab5_folder):
    grade_id, code, failing, message = LAB5_BUGS[bug]
    namespace = run_until(LAB5, "table", replace={grade_id: code})
    with pytest.raises(AssertionError, match=re.escape(message)):
        run_check(LAB5, namespace, failing)


def test_lab5_a_bug_costs_the_points_of_its_task_only(lab5_folder):
    """Когда задание 2 (или 4) уже не прошло, выдачу BM25 сверяют с оценками слушателя, гибрид — с его же rrf:
    ошибка не наказывается дважды."""
    scores_bug = LAB5_BUGS["повтор слова в запросе один раз"]
    namespace = run_until(LAB5, "table", replace={scores_bug[0]: scores_bug[1]})
    with pytest.raises(AssertionError):
        run_check(LAB5, namespace, "bm25_hidden")
    for grade_id in ("top_hidden", "rows_hidden", "table_hidden"):
        run_check(LAB5, namespace, grade_id)
    ties_bug = LAB5_BUGS["ничьи по имени ключа"]
    namespace = run_until(LAB5, "table", replace={ties_bug[0]: ties_bug[1]})
    with pytest.raises(AssertionError):
        run_check(LAB5, namespace, "rrf_hidden")
    for grade_id in ("rows_hidden", "table_hidden"):
        run_check(LAB5, namespace, grade_id)


def test_lab5_bm25_top_is_judged_by_reference_scores_once_task_2_passed(lab5_folder):
    """bm25_scores, подогнанная под ошибочную ничью bm25_top, не покупает баллы задания 3: после пройденного
    задания 2 ожидание строится по эталонным оценкам (rank_bm25), а не по ответу функции слушателя."""
    namespace = run_until(LAB5, "table")
    run_check(LAB5, namespace, "bm25_hidden")
    honest = namespace["bm25_scores"]
    namespace["bm25_scores"] = lambda q, c, k1=1.5, b=0.75: [s + 1e-12 * i if s > 0 else s
                                                           for i, s in enumerate(honest(q, c, k1, b))]
    reversed_ties = LAB5_BUGS["ничьи в обратном порядке"][1]
    namespace["_honest_scores"] = honest  # своя bm25_top считает по честным оценкам
    exec(compile(reversed_ties.replace("bm25_scores(", "_honest_scores("), "reversed", "exec"), namespace)
    with pytest.raises(AssertionError, match="эталонные"):
        run_check(LAB5, namespace, "top_hidden")


def test_lab5_verdicts_and_lost_queries_must_follow_the_learners_own_numbers(lab5_folder):
    namespace = run_until(LAB5, "table")
    run_check(LAB5, namespace, "table_hidden")
    assert "worse" in namespace["VERDICT"].values()
    namespace["VERDICT"] = {category: "same" for category in namespace["VERDICT"]}
    with pytest.raises(AssertionError, match="не следует из твоих чисел"):
        run_check(LAB5, namespace, "table_hidden")
    namespace = run_until(LAB5, "table")
    namespace["LOST"] = namespace["LOST"][1:]
    with pytest.raises(AssertionError, match="LOST — запросы, где по твоим ROWS BM25 попал"):
        run_check(LAB5, namespace, "table_hidden")


def test_lab5_the_rules_hidden_tests_enforce_are_stated_in_the_tasks():
    tasks = "\n".join(source(c) for c in solution_nb(LAB5)["cells"] if c["cell_type"] == "markdown")
    for rule in ("ln((N − n + 0.5) / (n + 0.5))", "OKAPI_EPSILON · среднее", "остаётся с нулём", "(k1 + 1)",
                 "дважды", "пустые документы тоже считаются", "больше 0", "раньше тот чанк", "с 1", "по имени",
                 "раньше встретился", "rank_constant", "1e-9", "BANNED"):
        assert rule in tasks, f"правило «{rule}» проверяется тестами лабораторной 5, но не написано в заданиях"


# лаб. 6: проверка ответа по источникам и порог отказа
LAB6 = "lab06_grounded_answers"
LAB6_CHECKS = ("claims_visible", "claims_hidden", "check_visible", "check_hidden_adversarial", "check_hidden_random",
               "calibrate_visible", "calibrate_hidden", "gate_visible", "gate_hidden")
LAB6_HONEST = {  # свой разбор ссылок через finditer, порог — ровно ближайшая оценка с ответом (другое прочтение)
    "check": """
def check_answer(answer, hits, threshold):
    found = claims(answer)
    links = lambda text: [int(n) for m in CITATION_RE.finditer(text) for n in m.group(1).split(",")]
    unknown = tuple(sorted(set(n for n in links(answer) if n < 1 or n > len(hits))))
    uncited = tuple(c for c in found if not links(c))
    unsupported = []
    for claim in found:
        if not links(claim):
            continue
        sources = [hits[n - 1].text for n in links(claim) if 1 <= n <= len(hits)]
        for m in NUMBER_RE.finditer(CITATION_RE.sub("|", claim)):
            if not any(re.search(rf"(?<!\\d){m.group()}(?!\\d)", text) for text in sources) and m.group() not in unsupported:
                unsupported.append(m.group())
    refused = not found and any(line.strip() for line in answer.splitlines())
    passed = [hit for hit in hits if hit.score >= threshold - SCORE_TOLERANCE]
    missing, wrong = not passed and not refused, refused and bool(passed)
    ok = not (unknown or uncited or unsupported or missing or wrong) and (bool(found) or refused)
    return AnswerReport(ok, unknown, uncited, tuple(unsupported), refused, missing, wrong)
""",
    "calibrate": """
def calibrate(answerable_best, unanswerable_best):
    top = max(unanswerable_best, default=float("-inf"))
    above = sorted(s for s in answerable_best if s > top)
    if above:
        return float(above[0])
    return top + 0.5 if unanswerable_best else 0.0
""",
}


def test_lab6_other_honest_readings_earn_every_point():
    namespace = run_until(LAB6, "gate", replace=LAB6_HONEST)
    for grade_id in LAB6_CHECKS:
        run_check(LAB6, namespace, grade_id)


def _lab6_cell(grade_id: str, old: str, new: str) -> str:
    code = lab_cells(LAB6)[grade_id]
    assert old in code, f"в ячейке {grade_id} нет «{old}»"
    return code.replace(old, new)


LAB6_BUGS = {
    "без разбиения по строкам": ("claims", "for line in answer.splitlines():", "for line in [answer]:",
                                 "check_hidden_adversarial", "список с одной строкой без ссылки"),
    "оторванная ссылка не приклеена": ("claims", "if pieces and re.fullmatch", "if False and re.fullmatch",
                                       "check_hidden_adversarial", "ссылка после последней точки"),
    "число ищется подстрокой": ("check", "if number not in known and",
                                "if number not in ' '.join(hits[n - 1].text for n in cited) and",
                                "check_hidden_adversarial", "2 500 — два числа"),
    "число сверяется со всеми источниками": ("check", 'hits[n - 1].text for n in cited', 'h.text for h in hits',
                                             "check_hidden_adversarial", "ссылка не на тот источник"),
    "номер ссылки считается числом": ("check", 'NUMBER_RE.findall(CITATION_RE.sub(" ", claim))', "NUMBER_RE.findall(claim)",
                                      "check_hidden_adversarial", "число изменено на одну цифру"),
    "порог без допуска": ("check", "hit.score >= threshold - SCORE_TOLERANCE", "hit.score >= threshold",
                          "check_hidden_adversarial", "оценка на пороге"),
    "лишний отказ не замечен": ("check", "refused and not required", "False",
                                "check_hidden_adversarial", "отказ, хотя источник прошёл порог"),
    "отказ другими словами засчитан": ("check", "refused = not found and bool(pieces)",
                                       "refused = not found and bool(pieces) or 'ничего не' in answer",
                                       "check_hidden_adversarial", "отказ другими словами"),
    "порог как в книге, с запасом 0.01": ("calibrate", "return (top + min(above)) / 2 if above else top + 0.01",
                                          "return top + 0.01", "calibrate_hidden", "порог выше, чем нужно"),
    "ворота без допуска": ("gate", "s < threshold - SCORE_TOLERANCE", "s < threshold", "gate_hidden",
                           "в пределах допуска"),
}


@pytest.mark.parametrize("bug", list(LAB6_BUGS))
def test_lab6_a_real_bug_loses_points_with_a_message_that_names_it(bug):
    grade_id, old, new, failing, message = LAB6_BUGS[bug]
    namespace = run_until(LAB6, "gate", replace={grade_id: _lab6_cell(grade_id, old, new)})
    with pytest.raises(AssertionError, match=re.escape(message)):
        run_check(LAB6, namespace, failing)


def test_lab6_the_rules_hidden_tests_enforce_are_stated_in_the_tasks():
    tasks = "\n".join(source(c) for c in solution_nb(LAB6)["cells"] if c["cell_type"] == "markdown")
    for rule in ("по строкам", "приклей его через пробел", "без учёта регистра", "не кусок более длинной",
                 "«2» и «500»", "существующего", "это же", "без повторов", "score ≥ threshold − SCORE_TOLERANCE",
                 "пустой `hits` — тоже", "Пустой ответ — не `ok`", "Смотрим только",
                 "каждому", "не выше, чем нужно", "отличаются хотя бы на 1e-4", "`None`", "оба списка пусты", "В контексте ответа нет. [1]"):
        assert rule in tasks, f"правило «{rule}» проверяется тестами лабораторной 6, но не написано в заданиях"


# ---------- labkit: письменный ответ — только из ноутбука под проверкой ----------
def _answered(tmp_path: Path, name: str, text: str) -> Path:
    notebook = solution_nb("lab01_mini_rag")
    for cell in notebook["cells"]:
        if nbgrader(cell).get("grade_id") == "why_cosine":
            cell["source"] = text
    path = tmp_path / name
    path.write_text(json.dumps(notebook, ensure_ascii=False), encoding="utf-8")
    return path


def test_labkit_reads_the_notebook_under_check_never_a_neighbour(tmp_path, monkeypatch):
    import labkit

    monkeypatch.delenv("AUTOGRADE_NOTEBOOK", raising=False)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.chdir(tmp_path)
    _answered(tmp_path, "lab01_mini_rag.ipynb", "ТВОЙ ОТВЕТ ЗДЕСЬ: замени этот текст своим ответом.")
    assert labkit.written_answer("why_cosine").startswith("ТВОЙ ОТВЕТ ЗДЕСЬ")  # единственный ноутбук папки
    _answered(tmp_path, "lab01_mini_rag-Copy1.ipynb", "Готовый ответ из копии.")
    with pytest.raises(AssertionError, match="несколько ноутбуков"):  # гадать нельзя
        labkit.written_answer("why_cosine")
    monkeypatch.setenv("AUTOGRADE_NOTEBOOK", "lab01_mini_rag-Copy1.ipynb")  # так говорит проверка
    assert labkit.written_answer("why_cosine") == "Готовый ответ из копии."
    monkeypatch.setenv("AUTOGRADE_NOTEBOOK", str(tmp_path / "lab01_mini_rag.ipynb"))
    assert labkit.written_answer("why_cosine").startswith("ТВОЙ ОТВЕТ ЗДЕСЬ")
    monkeypatch.delenv("AUTOGRADE_NOTEBOOK")
    monkeypatch.setenv("JPY_SESSION_NAME", str(tmp_path / "lab01_mini_rag-Copy1.ipynb"))  # так говорит JupyterLab
    assert labkit.written_answer("why_cosine") == "Готовый ответ из копии."
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    monkeypatch.setenv("JPY_SESSION_NAME", str(_answered(elsewhere, "lab01_mini_rag.ipynb", "Чужой ответ.")))
    with pytest.raises(AssertionError, match="несколько ноутбуков"):  # ноутбук из другой папки — не наш
        labkit.written_answer("why_cosine")


def test_labkit_counts_words_with_agreement(tmp_path, monkeypatch, capsys):
    import labkit

    monkeypatch.delenv("AUTOGRADE_NOTEBOOK", raising=False)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.chdir(tmp_path)
    _answered(tmp_path, "lab01_mini_rag.ipynb", "слово " * 21)
    with pytest.raises(AssertionError, match="21 слово, нужно хотя бы 40"):
        labkit.check_written("why_cosine", "Почему косинус")
    _answered(tmp_path, "lab01_mini_rag.ipynb", "слово " * 42)
    assert labkit.check_written("why_cosine", "Почему косинус") is None  # число nbgrader принял бы за частичный балл
    assert "42 слова" in capsys.readouterr().out


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

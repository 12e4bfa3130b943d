"""Лабораторные nbgrader: выданные версии, автопроверка, самопроверка и проверки самих заданий.

Что здесь проверяется:
* labs/ — ровно то, что nbgrader генерирует из solutions/ (``python -m autograde release``),
  и в labs/ нет ни решений, ни скрытых тестов;
* настоящий ``nbgrader autograde`` во временной копии каталога курса: решение набирает все
  автоматические баллы, нетронутая выданная версия — не больше пятой части, удалённая ячейка
  с тестом возвращается (add_missing_cells);
* ``python -m autograde check`` пропускает решения и валит выданные версии понятными сообщениями;
* проверки лабораторных ловят то, что должны: корпус из 19 документов, повтор id, документ
  в 150 символов, копию демо-корпуса (лаб. 2), «провал», который на деле находится (лаб. 4).

nbgrader гоняется один раз за сессию (фикстура ``course``) во временной папке: в репозитории
не появляется ни gradebook.db, ни проверенных работ.
"""

from __future__ import annotations

import ast
import json
import re
import shutil
import subprocess
import sys
import types
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # пакет autograde лежит в корне репозитория и не устанавливается
    sys.path.insert(0, str(ROOT))
LABS = ["lab01_mini_rag", "lab02_own_docs", "lab03_k3_vs_k5", "lab04_hash_failures"]
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


def run(args: list[str], cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=timeout)


# ---------- фикстура: временный каталог курса, выдача и автопроверка nbgrader ----------
STUDENTS = ("solution", "untouched")
DELETED_CELL = ("lab01_mini_rag", "top_k_visible")  # эту ячейку с тестом «слушатель» удалит


@pytest.fixture(scope="session")
def course(tmp_path_factory):
    """Копия курса во временной папке: release нашей командой, три «слушателя», nbgrader autograde."""
    root = tmp_path_factory.mktemp("course")
    shutil.copy2(ROOT / "nbgrader_config.py", root)
    shutil.copytree(ROOT / "solutions", root / "solutions",
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    shutil.copytree(ROOT / "autograde", root / "autograde",
                    ignore=shutil.ignore_patterns("__pycache__", "gradebook.db", "*.png", *WORK_DIRS))
    released = run([sys.executable, "-m", "autograde", "release"], cwd=root)
    assert released.returncode == 0, f"release упал:\n{released.stdout}\n{released.stderr}"

    submitted = root / "autograde" / "submitted"
    for lab in LABS:
        for student, origin in (("solution", root / "solutions"), ("untouched", root / "labs")):
            target = submitted / student / lab
            target.mkdir(parents=True)
            shutil.copy2(origin / lab / f"{lab}.ipynb", target)
    lab, grade_id = DELETED_CELL
    notebook = load(root / "solutions" / lab / f"{lab}.ipynb")
    notebook["cells"] = [c for c in notebook["cells"] if nbgrader(c).get("grade_id") != grade_id]
    (submitted / "deleter" / lab).mkdir(parents=True)
    (submitted / "deleter" / lab / f"{lab}.ipynb").write_text(json.dumps(notebook, ensure_ascii=False), encoding="utf-8")

    logs = {}
    for lab in LABS:
        result = run([sys.executable, "-m", "nbgrader", "autograde", lab, "--create", "--log-level=WARN"], cwd=root)
        logs[lab] = result.stdout + result.stderr
        assert result.returncode == 0, f"nbgrader autograde {lab} упал:\n{logs[lab][-4000:]}"

    from nbgrader.api import Gradebook

    scores = {}
    with Gradebook(f"sqlite:///{root / 'autograde' / 'gradebook.db'}") as gb:
        for lab in LABS:
            for student in (*STUDENTS, "deleter"):
                try:
                    submission = gb.find_submission(lab, student)
                except Exception:  # у deleter только одна лабораторная
                    continue
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
    header = source(cells[0])
    auto = sum(nbgrader(c)["points"] for c in cells if nbgrader(c).get("grade") and c["cell_type"] == "code")
    manual = sum(nbgrader(c)["points"] for c in cells if nbgrader(c).get("grade") and c["cell_type"] == "markdown")
    assert f"**{auto} баллов — автопроверка" in header, f"{lab}: заголовок должен назвать {auto} автоматических баллов"
    assert re.search(rf"\*\*{manual} балл\w* — вручную", header), f"{lab}: заголовок должен назвать {manual} баллов вручную"
    assert f"Всего {auto + manual} баллов" in header
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
                         and f'_written_answer("{meta["grade_id"]}")' in source(c)]
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


def test_lab01_solution_does_not_use_minirag():
    for cell in solution_nb("lab01_mini_rag")["cells"]:
        meta = nbgrader(cell)
        if meta.get("solution") or (meta.get("locked") and not meta.get("grade")):
            assert not re.search(r"^\s*(import|from)\s+minirag", source(cell), re.M), (
                f"lab01: ячейка {meta.get('grade_id')} импортирует minirag, а лабораторная — без библиотеки")


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
    assert "можно сдавать" in result.stdout


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


def test_checker_reports_a_missing_notebook_with_exit_code_2(tmp_path):
    result = check(tmp_path / "нет.ipynb")
    assert result.returncode == 2 and "Нет ноутбука" in result.stderr


# ---------- проверки лабораторных ловят то, что должны ----------
def lab_cells(lab: str) -> dict[str, str]:
    """grade_id → код ячейки решения (с решениями и скрытыми тестами)."""
    return {nbgrader(c)["grade_id"]: source(c) for c in solution_nb(lab)["cells"]
            if c["cell_type"] == "code" and nbgrader(c).get("grade_id")}


def run_until(lab: str, last: str) -> dict:
    """Исполнить в этом процессе код ячеек лабораторной по порядку до ячейки ``last`` включительно."""
    module = types.ModuleType(f"lab_{lab}")  # dataclasses ищут модуль класса в sys.modules
    sys.modules[module.__name__] = module
    namespace = module.__dict__
    for grade_id, code in lab_cells(lab).items():
        if nbgrader_is_test(lab, grade_id):
            continue
        exec(compile(code, f"{lab}:{grade_id}", "exec"), namespace)
        if grade_id == last:
            return namespace
    raise KeyError(last)


def nbgrader_is_test(lab: str, grade_id: str) -> bool:
    return any(nbgrader(c).get("grade_id") == grade_id and nbgrader(c).get("grade") for c in solution_nb(lab)["cells"])


def run_check(lab: str, namespace: dict, grade_id: str) -> None:
    exec(compile(lab_cells(lab)[grade_id], f"{lab}:{grade_id}", "exec"), namespace)


def _lab2_variants():
    from minirag import DEMO_DOCS, Document

    def replace(docs, i, **changes):
        doc = docs[i]
        fields = {"id": doc.id, "title": doc.title, "text": doc.text, **changes}
        return [*docs[:i], Document(fields["id"], fields["title"], fields["text"]), *docs[i + 1:]]

    return {
        "19 документов": (lambda docs: docs[:19], "docs_shape", "В DOCS 19 документов, нужно ровно 20"),
        "повтор id": (lambda docs: replace(docs, 1, id=docs[0].id), "docs_shape", "id повторяются"),
        "150 символов": (lambda docs: replace(docs, 3, text=docs[3].text[:150]), "docs_lengths", "150 символов, нужно от 200"),
        "копия демо-корпуса": (lambda docs: list(DEMO_DOCS[:20]), "docs_original", "взяты из демо-корпуса"),
        "почти-дубликат": (lambda docs: replace(docs, 5, text=docs[4].text + " Это правило действует с весны."),
                           "docs_original", "почти одинаковые"),
        "номер вместо id": (lambda docs: replace(docs, 2, id="doc3"), "docs_shape", "просто номер по порядку"),
    }


LAB2_CHECKS = ("docs_shape", "docs_lengths", "docs_original", "docs_hidden")


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


def test_lab4_checks_accept_the_solution_examples():
    namespace = run_until("lab04_hash_failures", "examples")
    for grade_id in ("examples_shape", "examples_fail", "controls", "examples_hidden"):
        run_check("lab04_hash_failures", namespace, grade_id)


@pytest.mark.parametrize("kind", ["synonym", "typo", "homonym"])
def test_lab4_checks_reject_an_example_that_in_fact_succeeds(kind):
    namespace = run_until("lab04_hash_failures", "examples")
    example = namespace["EXAMPLES"][kind]
    example["query"] = example["control"]  # запрос точными словами документа находится
    with pytest.raises(AssertionError, match="не ломается"):
        run_check("lab04_hash_failures", namespace, "examples_fail")


def test_lab4_checks_reject_a_wrong_fixes_table():
    namespace = run_until("lab04_hash_failures", "fixes")
    run_check("lab04_hash_failures", namespace, "fixes_hidden")
    namespace["FIXES"]["synonym"]["stem"] = not namespace["FIXES"]["synonym"]["stem"]
    with pytest.raises(AssertionError, match="на самом деле"):
        run_check("lab04_hash_failures", namespace, "fixes_hidden")


def test_lab1_hidden_tests_catch_what_visible_tests_miss():
    """top_k со строгим сравнением с порогом проходит видимые тесты, но не скрытые."""
    namespace = run_until("lab01_mini_rag", "top_k")

    def top_k_strict(scores, k, threshold=None):
        passed = [i for i, s in enumerate(scores) if threshold is None or s > threshold]
        return sorted(passed, key=lambda i: (-float(scores[i]), i))[:k]

    namespace["top_k"] = top_k_strict
    run_check("lab01_mini_rag", namespace, "top_k_visible")
    with pytest.raises(AssertionError, match="равная порогу, проходит"):
        run_check("lab01_mini_rag", namespace, "top_k_hidden")

"""Книга: ноутбуки без выходов, оглавление полное, сборка с -W без ошибок, и настоящий браузер.

Сборка (`jupyter-book build` с -W -n --keep-going) — та, что сделала первая команда README, если после
неё ничего не менялось, иначе новая в свежую папку, один раз на сессию тестов; её HTML проверяют и
разбором файлов, и в headless Chromium.
"""

from __future__ import annotations

import functools
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import threading
import venv
from pathlib import Path

import pytest
import yaml
from bs4 import BeautifulSoup

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from agreement import disagreements  # noqa: E402

SECRET_MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [chapter["file"] for chapter in part["chapters"]]
    return files


def chapter_notebooks() -> list[str]:
    return [f for f in toc_files() if (ROOT / f"{f}.ipynb").exists()]


def all_notebooks() -> list[Path]:
    skip = {".venv", "_build", "autograde", ".ipynb_checkpoints", "node_modules"}
    return sorted(p for p in ROOT.rglob("*.ipynb") if not skip & set(p.relative_to(ROOT).parts))


@pytest.mark.parametrize("path", all_notebooks(), ids=lambda p: str(p.relative_to(ROOT)))
def test_notebooks_are_committed_without_outputs(path):
    notebook = json.loads(path.read_text(encoding="utf-8"))
    dirty = [i for i, cell in enumerate(notebook["cells"])
             if cell["cell_type"] == "code" and (cell.get("outputs") or cell.get("execution_count"))]
    assert not dirty, f"{path.name}: у ячеек {dirty} есть выходы — очисти их перед коммитом"


def test_every_page_in_book_is_in_the_toc_and_every_toc_entry_exists():
    listed = set(toc_files())
    pages = {str(p.relative_to(ROOT).with_suffix("")) for p in (ROOT / "book").iterdir() if p.suffix in {".ipynb", ".md"}}
    assert pages - listed == set(), "страницы book/ вне _toc.yml не попадут в книгу"
    missing = [f for f in listed if not any((ROOT / f"{f}{ext}").exists() for ext in (".ipynb", ".md"))]
    assert not missing, f"в _toc.yml есть несуществующие страницы: {missing}"


def test_config_keeps_solutions_off_the_site_and_never_allows_errors():
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert config["only_build_toc_files"] is True
    assert {"solutions/**", "labs/**", "autograde/**"} <= set(config["exclude_patterns"])
    assert config["execute"]["allow_errors"] is False
    assert config["sphinx"]["config"]["language"] == "ru"


def unexpected_errors(html: str) -> list[str]:
    """Тексты ошибок в выводе ячеек, кроме ячеек с тегом raises-exception (там ошибка — урок)."""
    soup = BeautifulSoup(html, "html.parser")
    errors = []
    for output in soup.select(".output.traceback, .output.error"):
        cell = output.find_parent(class_="cell")
        if cell is None or "tag_raises-exception" not in cell.get("class", []):
            errors.append(output.get_text())
    return errors


def repository_url() -> str:
    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))["repository"]["url"]


def first_cell(page: str) -> dict:
    return json.loads((ROOT / f"{page}.ipynb").read_text(encoding="utf-8"))["cells"][0]


@pytest.mark.parametrize("page", chapter_notebooks())
def test_every_chapter_starts_with_a_quiet_setup_step_that_installs_the_course_from_the_books_repository(page):
    cell = first_cell(page)
    source = "".join(cell["source"])
    # на сайте её нет совсем (remove-input): свёрнутая, она дала бы кнопку «Показать код» над названием главы;
    # в ноутбуке она есть и свёрнута (source_hidden), её исполняют первой
    assert cell["cell_type"] == "code" and {"remove-input", "remove-output"} <= set(cell["metadata"].get("tags", [])), \
        f"{page}: первая ячейка — «Подготовка», скрытая на сайте (теги remove-input и remove-output)"
    assert cell["metadata"].get("jupyter", {}).get("source_hidden"), f"{page}: «Подготовка» свёрнута в ноутбуке"
    assert 'find_spec("minirag") is None' in source, f"{page}: подготовка должна ничего не делать, если minirag есть"
    assert f'"git+{repository_url()}"' in source, f"{page}: ставить библиотеку нужно из репозитория книги"
    chapter = "".join("".join(c["source"]) for c in json.loads((ROOT / f"{page}.ipynb").read_text())["cells"][1:])
    if "NavecEmbedder" in chapter:
        assert re.search(r"minirag\[[^\]]*\bnavec\b", source), f"{page}: глава берёт NavecEmbedder — поставь minirag[navec]"
    if "E5Embedder" in chapter:
        assert re.search(r"minirag\[[^\]]*\be5\b", source), f"{page}: глава берёт E5Embedder — поставь minirag[e5]"


def _chapters_of(header: str) -> set[int]:
    """Главы из шапки лабораторной: «К главам 1–4 и 6 книги» → {1, 2, 3, 4, 6}; «К главе 8» → {8}."""
    found = re.search(r"К глав[аеы]м? ([\d–, и]+?) книги", header)
    assert found, f"в шапке лабораторной нет «К главе(ам) … книги»: {header[:200]!r}"
    chapters: set[int] = set()
    for part in re.split(r",\s*|\s+и\s+", found.group(1).strip()):
        first, _, last = part.partition("–")
        chapters |= set(range(int(first), int(last or first) + 1))
    return chapters


MAX_PROSE_WORDS = 3000  # страница длиннее — раздели её на разделы или главы (issue 31)
_FENCE_RE = re.compile(r"^(```|~~~)(?!\{).*?^\1", re.S | re.M)  # блоки кода; текст директив ({dropdown}…) — проза
_ROLE_RE = re.compile(r"\{[\w:-]+\}`[^`]*`")


def prose_words(notebook: Path) -> int:
    """Слова прозы страницы: markdown-ячейки без блоков кода и ролей MyST ({eval}`shown(…)`); текст директив (ответы
    «Проверь себя» в {dropdown}, подписи рисунков) — тоже проза."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    text = " ".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    text = _ROLE_RE.sub(" ", _FENCE_RE.sub(" ", text))
    return len(re.findall(r"[А-Яа-яЁёA-Za-z]+", text))


@pytest.mark.parametrize("page", chapter_notebooks())
def test_no_page_is_longer_than_three_thousand_words_of_prose(page):
    words = prose_words(ROOT / f"{page}.ipynb")
    assert words <= MAX_PROSE_WORDS, f"{page}: {words} слов прозы — раздели страницу (не больше {MAX_PROSE_WORDS})"


_SHOWN_RE = re.compile(r'shown\("([^":]+)')
_KEPT_RE = re.compile(r'keep\(\s*(f?)"([^"]+)"')


def kept_pattern(prefix: str, name: str) -> str:
    """Имя из keep("…") как регулярное выражение: у keep(f"ch8_q_{category}", …) поле — любое имя."""
    return re.sub(r"\\\{[^}]*\\\}", r"\\w+", re.escape(name)) if prefix else re.escape(name)


@pytest.mark.parametrize("page", chapter_notebooks())
def test_every_number_in_the_text_is_kept_in_a_cell_above_it(page):
    """Роль {eval}`shown("имя")` вычисляется там, где стоит текст: при сборке (myst-nb, исполнение inline) и в
    JupyterLab (jupyterlab-myst после «Запустить все ячейки»). Значит, keep("имя", …) должен стоять в ячейке
    кода выше — и в ячейке, которую сборка исполняет (remove-cell не исполняется до следующей видимой ячейки).
    keep(f"…{поле}…") совпадает с любым именем своего вида; ссылку вперёд на такое имя ловит сама сборка:
    shown бросает KeyError, myst-nb пишет предупреждение, -W делает его ошибкой."""
    cells = json.loads((ROOT / f"{page}.ipynb").read_text(encoding="utf-8"))["cells"]
    kept: list[str] = []
    late = []
    for cell in cells:
        source = "".join(cell["source"])
        tags = cell["metadata"].get("tags", [])
        assert "remove-cell" not in tags, f"{page}: тег remove-cell у {cell['id']} — возьми remove-input и remove-output"
        assert "{glue" not in source and "glue(" not in source, f"{page}: glue в {cell['id']} — теперь keep и shown"
        if cell["cell_type"] == "code":
            kept += [kept_pattern(*found) for found in _KEPT_RE.findall(source)]
        caption = cell["metadata"].get("mystnb", {}).get("figure", {}).get("caption", "")
        for name in _SHOWN_RE.findall(source + caption):
            if not any(re.fullmatch(pattern, name) for pattern in kept):
                late.append(f"{cell['id']}: {name}")
    assert not late, f"{page}: текст ссылается на значения, которые запоминаются ниже (или нигде): {late}"


@pytest.mark.parametrize("page", chapter_notebooks())
def test_every_kept_value_is_shown_on_its_page(page):
    """keep("имя", …) без shown("имя") в тексте или подписи своей страницы — число, которое никто не читает:
    остаток правки текста. Такое значение либо показывают, либо проверяют assert'ом, либо не запоминают."""
    cells = json.loads((ROOT / f"{page}.ipynb").read_text(encoding="utf-8"))["cells"]
    text = "".join("".join(c["source"]) + c["metadata"].get("mystnb", {}).get("figure", {}).get("caption", "")
                   for c in cells)
    names = set(_SHOWN_RE.findall(text))
    unread = [name for cell in cells if cell["cell_type"] == "code"
              for prefix, name in _KEPT_RE.findall("".join(cell["source"]))
              if not any(re.fullmatch(kept_pattern(prefix, name), shown) for shown in names)]
    assert not unread, f"{page}: запомнены, но нигде на странице не показаны: {unread}"


@pytest.mark.parametrize("page", chapter_notebooks())
def test_plumbing_and_folded_code_are_folded_in_jupyterlab_too(page):
    """Код, которого нет на сайте (remove-input) или который там свёрнут (hide-input), свёрнут и в JupyterLab
    курса (metadata.jupyter.source_hidden); рисунок — вывод своей ячейки с подписью (mystnb.figure)."""
    cells = json.loads((ROOT / f"{page}.ipynb").read_text(encoding="utf-8"))["cells"]
    for cell in cells:
        tags = set(cell["metadata"].get("tags", []))
        if cell["cell_type"] == "code" and tags & {"remove-input", "hide-input"}:
            assert cell["metadata"].get("jupyter", {}).get("source_hidden") is True, \
                f"{page}: ячейка {cell['id']} скрыта на сайте, а в JupyterLab развёрнута (source_hidden)"
        figure = cell["metadata"].get("mystnb", {}).get("figure")
        if figure:
            assert figure.get("name", "").startswith("fig-") and figure.get("caption"), \
                f"{page}: у рисунка в {cell['id']} нет имени fig-… или подписи"
            assert "plt.close(" not in "".join(cell["source"]), f"{page}: {cell['id']} закрывает свой рисунок"


def exercises(notebook: Path) -> list[tuple[str, dict]]:
    """Упражнения главы: (текст задания, ячейка решения) после заголовка «## Упражнения»."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    start = next((i for i, c in enumerate(cells)
                  if c["cell_type"] == "markdown" and "".join(c["source"]).lstrip().startswith("## Упражнения")), None)
    if start is None:
        return []
    found = []
    for task, solution in zip(cells[start:], cells[start + 1:]):
        text = "".join(task["source"])
        if task["cell_type"] == "markdown" and re.search(r"\*\*Упражнение \d+\.\*\*", text) \
                and solution["cell_type"] == "code":
            found.append((text, solution))
    return found


@pytest.mark.parametrize("page", [p for p in chapter_notebooks() if p != "book/00_intro"])
def test_every_chapter_ends_with_coding_exercises_whose_folded_solutions_are_checked_when_the_book_is_built(page):
    """Задание — markdown «**Упражнение N.** …»; сразу за ним — решение: ячейка кода, свёрнутая и на сайте
    (тег hide-input), и в JupyterLab (source_hidden), с assert — сборка книги падает, если решение неверно."""
    found = exercises(ROOT / f"{page}.ipynb")
    assert found, f"{page}: нет раздела «## Упражнения» с заданием «**Упражнение 1.** …» и решением за ним"
    for text, solution in found:
        source = "".join(solution["source"])
        assert "hide-input" in solution["metadata"].get("tags", []), f"{page}: решение не свёрнуто на сайте: {text[:60]}"
        assert solution["metadata"].get("jupyter", {}).get("source_hidden") is True, \
            f"{page}: решение не свёрнуто в JupyterLab (metadata.jupyter.source_hidden): {text[:60]}"
        assert re.search(r"^\s*assert ", source, re.M), f"{page}: решение ничего не проверяет (нет assert): {text[:60]}"
        assert "keep(" not in source, f"{page}: в решении — служебный вызов keep: {text[:60]}"


def test_intro_names_all_labs_with_the_chapters_their_headers_give_and_the_stub_they_use():
    intro = "\n".join(cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
                      for cell in json.loads((ROOT / "book/00_intro.ipynb").read_text(encoding="utf-8"))["cells"])
    labs = sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir() and p.name.startswith("lab"))
    want: dict[int, set[int]] = {}  # глава → номера лабораторных к ней
    for number, lab in enumerate(labs, start=1):
        assert f"{{ref}}`{lab}`" in intro, f"введение не называет лабораторную {lab}"
        notebook = json.loads((ROOT / "solutions" / lab / f"{lab}.ipynb").read_text(encoding="utf-8"))
        for chapter in _chapters_of("".join(notebook["cells"][0]["source"])):
            want.setdefault(chapter, set()).add(number)
    rows = dict(re.findall(r"^\| \{doc\}`(\d\d)_\w+` \|.*\| ([\d, —]+) \|$", intro, re.MULTILINE))
    assert rows, "во введении нет таблицы «глава | о чём | лабораторная»"
    got = {int(chapter): {int(n) for n in re.findall(r"\d+", labs_cell)} for chapter, labs_cell in rows.items()}
    assert got == {chapter: want.get(chapter, set()) for chapter in got}, "таблица глав во введении расходится с шапками лабораторных"
    stub = re.search(r'code_stub = \{"python": "([^\\"]+)', (ROOT / "nbgrader_config.py").read_text(encoding="utf-8"))
    assert stub and f"`{stub.group(1)}`" in intro, f"введение должно называть метку места для кода из nbgrader_config: {stub}"


# «`python -m minirag ask "вопрос" --k 3` ответил цитатой» или «… отказал» в вопросах «Проверь себя»
_ASK_CLAIM_RE = re.compile(r'`python -m minirag ask "([^"`]+)"((?: --[\w-]+ [^\s`]+)*)`\s+(ответил цитатой|отказал)')


@pytest.mark.slow
def test_every_self_check_about_ask_says_what_the_command_prints(tmp_path):
    """Вопрос «Проверь себя» о команде ask не спорит с тем, что она печатает: её запускают, как написано."""
    from minirag import REFUSAL

    claims = []
    for page in chapter_notebooks():
        cells = json.loads((ROOT / f"{page}.ipynb").read_text(encoding="utf-8"))["cells"]
        text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        if "## Проверь себя" in text:
            claims += [(page, *found) for found in _ASK_CLAIM_RE.findall(text.split("## Проверь себя", 1)[1])]
    assert claims, "ни один вопрос «Проверь себя» не называет команду ask — поменялась форма вопроса?"
    for page, question, options, claim in claims:
        run = subprocess.run([sys.executable, "-m", "minirag", "ask", question, *options.split()], cwd=tmp_path,
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, f"{page}: ask {question!r}{options} упал: {run.stderr[-500:]}"
        answer = run.stdout.split("Ответ", 1)[1].split("\n\n", 1)[0]
        refused = REFUSAL in answer
        if claim == "отказал":
            assert refused, f"{page}: «Проверь себя» говорит, что ask {question!r}{options} отказал, а он ответил:{answer}"
        else:
            assert not refused and "Цитаты в порядке: источники" in run.stdout, (
                f"{page}: «Проверь себя» говорит, что ask {question!r}{options} ответил цитатой, а он напечатал:\n"
                f"{run.stdout[:1500]}")


@pytest.mark.slow
def test_setup_step_installs_the_course_into_a_fresh_environment_and_the_chapter_runs(tmp_path):
    """Чистое окружение без minirag: «Подготовка» ставит его из локального пути (без сети), и глава выполняется."""
    source = tmp_path / "course"   # копия пакета: сборка не пишет в рабочую копию
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "src" / "minirag", source / "src" / "minirag", ignore=shutil.ignore_patterns("__pycache__"))
    # остальные пакеты курса видны из текущего окружения, а сам minirag — нет
    shadow = tmp_path / "packages"
    shadow.mkdir()
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.startswith(("minirag", "__editable__", "__pycache__")):
            (shadow / entry.name).symlink_to(entry)
    fresh = tmp_path / "venv"
    venv.create(fresh, with_pip=False)
    python = fresh / "bin" / "python"
    purelib = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             capture_output=True, text=True, check=True).stdout.strip()
    Path(purelib, "course-packages.pth").write_text(str(shadow) + "\n", encoding="utf-8")
    kernels = tmp_path / "jupyter" / "kernels" / "fresh"
    kernels.mkdir(parents=True)
    (kernels / "kernel.json").write_text(json.dumps({"argv": [str(python), "-m", "ipykernel_launcher", "-f",
                                                              "{connection_file}"], "display_name": "fresh",
                                                     "language": "python"}), encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key not in {"VIRTUAL_ENV", "PYTHONPATH"}}
    env.update(MINIRAG_SOURCE=source.as_uri(), PIP_NO_INDEX="1", PIP_NO_BUILD_ISOLATION="0",
               JUPYTER_PATH=str(tmp_path / "jupyter"), PATH=f"{fresh / 'bin'}:{env.get('PATH', '')}")
    check = [python, "-c", "import importlib.util; print(importlib.util.find_spec('minirag'))"]
    assert subprocess.run(check, capture_output=True, text=True, env=env).stdout.strip() == "None"
    run = ("import nbformat, sys; from nbclient import NotebookClient; nb = nbformat.read(sys.argv[1], as_version=4); "
           "NotebookClient(nb, kernel_name='fresh', timeout=300, resources={'metadata': {'path': sys.argv[2]}}).execute()")
    result = subprocess.run([python, "-c", run, str(ROOT / "book" / "02_cosine.ipynb"), str(tmp_path)],
                            capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    installed = subprocess.run([python, "-c", "import minirag; print(minirag.__file__)"], capture_output=True,
                               text=True, env=env).stdout.strip()
    assert installed.startswith(purelib), f"minirag должен стоять в свежем окружении, а он в {installed}"


@pytest.mark.slow
def test_with_a_model_server_chapter_11_asks_the_model_over_what_ask_would_retrieve(tmp_path):
    """Сайт собирается без сервера модели, и ячейки с моделью там пропускаются. Читатель с сервером (переменные из
    таблицы главы 11) получает ответы модели, и модель видит то, что нашёл бы ask: поиск e5 с BM25 и воротами
    отказа; вопрос, не прошедший ворота, до модели не доходит."""
    import nbformat
    from fakes import ENV, FakeServer
    from nbformat.v4 import new_code_cell

    page = ROOT / "book" / "11_generators.ipynb"
    nb = nbformat.read(page, as_version=4)
    probe = ("import json as _json\n"
             "_asked = (query, 'Какие расходы в командировке компания не возмещает?', no_answer)   # как в ch10-18\n"
             "_hits = {q: e5_retriever.search(q, k=3, threshold=e5_calibration.threshold) for q in _asked}\n"
             "print('PROBE' + _json.dumps([build_prompt(q, h) for q, h in _hits.items() if h], ensure_ascii=False))")
    nb.cells.append(new_code_cell(probe))
    executed = tmp_path / "executed.ipynb"
    nbformat.write(nb, executed)
    with FakeServer() as server:
        env = {key: value for key, value in os.environ.items() if key not in ENV}
        env.update(MINIRAG_BASE_URL=server.url + "/v1", MINIRAG_MODEL="qwen-test", NO_PROXY="127.0.0.1")
        run = ("import nbformat, sys; from nbclient import NotebookClient; p = sys.argv[1]; "
               "nb = nbformat.read(p, as_version=4); "
               "NotebookClient(nb, timeout=600, resources={'metadata': {'path': sys.argv[2]}}).execute(); "
               "nbformat.write(nb, p)")
        result = subprocess.run([sys.executable, "-c", run, str(executed), str(ROOT / "book")], capture_output=True,
                                text=True, env=env, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    out = nbformat.read(executed, as_version=4)
    text = {c.id: "".join(o.get("text", "") for o in c.get("outputs", [])) for c in out.cells if c.cell_type == "code"}
    assert "Подключено: OpenAI-совместимый сервер" in text["ch10-16"] and "модель qwen-test" in text["ch10-16"]
    expected = json.loads(text[out.cells[-1].id].split("PROBE", 1)[1])
    sent = [payload["messages"][0]["content"] for path, _, payload in server.requests if path == "/v1/chat/completions"]
    assert expected and sent == expected, "модель должна получить промпты из поиска e5 с воротами, по одному на " \
                                          f"вопрос, прошедший ворота: {len(expected)} ожидалось, {len(sent)} пришло"
    assert text["ch10-18"].count("Ответ qwen-test [1].") == len(expected)


@pytest.mark.slow
def test_book_has_a_page_with_figures_and_no_errors_for_every_chapter(built_book):
    for page in toc_files():
        html_path = built_book / f"{page}.html"
        assert html_path.exists(), f"нет страницы {page}.html"
        html = html_path.read_text(encoding="utf-8")
        unexpected = unexpected_errors(html)
        assert not unexpected, f"{page}: ошибка в выводе ячейки без тега raises-exception:\n{unexpected[0][:500]}"
        if page in chapter_notebooks():
            figures = re.findall(r'<img[^>]+src="[^"]+\.png"', html)
            assert figures, f"{page}: в главе нет ни одного рисунка"


@pytest.mark.slow
def test_no_solution_or_hidden_test_reaches_the_site(built_book):
    assert not (built_book / "solutions").exists() and not (built_book / "labs").exists()
    for path in built_book.rglob("*"):
        if path.suffix in {".html", ".js", ".txt", ".ipynb", ".md"} and path.is_file():
            text = path.read_text(encoding="utf-8", errors="replace")
            for marker in SECRET_MARKERS:
                assert marker not in text, f"{path.relative_to(built_book)}: на сайт попало «{marker}»"


def page_soup(built_book, page) -> BeautifulSoup:
    return BeautifulSoup((built_book / f"{page}.html").read_text(encoding="utf-8"), "html.parser")


def article(soup: BeautifulSoup):
    return soup.select_one("article") or soup.select_one("main")


def prose_text(soup: BeautifulSoup) -> str:
    """Текст страницы без кода, выходов ячеек и отрисованных формул: то, что читают как прозу.

    Пробелы схлопнуты, как их показывает браузер: get_text(" ") ставит пробел на каждой границе
    элементов, и «из {eval}» иначе превращается в «из  4» с двумя пробелами. Ячейки таблиц разделены
    «|», чтобы число одной колонки не читалось вместе со словом следующей.
    """
    main = BeautifulSoup(str(article(soup)), "html.parser")
    for node in main.select("pre, code, .cell_input, .cell_output, .math, script, .headerlink"):
        node.decompose()
    for cell in main.select("td, th"):
        cell.append(" | ")
    return re.sub(r"\s+", " ", main.get_text(" "))


@pytest.mark.slow
def test_no_plumbing_call_in_any_visible_code(built_book):
    for page in toc_files():
        inputs = page_soup(built_book, page).select(".cell_input, div.highlight")
        leaked = [i.get_text()[:120] for i in inputs if "keep(" in i.get_text() or "glue(" in i.get_text()]
        assert not leaked, (f"{page}: служебный вызов keep( виден читателю — перенеси его в ячейку с тегами "
                            f"remove-input и remove-output: {leaked[0]}")


def output_texts(built_book):
    """(страница, текст одного вывода ячейки) по всем страницам книги."""
    for page in toc_files():
        for output in page_soup(built_book, page).select(".cell_output, .output"):
            yield page, output.get_text()


@pytest.mark.slow
def test_no_raw_traceback_on_any_page(built_book):
    # трассировка Python или IPython (строка из дефисов, затем имя исключения) и пути машины сборки
    markers = re.compile(r"Traceback \(most recent call last\)|-{20,}\s*\n\s*\w*(?:Error|Exception)|site-packages|File /")
    for page, text in output_texts(built_book):
        found = [m.group(0) for m in markers.finditer(text)]
        assert not found, f"{page}: в выводе сырая трассировка или путь машины сборки ({found[0]!r}):\n{text[:400]}"


@pytest.mark.slow
def test_no_temporary_folder_path_in_any_output(built_book):
    # путь временной папки сборки (/tmp/tmpabc123/…, C:\\…\\Temp\\…) читателю ничего не говорит: в главе он меняется
    # при каждой сборке, а в терминале у читателя его нет
    temporary = re.compile(r"(?:/tmp/|/var/folders/|\\Temp\\)\S*|\btmp[a-z0-9_]{6,}\b")
    for page, text in output_texts(built_book):
        found = temporary.search(text)
        assert not found, f"{page}: в выводе путь временной папки {found.group(0)!r}:\n{text[:400]}"


@pytest.mark.slow
def test_no_formula_left_wrapped_in_dollars(built_book):
    for page in toc_files():
        text = prose_text(page_soup(built_book, page))
        assert "$" not in text, f"{page}: формула не отрисовалась и видна в «$»: …{text[text.index('$') - 60:text.index('$') + 60]}…"


PREPOSITIONS = {"в", "во", "из", "на", "к", "ко", "по", "о", "об", "до", "от", "с", "со", "для", "после", "при",
                "у", "без", "про", "за"}


def page_titles(built_book) -> set[str]:
    titles = set()
    for page in toc_files():
        soup = page_soup(built_book, page)
        for heading in soup.select("main h1, main h2"):
            titles.add(heading.get_text(" ", strip=True).rstrip("#").strip())
    return titles


@pytest.mark.slow
def test_no_cross_reference_title_after_a_preposition(built_book):
    titles = page_titles(built_book)
    problems = []
    for page in toc_files():
        for link in article(page_soup(built_book, page)).select("a.reference.internal"):
            text = link.get_text(" ", strip=True)
            before = link.previous_sibling
            before = before if isinstance(before, str) else ""
            words = re.findall(r"[\w-]+", before[-20:].lower())
            right_after = before.endswith((" ", "\n", "\xa0"))
            if right_after and words and words[-1] in PREPOSITIONS \
                    and (text in titles or re.match(r"(Глава|Лабораторная) \d+\.", text)):
                problems.append(f"{page}: «{words[-1]} {text}»")
    assert not problems, "после предлога стоит заголовок в именительном падеже — дай ссылке свой текст:\n" + \
        "\n".join(problems)


@pytest.mark.slow
def test_numbers_agree_with_nouns(built_book):
    problems = []
    for page in toc_files():
        soup = page_soup(built_book, page)
        # проза целиком, а выводы ячеек — построчно: числа в соседних строках вывода друг к другу не относятся
        outputs = [line for out in soup.select(".cell_output") for line in out.get_text().splitlines()]
        problems += [f"{page}: {p}" for text in [prose_text(soup), *outputs] for p in disagreements(text)]
    assert not problems, "число и существительное не согласованы (используй minirag.plural):\n" + "\n".join(problems)


MAX_PAGE_CHARS = 40_000


@pytest.mark.slow
def test_no_chapter_page_is_a_survey(built_book):
    for page in chapter_notebooks():
        text = re.sub(r"\s+", " ", article(page_soup(built_book, page)).get_text(" "))
        assert len(text) <= MAX_PAGE_CHARS, (f"{page}: {len(text)} символов текста, больше {MAX_PAGE_CHARS}: "
                                             f"раздели главу на сфокусированные")


def hit3_on_demo(embedder) -> float:
    from minirag import DEMO_DOCS, DEMO_QUERIES, Index, evaluate

    return evaluate(Index.build(DEMO_DOCS, embedder), DEMO_QUERIES, ks=(3,)).overall["hit@3"]


@pytest.mark.slow
def test_dimension_sweep_is_computed_when_the_book_is_built(built_book):
    """Глава 8 печатает hit@3 hash-эмбеддера при разных dim — те же числа, что считает библиотека сейчас."""
    from minirag import HashEmbedder

    soup = page_soup(built_book, "book/08_hash_failures")
    assert soup.select_one("#fig-ch8-dims img"), "нет рисунка с размерностями (fig-ch8-dims)"
    output = next((o.get_text() for o in soup.select(".cell_output") if "dim=4096" in o.get_text()
                   and "базовый" in o.get_text()), None)
    assert output, "в главе 8 нет напечатанной таблицы hit@3 по размерностям"
    header = next(line for line in output.splitlines() if "dim=4096" in line)
    dims = [int(d) for d in re.findall(r"dim=(\d+)", header)]
    row = next(line for line in output.splitlines() if line.startswith("базовый"))
    printed = [float(x) for x in re.findall(r"\d\.\d\d", row)]
    assert printed == [round(hit3_on_demo(HashEmbedder(d)), 2) for d in dims]


@pytest.mark.slow
def test_trained_embedder_comparison_is_computed_when_the_book_is_built(built_book):
    """Глава 9 печатает hit@3 по всем запросам для hash dim=96, честной dim, navec, BM25 и гибрида — как библиотека."""
    from minirag import (
        DEMO_DOCS,
        DEMO_QUERIES,
        HashEmbedder,
        Index,
        NavecEmbedder,
        hit_at_k,
        hybrid_search,
        index_bm25,
        tokenize,
    )

    table = next(t for t in page_soup(built_book, "book/09_bm25_hybrid").select("table") if "navec" in t.get_text())
    header = [th.get_text(strip=True) for th in table.select("thead th")]
    row = next(tr for tr in table.select("tbody tr") if "все запросы с ответом" in tr.get_text())
    printed = dict(zip(header, [td.get_text(strip=True).strip("*") for td in row.select("td")]))
    fair_dim = int(re.search(r"hash, dim=(\d+)", " ".join(h for h in header if h != "hash, dim=96")).group(1))
    fair = Index.build(DEMO_DOCS, HashEmbedder(fair_dim, stem=True))
    bm25 = index_bm25(fair)
    labeled = [q for q in DEMO_QUERIES if q.relevant]

    def hit3(search):
        return sum(hit_at_k(search(q.text), q.relevant, 3) for q in labeled) / len(labeled)

    expected = {
        "hash, dim=96": hit3_on_demo(HashEmbedder(96)),
        f"hash, dim={fair_dim}": hit3_on_demo(HashEmbedder(fair_dim, stem=True)),
        "navec": hit3_on_demo(NavecEmbedder()),
        "BM25": hit3(lambda q: [fair.chunk(i).doc_id for i, _ in bm25.search(tokenize(q, stem=True), 3)]),
        "гибрид": hit3(lambda q: [h.doc_id for h in hybrid_search(fair, q, k=3, bm25=bm25, exact=False)]),
    }
    assert {name: float(printed[name]) for name in expected} == {k: round(v, 2) for k, v in expected.items()}


@pytest.fixture(scope="session")
def served_book(built_book):
    class QuietHandler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(QuietHandler, directory=str(built_book))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()




SCREENSHOTS = ROOT / "_build" / "screenshots"


@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.parametrize("page", toc_files())
def test_every_page_loads_in_chromium_without_console_errors(browser, served_book, page):
    tab = browser.new_page(viewport={"width": 1280, "height": 900})
    errors: list[str] = []
    tab.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.goto(f"{served_book}/{page}.html", wait_until="networkidle")
    assert tab.locator("main h1:visible").count() > 0, f"{page}: не видно заголовка главы"
    if page in chapter_notebooks():
        images = tab.locator("main img")
        assert images.count() > 0, f"{page}: в браузере не видно рисунков"
        broken = tab.evaluate("[...document.querySelectorAll('main img')].filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)")
        assert broken == [], f"{page}: не загрузились рисунки {broken}"
    if page in {"book/00_intro", "book/02_cosine"}:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        tab.screenshot(path=str(SCREENSHOTS / f"{Path(page).name}.png"), full_page=False)
    tab.close()
    assert errors == [], f"{page}: ошибки в консоли браузера: {errors}"


@pytest.mark.slow
@pytest.mark.browser
def test_search_finds_cosine_in_russian(browser, served_book):
    tab = browser.new_page()
    tab.goto(f"{served_book}/search.html?q=косинус", wait_until="networkidle")
    results = tab.locator("#search-results li a")
    results.first.wait_for(timeout=30_000)
    links = [results.nth(i).get_attribute("href") for i in range(results.count())]
    tab.close()
    assert any("02_cosine" in (link or "") for link in links), f"поиск «косинус» не нашёл главу о косинусе: {links}"

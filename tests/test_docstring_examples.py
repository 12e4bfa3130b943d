"""Примеры из докстрингов библиотеки исполняются: «Пример: ``выражение`` → ``результат``» — это тест.

Сборщик читает докстринги всех модулей minirag (модуль, классы, функции, методы, свойства),
берёт из абзаца «Пример:» (до «Глава N») каждый кусок ``код`` и исполняет его:

* ``код`` → ``результат`` — значение кода должно быть равно значению результата; «…» в
  результате значит «дальше что угодно» и сверяется с repr значения (``0.7071…``); если
  результат — класс ошибки, код должен бросить эту ошибку;
* ``код`` без стрелки — код должен выполниться без ошибки.

Не исполняются (и не собираются) только примеры, которым нужен сервер модели (``OllamaChat``,
``OpenAIChat``, ``chat`` — любая чат-модель, адрес ``http://``) или командная строка (``python -m``):
их поведение проверяют test_remote, test_rewrite и test_cli на подставных серверах и моделях.
Код выполняется во временной папке, где уже лежат ``demo.minirag`` (индекс демо-корпуса),
``docs/отпуск.md`` и ``мои_документы/``; в его пространстве имён — всё из ``minirag``,
глобальные имена его модуля, ``np`` и общие заготовки: ``index`` (демо-корпус),
``query``/``q``, ``hits`` (top-3 по ``query``), ``hit_a``, ``hit_b``.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pkgutil
import re
from pathlib import Path

import numpy as np
import pytest

import minirag

NEEDS_OUTSIDE = re.compile(r"\b(?:OllamaChat|OpenAIChat|OllamaEmbedder|OpenAIEmbedder|CrossEncoderScorer|chat)\b"
                           r"|python -m|https?://")
EXAMPLE_RE = re.compile(r"Пример:(.*?)(?:Глава \d|$)", re.S)
CODE_RE = re.compile(r"``(.+?)``(?:\s*→\s*``(.+?)``)?")


def docstrings():
    """(имя, докстринг) для модулей minirag, их классов, функций, методов и свойств."""
    for info in pkgutil.iter_modules(minirag.__path__):
        module = importlib.import_module(f"minirag.{info.name}")
        yield module.__name__, module, module.__doc__
        for name, obj in vars(module).items():
            if not (inspect.isclass(obj) or inspect.isfunction(obj)) or obj.__module__ != module.__name__:
                continue
            yield f"{module.__name__}.{name}", module, obj.__doc__
            members = vars(obj).items() if inspect.isclass(obj) else ()
            for member_name, member in members:
                function = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
                if inspect.isfunction(function):
                    yield f"{module.__name__}.{name}.{member_name}", module, function.__doc__


def regions():
    """(где, модуль, текст абзаца «Пример:») для каждого примера в докстрингах."""
    for where, module, doc in docstrings():
        text = re.sub(r"\s*\n\s*", " ", doc or "")  # перенос строки — пробел; пробелы внутри строки остаются
        for region in EXAMPLE_RE.findall(text):
            yield where, module, region


ALL = [(where, module, code, want or None) for where, module, region in regions() for code, want in CODE_RE.findall(region)]
EXAMPLES = [pytest.param(module, code, want, id=f"{where}: {code[:50]}")
            for where, module, code, want in ALL if not NEEDS_OUTSIDE.search(code)]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("examples")
    index = minirag.Index.build(minirag.DEMO_DOCS)
    index.save(folder / "demo.minirag")
    (folder / "docs").mkdir()
    (folder / "docs" / "отпуск.md").write_text("# Отпуск\n\nОтпуск длится 28 дней.\n", encoding="utf-8")
    (folder / "мои_документы").mkdir()
    (folder / "мои_документы" / "пропуск.txt").write_text("Пропуск выдаёт охрана.", encoding="utf-8")
    query = "Сколько дней отпуска?"
    hits = index.search(query, k=3)
    shared = {"index": index, "query": query, "q": query, "hits": hits, "hit_a": hits[0], "hit_b": hits[1]}
    return folder, shared


def run(code: str, namespace: dict):
    """Выполнить код примера и вернуть значение последнего выражения (или None)."""
    tree = ast.parse(code, mode="exec")
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, "<пример>", "exec"), namespace)  # noqa: S102 — код из наших докстрингов
    return eval(compile(ast.Expression(last.value), "<пример>", "eval"), namespace) if last else None


def test_examples_were_found_and_most_state_their_result():
    assert len(ALL) >= 110 and len(EXAMPLES) >= 90
    assert sum(p.values[2] is not None for p in EXAMPLES) >= 85, "почти каждый пример — со стрелкой и результатом"


def chapter_titles() -> dict[int, str]:
    """Номер главы → её название из первого заголовка ``# …`` ноутбука book/NN_*.ipynb (введение — глава 0)."""
    titles = {}
    for path in sorted((Path(__file__).resolve().parents[1] / "book").glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        heading = next("".join(c["source"]) for c in cells
                       if c["cell_type"] == "markdown" and "".join(c["source"]).startswith("# "))
        titles[int(path.name[:2])] = re.sub(r"^Глава \d+\. ", "", heading.splitlines()[0][2:].strip())
    return titles


def test_every_chapter_a_docstring_points_to_exists_under_that_title():
    """«Глава N. Название.» в докстринге — куда идти читать: глава с таким номером и названием должна быть в книге."""
    titles = chapter_titles()
    wrong = sorted({(where, ref.group(0)) for where, _, doc in docstrings()
                    for ref in re.finditer(r"Глава (\d+)\. ([^.]+)\.", re.sub(r"\s*\n\s*", " ", doc or ""))
                    if titles.get(int(ref.group(1))) != ref.group(2)})
    assert len(titles) >= 12 and not wrong, f"ссылки на главы, которых в книге нет (главы: {titles}): {wrong[:20]}"


def test_every_arrow_in_an_example_points_from_code_to_a_result_in_backticks():
    loose = [(where, region) for where, _, region in regions()
             if region.count("→") != sum(bool(want) for _, want in CODE_RE.findall(region))]
    assert not loose, f"«→» без ``результата`` — такой пример не проверить: {loose}"


@pytest.mark.parametrize("module, code, want", EXAMPLES)
def test_docstring_example(module, code, want, workdir, monkeypatch):
    folder, shared = workdir
    monkeypatch.chdir(folder)
    namespace = {**{name: getattr(minirag, name) for name in minirag.__all__}, **vars(module), "np": np,
                 "array": np.array, **shared}
    expected = None if want is None or "…" in want else eval(want, namespace)
    if isinstance(expected, type) and issubclass(expected, BaseException):
        with pytest.raises(expected):
            run(code, namespace)
        return
    actual = run(code, namespace)
    if want is None:
        return
    if "…" in want:
        pattern = ".*?".join(re.escape(part) for part in want.split("…"))
        assert re.fullmatch(pattern, repr(actual), re.S), f"{code} → {actual!r}, а в докстринге {want}"
    elif isinstance(actual, np.ndarray) or isinstance(expected, np.ndarray):
        assert np.array_equal(np.asarray(actual), np.asarray(expected)), f"{code} → {actual!r}, а в докстринге {want}"
    else:
        assert actual == expected, f"{code} → {actual!r}, а в докстринге {want}"

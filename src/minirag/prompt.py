"""Промпт с пронумерованными источниками и проверка цитат в ответе.

``build_prompt`` кладёт найденные чанки в контекст под номерами [1], [2], … и
добавляет правила: отвечать только по контексту, ставить ссылку после каждого
утверждения, а если ответа нет — сказать это фразой ``REFUSAL``. ``parse_prompt`` читает
такой промпт обратно (вопрос и тексты источников, ``parse_sources`` — ещё и их заголовки):
формат промпта живёт только здесь.
``check_citations`` проверяет ответ кодом: нет ли ссылок на несуществующие номера
и нет ли предложений без ссылки. Модуль не вызывает языковую модель и не знает,
правдиво ли утверждение: цитата говорит, откуда взято, а не что это верно.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from .text import CITATION_RE, whole_sentences
from .types import Hit
from .validate import require_hits, require_text

REFUSAL = "В контексте ответа нет."

RULES = (
    "Правила ответа:\n"
    "1. Отвечай только по контексту ниже, ничего не добавляй от себя.\n"
    "2. После каждого утверждения ставь номер источника в квадратных скобках, например [1].\n"
    f"3. Если в контексте нет ответа, ответь ровно: «{REFUSAL}»"
)

# Части промпта: RULES, _CONTEXT, источники через _SOURCE_SEP, _QUESTION вопрос, _ANSWER.
_CONTEXT, _QUESTION, _ANSWER, _SOURCE_SEP = "\n\nКонтекст:\n", "\n\nВопрос: ", "\nОтвет:", "\n\n"
_NOTHING_FOUND = "(поиск ничего не нашёл)"
# Заголовок источника: «[n] title (doc_id, чанк chunk_id)», текст чанка — со следующей строки.
_SOURCE_RE = re.compile(r"^\[(\d+)\] (.*) \(.*, чанк \d+\)$", re.MULTILINE)


def build_prompt(query: str, hits: Sequence[Hit]) -> str:
    """Собрать промпт: правила, источники [1]…[k] с doc_id и chunk_id, вопрос.

    Пример: ``build_prompt("Сколько дней отпуска?", hits).splitlines()[-1]`` → ``'Ответ:'``.
    Глава 6. Промпт и цитаты.
    """
    require_text(query, "Вопрос")
    hits = require_hits(hits)
    sources = [f"[{n}] {hit.title} ({hit.doc_id}, чанк {hit.chunk_id})\n{hit.text}" for n, hit in enumerate(hits, start=1)]
    context = _SOURCE_SEP.join(sources) or _NOTHING_FOUND
    return f"{RULES}{_CONTEXT}{context}{_QUESTION}{query.strip()}{_ANSWER}"


def parse_prompt(prompt: str) -> tuple[str, list[str]] | None:
    """Прочитать промпт ``build_prompt`` обратно: вопрос и тексты источников [1]…[k] по порядку.

    Промпт другого вида (нет контекста и вопроса) — ``None``. Строка текста, похожая на
    заголовок источника, за источник не считается, если её номер не следующий по порядку.
    Пример: ``parse_prompt(build_prompt("Сколько дней?", []))`` → ``('Сколько дней?', [])``.
    Глава 11. Генератор и настоящие модели.
    """
    parsed = parse_sources(prompt)
    return None if parsed is None else (parsed[0], [text for _, text in parsed[1]])


def parse_sources(prompt: str) -> tuple[str, list[tuple[str, str]]] | None:
    """То же, что ``parse_prompt``, но каждый источник — пара (заголовок, текст): заголовок — то,
    что стоит в строке «[n] заголовок (doc_id, чанк k)» до скобки с doc_id.

    Пример: ``parse_sources(build_prompt("Сколько дней?", hits[:1]))[1][0][0]`` → ``'Ежегодный отпуск'``.
    Глава 11. Генератор и настоящие модели.
    """
    require_text(prompt, "Промпт")
    start, end = prompt.find(_CONTEXT), prompt.rfind(_QUESTION)
    if start < 0 or end < start:
        return None
    context = prompt[start + len(_CONTEXT) : end]
    query = prompt[end + len(_QUESTION) :].removesuffix(_ANSWER)
    headers = []
    for match in _SOURCE_RE.finditer(context):
        if int(match.group(1)) == len(headers) + 1:
            headers.append(match)
    ends = [h.start() - len(_SOURCE_SEP) for h in headers[1:]] + [len(context)]  # текст — до разделителя
    return query, [(h.group(2), context[h.end() + 1 : end]) for h, end in zip(headers, ends, strict=False)]


def parse_citations(answer: str) -> list[int]:
    """Номера источников из ссылок вида [1], [2, 3] — по порядку появления, с повторами.

    Пример: ``parse_citations("Да [1]. И ещё [2, 3].")`` → ``[1, 2, 3]``. Глава 6. Промпт и цитаты.
    """
    require_text(answer, "Ответ")
    return [int(n) for group in CITATION_RE.findall(answer) for n in group.split(",")]


@dataclass(frozen=True)
class CitationReport:
    """Итог проверки цитат: ``ok`` — ссылки есть у каждого утверждения и все номера существуют.

    Пример: ``check_citations("Отпуск 28 дней [1].", hits).ok`` → ``True``. Глава 6. Промпт и цитаты.
    """

    ok: bool
    cited: tuple[int, ...]
    unknown: tuple[int, ...]
    uncited_sentences: tuple[str, ...]
    refusal: bool

    def __str__(self) -> str:
        if self.ok:
            return "Цитаты в порядке: " + ("честный отказ." if self.refusal else f"источники {list(self.cited)}.")
        problems = []
        if self.unknown:
            problems.append(f"ссылки на несуществующие источники {list(self.unknown)}")
        if self.uncited_sentences:
            problems.append("предложения без ссылки: " + "; ".join(f"«{s}»" for s in self.uncited_sentences))
        if not problems:
            problems.append("в ответе нет ни одного утверждения")
        return "Цитаты не проходят проверку: " + ", ".join(problems) + "."


def check_citations(answer: str, hits: Sequence[Hit]) -> CitationReport:
    """Проверить ответ: каждый номер есть среди источников, у каждого утверждения есть ссылка.

    Утверждения — предложения ответа (``whole_sentences``): ссылка, оторванная точкой («… дней. [1]»),
    принадлежит предложению до неё. Честный отказ (фраза ``REFUSAL`` без других утверждений) проходит проверку.
    Пример: ``check_citations("Отпуск 28 дней [7].", hits[:3]).unknown`` → ``(7,)``.
    Глава 6. Промпт и цитаты.
    """
    require_text(answer, "Ответ")
    hits = require_hits(hits)
    cited = parse_citations(answer)
    unknown = tuple(sorted({n for n in cited if not 1 <= n <= len(hits)}))
    refusal_core = REFUSAL.rstrip(".").lower()
    claims = [c for c in whole_sentences(answer) if c.rstrip(".!…").strip().lower() != refusal_core]
    refusal = refusal_core in answer.lower() and not claims
    uncited = tuple(c for c in claims if not CITATION_RE.search(c))
    ok = not unknown and not uncited and (bool(claims) or refusal)
    return CitationReport(ok, tuple(dict.fromkeys(cited)), unknown, uncited, refusal)

"""Поиск для ответа: выбранный метод и порог отказа, который решает за весь вопрос.

``Retriever(index, method)`` ищет косинусом, BM25 или гибридом (RRF) и отдаёт лучшие k чанков
через ``search(query, k, threshold)`` — тот интерфейс, который ждёт ``answer``. Порог здесь — не
фильтр каждого чанка, а ворота вопроса: если лучший чанк по косинусу ниже порога, вопрос не о
корпусе и найдено ничего; если выше — отдаются лучшие k, даже те, что ниже порога. Так порог,
калиброванный по лучшим оценкам вопросов не о корпусе (``calibrate``), сравнивается ровно с тем,
что калибровалось, — с лучшей оценкой, — а генератор выбирает предложения из k кандидатов, а не
из одного-двух, переживших фильтр. Порог — всегда косинус эмбеддера индекса, при любом методе.
Вторые ворота — ``evidence``: вопрос, не прошедший порог, всё же получает свои k чанков, если в
одном их предложении нашлась доля веса слов вопроса не меньше ``evidence`` (``terms.best_coverage``).
Косинус меряет похожесть всего чанка, и короткий вопрос к длинному чанку набирает мало, даже когда
все его слова стоят в одном предложении; ``evidence`` калибруется так же, по вопросам не о корпусе.
Третьи — ``familiar``: вопрос, все слова которого есть в корпусе (``TermWeights.knows_all``), проходит без
порога косинуса — его останавливает только доля слов в предложении у генератора; порог решает за вопросы со
словом, которого в корпусе нет (так отказывают вопросы о соседней теме: «водное поло» у бассейна без поло).
``term_weights`` — веса слов по чанкам этого индекса (``terms.TermWeights``): ``answer`` отдаёт
их экстрактивному генератору, и тот меряет предложение долей веса вопроса, а не числа его слов.
Модуль не строит индекс и не пишет ответ: это ``index`` и ``generate``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cached_property

from .hybrid import hybrid_search, index_bm25
from .index import Index, require_index
from .terms import TermWeights, best_coverage, question_terms
from .text import stem_token, tokenize
from .topk import top_k
from .types import Hit, renumber
from .validate import require_choice, require_k, require_number, require_threshold

METHODS = ("cosine", "bm25", "hybrid")


class Retriever:
    """Поиск методом ``method`` (cosine, bm25 или hybrid) с порогом-воротами: ``search(query, k, threshold)``.

    ``evidence`` — вторые ворота (доля веса слов вопроса в одном предложении найденных чанков, от 0 до 1):
    вопрос ниже порога проходит, если набрал её; ``None`` — ворота только по косинусу.
    Пример: ``Retriever(index).search("Как приготовить борщ?", k=8, threshold=0.5)`` → ``[]``;
    ``len(Retriever(index).search("Сколько дней отпуска?", k=8, threshold=0.2))`` → ``8``.
    Глава 12. Переписать запрос: HyDE, расширение и командная строка.
    """

    def __init__(self, index: Index, method: str = "cosine", *, evidence: float | None = None,
                 familiar: bool = False):
        self.index = require_index(index)
        self.familiar = bool(familiar)
        self.method = require_choice(method, "method", METHODS)
        self.evidence = None if evidence is None else require_number(
            evidence, "evidence", 0.0, 1.0, hint="Это доля веса слов вопроса в предложении, например 0.5.")
        self.embedder = index.embedder  # answer берёт его для запасного экстрактивного генератора
        self._bm25 = index_bm25(index) if method != "cosine" else None

    def __repr__(self) -> str:
        evidence = "" if self.evidence is None else f", evidence={self.evidence:g}"
        familiar = ", familiar=True" if self.familiar else ""
        return f"Retriever({self.index!r}, method={self.method!r}{evidence}{familiar})"

    @cached_property
    def term_weights(self) -> TermWeights:
        """Веса слов (idf) по текстам чанков индекса — с заголовками, как они эмбеддились; строятся один раз."""
        return TermWeights(self.index.indexed_text(i) for i in range(len(self.index)))

    def search(self, query: str, k: int = 3, threshold: float | None = None) -> list[Hit]:
        """Лучшие k чанков методом поиска; пусто, если лучший косинус ниже ``threshold``, а ворота ``evidence``
        (если заданы) вопрос тоже не прошёл."""
        k = require_k(k)
        scores = self.index.scores(query)
        if threshold is None or len(top_k(scores, 1, require_threshold(threshold))) or self.knows(query):
            return self._hits(query, scores, k)
        if self.evidence is None:
            return []  # лучший чанк не прошёл порог (с той же погрешностью, что у index.search)
        hits = self._hits(query, scores, k)
        return hits if self.evidence_of(query, hits) >= self.evidence else []

    def knows(self, query: str) -> bool:
        """Пропустят ли вопрос третьи ворота: ``familiar`` задан и все слова вопроса есть в корпусе."""
        return self.familiar and self.term_weights.knows_all(question_terms(query))

    def unknown_words(self, query: str) -> list[str]:
        """Слова вопроса, как они в нём написаны, которых нет ни в одном чанке корпуса и с другим окончанием.

        Такое слово весит в доле слов больше всех (``TermWeights``): из-за разговорного «заселяться», когда в
        документах «заселение», честный вопрос получает отказ. Подсказка пользователю: спроси словами документов.
        Пример: ``Retriever(index).unknown_words("Сколько дней длится отпуск на Марсе?")`` → ``['Марсе']``.
        Глава 12. Переписать запрос: HyDE, расширение и командная строка.
        """
        terms = set(question_terms(query))
        unknown = dict.fromkeys(word for word in tokenize(query) if (stem := stem_token(word)) in terms
                                and not self.term_weights.knows_all([stem]))
        shown = []
        for word in unknown:  # tokenize пишет строчными; показываем, как написал человек: «ОСАГО», а не «осаго»
            written = re.search(re.escape(word), query, re.IGNORECASE)
            shown.append(written.group() if written else word)
        return shown

    def refusal_hint(self, query: str, hits: Sequence[Hit], k: int = 3) -> str:
        """Что сказать под отказом на ``query``: слова вопроса, которых нет в корпусе, и — если ворота ничего не
        отдали (``hits`` пуст) — ``k`` ближайших чанков с началом текста; всё незнакомо — что вопрос не о корпусе.

        Пример: ``Retriever(index).refusal_hint("Как сварить кашу?", []).strip()`` → ``'Ни одного слова вопроса нет…``.
        Глава 12. Переписать запрос: HyDE, расширение и командная строка.
        """
        unknown = self.unknown_words(query)
        if unknown and len(unknown) == len(question_terms(query)):
            return "\nНи одного слова вопроса нет в документах ни в какой форме: вопрос, похоже, не о них."
        lines = []
        if not hits:
            lines.append("\nБлиже всего, хоть и не прошли ворота:")
            for hit in self.search(query, k=k):
                text = " ".join(hit.text.split())
                lines += [f"  [{hit.rank}] {hit.doc_id}, чанк {hit.chunk_id} — {hit.title}",
                          f"      {_text_start(text, 160)}"]
        if unknown:
            this, such = ("Этого слова", "Такое слово весит больше всех и тянет") if len(unknown) == 1 else \
                ("Этих слов", "Такие слова весят больше всех и тянут")
            lines.append(f"\n{this} вопроса нет в документах ни в какой форме: {', '.join(f'«{w}»' for w in unknown)}. "
                         f"{such} к отказу: если ответ в документах есть, спроси их словами.")
        return "\n".join(lines)

    def evidence_of(self, query: str, hits: list[Hit]) -> float:
        """Доля веса слов вопроса в лучшем предложении чанков ``hits`` (то, что сравнивается с ``evidence``)."""
        return best_coverage(query, [(hit.title, hit.text) for hit in hits], self.term_weights)

    def _hits(self, query: str, scores, k: int) -> list[Hit]:
        if self.method == "cosine":
            return [self.index.hit(int(i), scores[i], rank) for rank, i in enumerate(top_k(scores, k), start=1)]
        if self.method == "hybrid":
            return hybrid_search(self.index, query, k=k, bm25=self._bm25)
        stem = bool(getattr(self.index.embedder, "stem", False))
        found = self._bm25.search(tokenize(query, stem=stem), k)
        return renumber(self.index.hit(i, score) for i, score in found)


_CUT_RE = re.compile(r"(?<!\d) | (?!\d)")  # пробел, который не внутри числа «1 700»


def _text_start(text: str, limit: int) -> str:
    """Начало текста до ``limit`` символов, обрезанное по пробелу не внутри числа («1 7…» читалось бы как 1 7)."""
    if len(text) <= limit:
        return text
    cuts = [m.start() for m in _CUT_RE.finditer(text[: limit + 2]) if m.start() <= limit]  # +2: видно, что за пробелом
    return text[: cuts[-1] if cuts else limit].rstrip(" |,;:") + " …"

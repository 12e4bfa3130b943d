"""Слова вопроса в предложении: насколько предложение отвечает на вопрос.

``match`` оценивает предложение по словам вопроса: ``question_terms`` — основы (стеммер
Snowball) слов вопроса без служебных: местоимений, предлогов, союзов, частиц, вопросительных, связочных
и модальных слов («как», «сколько», «в», «у нас», «является», «может», «должен»). Служебное
слово узнаётся целиком, а не по основе: «меню» — не «меня», «приём» — не «при».
Основа вопроса совпадает со словом предложения, если основы равны, одна — начало другой
(от четырёх букв: «hash» и «hashembedder») или они отличаются одной буквой (от пяти букв:
опечатка). Оценка — доля совпавших основ вопроса (``coverage``) и их кучность: совпавшие
слова стоят рядом или вразброс по длинному предложению. Доля бывает взвешенной: ``TermWeights``
даёт каждой основе вес idf по своему корпусу (чем в меньшем числе чанков слово, тем оно весомее;
слова, которого в корпусе нет, — весомее всех), и тогда вопрос о цене билета на поезд не находит
ответа в предложении, где с ним совпало одно частое «стоит». Предложение читается в своём разделе:
слова заголовка источника (``context``) тоже засчитываются, если в самом предложении есть
хотя бы одно слово вопроса. ``about_code`` и ``expects_number`` говорят, о коде ли вопрос и число ли
ответ на него. Какие предложения чанка вообще можно цитировать, решает ``sentences``; ``best_coverage``
сводит оба модуля: лучшая доля слов вопроса в одном предложении источников. Модуль не знает про
поиск и индекс, не понимает синонимов и смысла: «отпуск» и «отдых» для него разные слова.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property

from .bm25 import lucene_idf
from .errors import MiniRagError
from .plural import plural
from .sentences import candidate_sentences
from .text import stem_token, tokenize

# Служебные и вопросительные слова: в вопросе они есть всегда, а об ответе не говорят ничего. Сравниваются
# слова, а не основы: у «меня» и «меню», «при» и «приём», «тем» и «тема» основа одна, а смысл разный.
STOP_WORDS = frozenset("""
я меня мне мной ты тебя тебе тобой он его него ему нему им ним нём нем она её ее неё нее ей ней ею нею оно
мы нас нам нами вы вас вам вами они их них ими ними
мой моя моё мое мои мою моего моей моему моим моих моими моём моем твой твоя твоё твое твои твою твоего твоей
твоему твоим твоих твоими твоём твоем наш наша наше наши нашу нашего нашей нашему нашим наших нашими нашем
ваш ваша ваше ваши вашу вашего вашей вашему вашим ваших вашими вашем свой своя своё свое свои свою своего
своей своему своим своих своими своём своем
этот эта это эти эту этого этой этому этим этих этими этом тот та то те ту того той тому тем тех теми том
такой такая такое такие такую такого такому таким таких такими таком
весь вся всё все всю всего всей всему всем всех всеми сам сама само сами саму самого самой самому самим самих
каждый каждая каждое каждые каждую каждого каждой каждому каждым каждом каждых
кто кого кому кем ком что чего чему чем чём какой какая какое какие какую какого какому каким каких какими
каком каков какова каково каковы чей чья чьё чье чьи сколько где куда откуда когда почему зачем как
который которая которое которые которую которого которой которому которым котором которых которыми
в во на над под о об обо от из к ко с со у за до по при про через для без перед между около возле вокруг
после вместо кроме сквозь вдоль мимо вне
и а но или либо да же ли если чтобы хотя пока тоже также зато однако поэтому потому будто
не ни нет ну бы вот вон даже лишь только уж уже ещё еще разве неужели себя себе собой
очень так там тут здесь сейчас теперь тогда всегда никогда иногда обычно снова опять заново сразу потом затем
прежде примерно вообще
быть был была было были будет будут есть является являются находится находятся называется называются
означает бывает считается принято
может могут можно нужно надо нельзя нужен нужна нужны должен должна должно должны хочу хотим хотите
a an the of to in on at for by is are was be do does did what which who whom how when where why
""".split())
_STOP_KEYS = frozenset(word.replace("ё", "е") for word in STOP_WORDS)

# Слова, по которым видно, что вопрос о коде (основы Snowball).
_CODE_STEMS = frozenset({"код", "команд", "функц", "вызов", "вызыва", "метод", "класс", "импорт", "аргумент",
                         "параметр", "python", "pip", "скрипт", "терминал", "консол"})
# Основы, по которым видно, что ответ — число: «сколько», «какое значение», «какая версия»…
_NUMBER_STEMS = frozenset({"скольк", "значен", "номер", "верс", "числ", "размер", "процент"})
_DIGIT_RE = re.compile(r"\d")
_CODE_MARK_RE = re.compile(r"`|\w\(|\w_\w|--\w|\.py\b|=")


def question_terms(query: str) -> list[str]:
    """Основы слов вопроса без служебных и вопросительных, по порядку и без повторов.

    Вопрос из одних служебных слов отдаёт все свои основы. Пример:
    ``question_terms("Сколько дней длится отпуск?")`` → ``['дне', 'длит', 'отпуск']``. Глава 11. Генератор и настоящие модели.
    """
    words = tokenize(query)
    content = [word for word in words if word.replace("ё", "е") not in _STOP_KEYS] or words
    return list(dict.fromkeys(stem_token(word) for word in content))


def about_code(query: str) -> bool:
    """Вопрос о коде: в нём есть `обратные кавычки`, скобки вызова, ``имя_с_подчёркиванием``, ``--флаг``
    или слова «код», «команда», «функция», «параметр»…

    Пример: ``about_code("Какая команда строит индекс?")`` → ``True``. Глава 11. Генератор и настоящие модели.
    """
    return bool(_CODE_MARK_RE.search(query)) or any(s in _CODE_STEMS for s in tokenize(query, stem=True))


def expects_number(query: str) -> bool:
    """Ответ на вопрос — число: в вопросе «сколько», «какое значение», «номер», «версия», «размер»…

    Пример: ``expects_number("Сколько дней длится отпуск?")`` → ``True``. Глава 11. Генератор и настоящие модели.
    """
    return any(s in _NUMBER_STEMS for s in tokenize(query, stem=True))


def has_number(sentence: str) -> bool:
    """Есть ли в предложении цифра. Пример: ``has_number("Отпуск — 28 дней.")`` → ``True``."""
    return bool(_DIGIT_RE.search(sentence))


def _one_edit(a: str, b: str) -> bool:
    """Отличаются ровно одной заменой, вставкой или удалением буквы."""
    if abs(len(a) - len(b)) > 1 or a == b:
        return False
    if len(a) > len(b):
        a, b = b, a
    i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), len(a))
    return a[i + 1:] == b[i + 1:] if len(a) == len(b) else a[i:] == b[i + 1:]


def _same(term: str, word: str) -> bool:
    if term == word:
        return True
    if min(len(term), len(word)) >= 4 and (word.startswith(term) or term.startswith(word)):
        return True
    return min(len(term), len(word)) >= 5 and _one_edit(term, word)


@dataclass(frozen=True)
class Match:
    """Насколько предложение отвечает на вопрос: доля основ вопроса в нём и их кучность (обе от 0 до 1)."""

    coverage: float
    compactness: float

    @property
    def score(self) -> float:
        """Оценка для сортировки: доля совпавших основ, при равной доле — кучнее выше."""
        return self.coverage * (0.9 + 0.1 * self.compactness)


class TermWeights:
    """Веса основ вопроса по корпусу: idf, как в BM25 (``bm25.lucene_idf``), ``ln(1 + (N − df + 0.5)/(df + 0.5))``.

    N — число текстов корпуса (чанков индекса), df — в скольких из них есть слово, которое
    ``match`` счёл бы той же основой (равная основа, начало другой, одна опечатка). Слово,
    которого нет ни в одном тексте, получает наибольший вес ``ln(1 + (N + 0.5)/0.5)``: вопрос,
    главные слова которого корпусу незнакомы, — скорее всего не о нём.
    Пример: ``TermWeights(["отпуск 28 дней", "отпуск летом", "пропуск в офис"])(["отпуск", "пропуск", "погод"])``
    → ``[0.47…, 0.98…, 2.07…]``. Глава 12. Переписать запрос: HyDE, расширение и командная строка.
    """

    def __init__(self, texts: Iterable[str]):
        self._docs: dict[str, set[int]] = {}  # основа слова → номера текстов, где она есть
        self.n_texts = 0
        for i, text in enumerate(texts):
            for word in set(tokenize(text, stem=True)):
                self._docs.setdefault(word, set()).add(i)
            self.n_texts = i + 1
        self._cache: dict[str, float] = {}

    def __repr__(self) -> str:
        return f"TermWeights({plural(self.n_texts, 'текст', 'текста', 'текстов')}, " \
               f"{plural(len(self._docs), 'основа', 'основы', 'основ')})"

    @cached_property
    def _lookup(self) -> tuple[list[str], dict[str, list[str]]]:
        """Словарь по алфавиту (слова, начинающиеся с основы) и «слово без одной буквы» → слова (опечатки)."""
        words, near = sorted(self._docs), {}
        for word in words:
            if len(word) >= 4:
                for key in {word} | {word[:i] + word[i + 1:] for i in range(len(word))}:
                    near.setdefault(key, []).append(word)
        return words, near

    def _candidates(self, term: str) -> set[str]:
        """Слова корпуса, которые могут совпасть с основой по правилам ``_same``, — без перебора всего словаря.

        Начало другой: слова от ``term`` до ``term + '\\uffff'`` по алфавиту и начала самой ``term``. Одна
        опечатка (замена, вставка, удаление): у таких двух слов общий «остаток без одной буквы» или одно из них —
        остаток другого (так ищет опечатки SymSpell)."""
        found = {term} & self._docs.keys()
        if len(term) >= 4:
            words, near = self._lookup
            start = bisect.bisect_left(words, term)
            found.update(words[start:bisect.bisect_left(words, term + "\uffff", start)])
            found.update(term[:i] for i in range(4, len(term)) if term[:i] in self._docs)
            for key in {term} | {term[:i] + term[i + 1:] for i in range(len(term))}:
                found.update(near.get(key, ()))
        return found

    def _df(self, term: str) -> int:
        """В скольких текстах есть слово, совпадающее с основой по правилам ``match``."""
        if term not in self._cache:
            found: set[int] = set()
            for word in self._candidates(term):
                if _same(term, word):
                    found |= self._docs[word]
            self._cache[term] = len(found)
        return self._cache[term]

    def weight(self, term: str) -> float:
        """Вес одной основы: idf по текстам, где есть слово, совпадающее с ней по правилам ``match``."""
        return float(lucene_idf(self.n_texts, self._df(term)))

    def knows_all(self, terms: Sequence[str]) -> bool:
        """Все ли основы есть хотя бы в одном тексте корпуса (пустой список — нет: знать нечего).

        Пример: ``TermWeights(["отпуск 28 дней"]).knows_all(["отпуск", "дне"])`` → ``True``;
        ``TermWeights(["отпуск 28 дней"]).knows_all(["отпуск", "погод"])`` → ``False``.
        Глава 12. Переписать запрос: HyDE, расширение и командная строка.
        """
        return bool(terms) and all(self._df(term) > 0 for term in terms)

    def __call__(self, terms: Sequence[str]) -> list[float]:
        return [self.weight(term) for term in terms]


def match(terms: list[str], sentence: str, context: str = "", weights: Sequence[float] | None = None) -> Match:
    """Оценить предложение по основам вопроса ``terms`` (из ``question_terms``).

    ``context`` — заголовок источника (документ и раздел): основа вопроса, которой нет в
    предложении, но есть в заголовке, тоже засчитывается — если в самом предложении нашлась
    хотя бы одна. Кучность считается только по словам предложения. ``weights`` — вес каждой
    основы (``TermWeights``): доля тогда — доля веса вопроса, а не числа его слов; без них все
    основы весят одинаково.
    Пример: ``match(question_terms("Сколько дней длится отпуск?"), "Отпуск длится 28 дней.").coverage``
    → ``1.0``; ``match(["отпуск", "перенос"], "Заявление подают за две недели.", "Отпуск").coverage`` → ``0.0``.
    Глава 12. Переписать запрос: HyDE, расширение и командная строка.
    """
    weights = [1.0] * len(terms) if weights is None else [float(w) for w in weights]
    if len(weights) != len(terms):
        raise MiniRagError(f"весов {len(weights)}, а основ вопроса {len(terms)}: нужен вес на каждую основу")
    words = tokenize(sentence, stem=True)
    around = tokenize(context, stem=True) if context.strip() else []
    positions, found = [], 0.0
    for term, weight in zip(terms, weights):
        where = next((i for i, word in enumerate(words) if _same(term, word)), None)
        if where is not None:
            positions.append(where)
            found += weight
        elif any(_same(term, word) for word in around):
            found += weight
    if not terms or not positions or sum(weights) <= 0:
        return Match(0.0, 0.0)
    span = max(positions) - min(positions) + 1
    return Match(found / sum(weights), len(positions) / span)


def best_coverage(query: str, sources: Iterable[tuple[str, str]],
                  weights: Callable[[list[str]], Sequence[float]] | None = None) -> float:
    """Наибольшая доля основ вопроса (или их веса) в одном предложении-кандидате источников — так, как
    её меряет экстрактивный генератор: ``candidate_sentences`` каждого текста, ``match`` с его заголовком.

    ``sources`` — пары (заголовок, текст), например ``[(hit.title, hit.text) for hit in hits]``; ``weights``
    — веса основ (``TermWeights``). Это вторые ворота вопроса (``Retriever``): сколько слов вопроса нашлось
    в одном месте, а не насколько похож весь чанк.
    Пример: ``best_coverage("Сколько дней длится отпуск?", [("Отпуск", "Отпуск длится 28 дней.")])`` → ``1.0``.
    Глава 3. Top-k и порог.
    """
    terms = question_terms(query)
    shares = None if weights is None else [float(w) for w in weights(terms)]
    code = about_code(query)
    return max((match(terms, sentence, title, shares).coverage for title, text in sources
                for sentence in candidate_sentences(text.strip(), code=code)), default=0.0)

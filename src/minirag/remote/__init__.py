"""Настоящие модели по HTTP: эмбеддеры и чат Ollama и любого OpenAI-совместимого сервера.

Запросы идут через ``_http.post_json`` (тайм-аут, повторы при 429 и 5xx); здесь —
пачки текстов, нормализация векторов до длины 1 и настройки. ``fingerprint`` называет сервер и
модель, поэтому индекс, построенный одной моделью, откажется от запросов другой.
Все сбои — ``RemoteError`` с адресом и советом, что сделать. Адрес, модель и ключ —
из аргументов или из переменных окружения ``MINIRAG_BASE_URL``, ``MINIRAG_MODEL``
(для эмбеддеров сначала ``MINIRAG_EMBED_MODEL``), ``MINIRAG_API_KEY``; для Ollama
адрес — ``OLLAMA_HOST`` или ``http://localhost:11434``. Модуль не стримит ответы, не
считает токены и стоимость и ничего не скачивает: сервер с моделью поднимаешь ты сам.
"""

from __future__ import annotations

import os
import time
import urllib.parse
from collections.abc import Callable, Sequence

import numpy as np

from ..errors import MiniRagError, RemoteError
from ..validate import require_int, require_text
from ._http import post_json

DEFAULT_OLLAMA_URL = "http://localhost:11434"


def _setting(value: str | None, env: Sequence[str], what: str, hint: str) -> str:
    for name in env:
        value = value or os.environ.get(name) or None
    if not value:
        raise MiniRagError(f"Не задан параметр «{what}»: передай его аргументом или задай переменную "
                           f"{' или '.join(env)}, {hint}.")
    return value


def _base_url(value: str) -> str:
    url = value.strip().rstrip("/")
    if "://" not in url:
        url = f"http://{url}"
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise MiniRagError(f"Адрес сервера {value!r} не похож на http(s)-адрес: например, http://localhost:8000/v1.")
    return url


class _RemoteEmbedder:
    kind = ""

    def __init__(self, model, base_url, *, api_key=None, batch_size=64, timeout=30.0, retries=3, backoff=0.5,
                 sleep=time.sleep):
        self.model = model
        self.base_url = base_url
        self.batch_size = require_int(batch_size, "batch_size", 1)
        self.dim: int | None = None  # узнаём из первого ответа сервера
        self._http = {"api_key": api_key, "timeout": timeout, "retries": retries, "backoff": backoff, "sleep": sleep}
        self.fingerprint = f"{self.kind}:{base_url}:{model}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"

    def _vectors(self, texts: list[str]) -> tuple[str, list]:
        raise NotImplementedError

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Матрица n×dim: векторы сервера, каждая строка приведена к длине 1 (нулевая остаётся нулевой).

        Пример: ``OllamaEmbedder("nomic-embed-text").embed(["кошка"]).shape`` → ``(1, 768)``.
        Глава 11. Генератор и настоящие модели.
        """
        if isinstance(texts, str):
            raise MiniRagError("embed ждёт список текстов, а получена одна строка: оберни её в список, embed([text]).")
        texts = [require_text(text, f"текст №{i}") for i, text in enumerate(texts)]
        parts = []
        for start in range(0, len(texts), self.batch_size):
            batch = texts[start : start + self.batch_size]
            url, rows = self._vectors(batch)
            if len(rows) != len(batch):
                raise RemoteError(f"Сервер {url} вернул {len(rows)} векторов на {len(batch)} текстов. "
                                  f"Уменьши batch_size или проверь сервер.", url)
            try:
                matrix = np.asarray(rows, dtype=np.float64)
            except (TypeError, ValueError):
                matrix = None
            if matrix is None or matrix.ndim != 2 or not np.all(np.isfinite(matrix)):
                raise RemoteError(f"Сервер {url} вернул не векторы одной длины из чисел. "
                                  f"Проверь, что модель {self.model!r} — эмбеддинговая.", url)
            if self.dim is not None and matrix.shape[1] != self.dim:
                raise RemoteError(f"Сервер {url} вернул векторы длины {matrix.shape[1]}, а раньше — {self.dim}: "
                                  f"за тем же адресом сменилась модель. Перестрой индекс.", url)
            self.dim = matrix.shape[1]
            parts.append(matrix)
        if not parts:
            return np.zeros((0, self.dim or 0))
        matrix = np.concatenate(parts)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)


class OllamaEmbedder(_RemoteEmbedder):
    """Эмбеддер Ollama: ``POST /api/embed`` с ``{"model", "input": [...]}`` → ``{"embeddings"}``.

    Модель — аргумент, ``MINIRAG_EMBED_MODEL`` или ``MINIRAG_MODEL``; адрес — аргумент,
    ``OLLAMA_HOST`` или ``http://localhost:11434``. ``fingerprint``: ``ollama:адрес:модель``.
    Пример: ``Index.build(docs, OllamaEmbedder("nomic-embed-text"))``. Глава 11. Генератор и настоящие модели.
    """

    kind = "ollama"

    def __init__(self, model: str | None = None, base_url: str | None = None, *, batch_size: int = 64,
                 timeout: float = 30.0, retries: int = 3, backoff: float = 0.5,
                 sleep: Callable[[float], None] = time.sleep):
        model = _setting(model, ("MINIRAG_EMBED_MODEL", "MINIRAG_MODEL"), "эмбеддинговая модель Ollama",
                         "например nomic-embed-text")
        base_url = _base_url(base_url or os.environ.get("OLLAMA_HOST") or DEFAULT_OLLAMA_URL)
        super().__init__(model, base_url, batch_size=batch_size, timeout=timeout, retries=retries,
                         backoff=backoff, sleep=sleep)

    def _vectors(self, texts: list[str]) -> tuple[str, list]:
        url = f"{self.base_url}/api/embed"
        data = post_json(url, {"model": self.model, "input": texts}, **self._http)
        rows = data.get("embeddings") if isinstance(data, dict) else None
        if not isinstance(rows, list):
            raise RemoteError(f"В ответе {url} нет списка embeddings. Это точно Ollama (версии ≥ 0.3)?", url)
        return url, rows


class OpenAIEmbedder(_RemoteEmbedder):
    """Эмбеддер OpenAI-совместимого сервера: ``POST /embeddings`` → ``{"data": [{"index", "embedding"}]}``.

    Подходит для vLLM, llama.cpp server, LM Studio, text-embeddings-inference и самого OpenAI.
    Адрес (до ``/v1`` включительно) — аргумент или ``MINIRAG_BASE_URL``, модель —
    ``MINIRAG_EMBED_MODEL`` или ``MINIRAG_MODEL``, ключ — ``MINIRAG_API_KEY`` (если нужен).
    Пример: ``OpenAIEmbedder("bge-m3", "http://localhost:8000/v1")``. Глава 11. Генератор и настоящие модели.
    """

    kind = "openai"

    def __init__(self, model: str | None = None, base_url: str | None = None, *, api_key: str | None = None,
                 batch_size: int = 64, timeout: float = 30.0, retries: int = 3, backoff: float = 0.5,
                 sleep: Callable[[float], None] = time.sleep):
        model = _setting(model, ("MINIRAG_EMBED_MODEL", "MINIRAG_MODEL"), "эмбеддинговая модель", "например bge-m3")
        base_url = _base_url(_setting(base_url, ("MINIRAG_BASE_URL",), "адрес сервера",
                                      "например http://localhost:8000/v1"))
        super().__init__(model, base_url, api_key=api_key or os.environ.get("MINIRAG_API_KEY"),
                         batch_size=batch_size, timeout=timeout, retries=retries, backoff=backoff, sleep=sleep)

    def _vectors(self, texts: list[str]) -> tuple[str, list]:
        url = f"{self.base_url}/embeddings"
        data = post_json(url, {"model": self.model, "input": texts}, **self._http)
        items = data.get("data") if isinstance(data, dict) else None
        try:
            by_index = {item["index"]: item["embedding"] for item in items}
        except (TypeError, KeyError):
            raise RemoteError(f"В ответе {url} нет списка data с полями index и embedding. "
                              f"Это точно OpenAI-совместимый сервер?", url) from None
        if len(items) != len(texts) or set(by_index) != set(range(len(texts))):
            raise RemoteError(f"Сервер {url} вернул {len(items)} векторов с номерами {list(by_index)[:10]}, "
                              f"а ждали {len(texts)} с номерами 0…{len(texts) - 1}. Проверь сервер.", url)
        return url, [by_index[i] for i in range(len(texts))]


class _RemoteChat:
    def __init__(self, model, base_url, api_key, temperature, timeout, retries, backoff, sleep):
        self.model = model
        self.base_url = base_url
        self.temperature = temperature
        self._http = {"api_key": api_key, "timeout": timeout, "retries": retries, "backoff": backoff, "sleep": sleep}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model={self.model!r}, base_url={self.base_url!r})"


class OpenAIChat(_RemoteChat):
    """Генератор на OpenAI-совместимом сервере: ``POST /chat/completions``, ответ ``choices[0].message.content``.

    Адрес, модель и ключ — аргументы или ``MINIRAG_BASE_URL``, ``MINIRAG_MODEL``, ``MINIRAG_API_KEY``.
    ``temperature=0`` — чтобы один промпт давал по возможности один ответ.
    Пример: ``answer(index, query, OpenAIChat("qwen2.5:7b", "http://localhost:11434/v1"))``.
    Глава 11. Генератор и настоящие модели.
    """

    def __init__(self, model: str | None = None, base_url: str | None = None, *, api_key: str | None = None,
                 temperature: float = 0.0, timeout: float = 120.0, retries: int = 3, backoff: float = 0.5,
                 sleep: Callable[[float], None] = time.sleep):
        model = _setting(model, ("MINIRAG_MODEL",), "модель", "например qwen2.5:7b")
        base_url = _base_url(_setting(base_url, ("MINIRAG_BASE_URL",), "адрес сервера",
                                      "например http://localhost:8000/v1"))
        super().__init__(model, base_url, api_key or os.environ.get("MINIRAG_API_KEY"), temperature, timeout,
                         retries, backoff, sleep)

    def generate(self, prompt: str) -> str:
        """Ответ модели на промпт (одно сообщение пользователя, без потока).

        Пример: ``OpenAIChat().generate(build_prompt(query, hits))``. Глава 11. Генератор и настоящие модели.
        """
        url = f"{self.base_url}/chat/completions"
        payload = {"model": self.model, "temperature": self.temperature,
                   "messages": [{"role": "user", "content": require_text(prompt, "Промпт")}]}
        data = post_json(url, payload, **self._http)
        try:
            content = data["choices"][0]["message"]["content"]
        except (TypeError, KeyError, IndexError):
            content = None
        if not isinstance(content, str):
            raise RemoteError(f"В ответе {url} нет текста choices[0].message.content. "
                              f"Это точно чат-модель на OpenAI-совместимом сервере?", url)
        return content


class OllamaChat(_RemoteChat):
    """Генератор Ollama: ``POST /api/chat`` без потока (``"stream": false``), ответ ``message.content``.

    Модель — аргумент или ``MINIRAG_MODEL``; адрес — аргумент, ``OLLAMA_HOST`` или ``http://localhost:11434``.
    Пример: ``answer(index, query, OllamaChat("qwen2.5:7b"))``. Глава 11. Генератор и настоящие модели.
    """

    def __init__(self, model: str | None = None, base_url: str | None = None, *, temperature: float = 0.0,
                 timeout: float = 120.0, retries: int = 3, backoff: float = 0.5,
                 sleep: Callable[[float], None] = time.sleep):
        model = _setting(model, ("MINIRAG_MODEL",), "модель Ollama", "например qwen2.5:7b")
        base_url = _base_url(base_url or os.environ.get("OLLAMA_HOST") or DEFAULT_OLLAMA_URL)
        super().__init__(model, base_url, None, temperature, timeout, retries, backoff, sleep)

    def generate(self, prompt: str) -> str:
        """Ответ модели Ollama на промпт. Пример: ``OllamaChat("qwen2.5:7b").generate("Привет")``.

        Глава 11. Генератор и настоящие модели.
        """
        url = f"{self.base_url}/api/chat"
        payload = {"model": self.model, "stream": False, "options": {"temperature": self.temperature},
                   "messages": [{"role": "user", "content": require_text(prompt, "Промпт")}]}
        data = post_json(url, payload, **self._http)
        message = data.get("message") if isinstance(data, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            raise RemoteError(f"В ответе {url} нет текста message.content. Это точно Ollama?", url)
        return content

"""Внутренняя часть ``remote``: POST с JSON по HTTP — тайм-аут, повторы с растущей паузой и понятные ошибки.

Только стандартная библиотека (``urllib``). Повторяются лишь ответы 429 и 5xx: пауза — из
заголовка ``Retry-After``, если сервер его прислал, иначе растёт вдвое; отказ соединения,
тайм-аут и 4xx не повторяются. Каждый сбой — ``RemoteError`` с адресом и советом, что сделать.
Модуль не знает про эмбеддинги и чат (это ``remote``) и не хранит настроек; снаружи ``remote``
его не импортируют.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import datetime, timezone

from ..errors import MiniRagError, RemoteError
from ..validate import require_int, require_number

_MAX_WAIT = 60.0  # дольше минуты между попытками не ждём, даже если сервер просит


def _retry_after(value: str | None) -> float | None:
    """Секунды из заголовка Retry-After: число секунд или HTTP-дата; непонятное — None."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def _server_detail(body: bytes) -> str:
    """Текст ошибки сервера: поле error (Ollama) или error.message (OpenAI), иначе начало тела."""
    text = body.decode("utf-8", "replace").strip()
    try:
        error = json.loads(text).get("error")
        text = error.get("message", text) if isinstance(error, dict) else (error or text)
    except (ValueError, AttributeError):
        pass
    return str(text)[:200]


def post_json(url: str, payload: dict, *, api_key: str | None = None, timeout: float = 30.0, retries: int = 3,
              backoff: float = 0.5, sleep: Callable[[float], None] = time.sleep):
    """POST с JSON и разбор JSON-ответа; при 429 и 5xx — до ``retries`` повторов с паузой.

    Пауза — ``Retry-After`` сервера, иначе ``backoff·2^попытка`` (0.5, 1, 2 с), не больше
    минуты; ``sleep`` можно подменить в тестах. Отказ соединения, тайм-аут и 4xx не
    повторяются: повтор их не лечит, а тайм-аут, повторённый трижды, — это долгое зависание.
    Пример: ``post_json("http://localhost:11434/api/embed", {"model": m, "input": ["привет"]})``.
    """
    require_int(retries, "retries", 0)
    require_number(timeout, "timeout", 0.001, hint="Это секунды ожидания ответа, например 30.")
    data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    if api_key:
        if not api_key.strip().isascii():
            raise MiniRagError("В ключе API есть не латинские символы: скопируй ключ заново, целиком и без кавычек.")
        headers["Authorization"] = f"Bearer {api_key.strip()}"
    for attempt in range(retries + 1):
        request = urllib.request.Request(url, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                body = response.read()
        except urllib.error.HTTPError as exc:
            try:
                detail = _server_detail(exc.read())
            except (OSError, http.client.HTTPException, AttributeError):
                detail = exc.reason
            finally:
                exc.close()
            status = exc.code
            if (status == 429 or status >= 500) and attempt < retries:
                wait = _retry_after(exc.headers.get("Retry-After"))
                sleep(min(wait if wait is not None else backoff * 2**attempt, _MAX_WAIT))
                continue
            if status == 429 or status >= 500:
                what = "перегружен (HTTP 429)" if status == 429 else f"ответил ошибкой HTTP {status}"
                raise RemoteError(f"Сервер {url} {what} и после {retries + 1} попыток: {detail}. "
                                  f"Подожди и повтори или посмотри журнал сервера.", url, status) from None
            if status in (401, 403):
                advice = "проверь ключ: аргумент api_key или переменная MINIRAG_API_KEY"
            elif status == 404:
                advice = "проверь адрес (у OpenAI-совместимых серверов он обычно кончается на /v1) и имя модели"
            else:
                advice = "проверь имя модели и параметры запроса"
            raise RemoteError(f"Сервер {url} отклонил запрос (HTTP {status}: {detail}): {advice}.",
                              url, status) from None
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise RemoteError(f"Сервер {url} не ответил за {timeout} с. Проверь, что он запущен, "
                                  f"или увеличь timeout.", url) from None
            raise RemoteError(f"Не удалось подключиться к {url} ({exc.reason}). Запусти сервер модели "
                              f"(например, ollama serve) или проверь адрес и порт.", url) from None
        except TimeoutError:
            raise RemoteError(f"Сервер {url} не ответил за {timeout} с. Модель может быть занята или большой: "
                              f"увеличь timeout или возьми модель поменьше.", url) from None
        except (OSError, http.client.HTTPException) as exc:
            raise RemoteError(f"Соединение с {url} оборвалось ({type(exc).__name__}: {exc}). "
                              f"Проверь, что сервер жив, и повтори.", url) from None
        try:
            return json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise RemoteError(f"Сервер {url} ответил не JSON: {body[:80]!r}. Проверь, что по этому адресу "
                              f"API модели, а не веб-страница или прокси.", url) from None

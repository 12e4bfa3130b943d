"""HTTP-клиенты Ollama и OpenAI-совместимых серверов против настоящего HTTP-сервера на 127.0.0.1.

Сервер поднимается в потоке теста и говорит теми же форматами запросов и ответов, что Ollama
(/api/embed, /api/chat) и OpenAI (/v1/embeddings, /v1/chat/completions); тест может
запланировать ему ошибки: 4xx, 429 с Retry-After, 5xx, задержку дольше тайм-аута, не-JSON.
Паузы между повторами не ждутся: клиенты получают sleep, который только записывает паузу.
"""

from __future__ import annotations

import time

import numpy as np
import pytest
from fakes import ENV, FakeServer, dead_url, vector

from minirag import EmbedderMismatchError, Index, MiniRagError
from minirag.data import DEMO_DOCS
from minirag.remote import OllamaChat, OllamaEmbedder, OpenAIChat, OpenAIEmbedder, RemoteError


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server():
    with FakeServer() as fake:
        yield fake


@pytest.fixture
def sleeps():
    """Подменный sleep: записывает паузы вместо того, чтобы ждать."""
    return []


def clients(server, sleeps):
    common = {"retries": 2, "backoff": 0.5, "sleep": sleeps.append, "timeout": 2.0}
    return {
        "ollama": OllamaEmbedder("nomic-embed-text", server.url, batch_size=2, **common),
        "openai": OpenAIEmbedder("bge-m3", server.url + "/v1/", batch_size=2, **common),
    }


@pytest.mark.parametrize("kind, path", [("ollama", "/api/embed"), ("openai", "/v1/embeddings")])
def test_embedders_speak_the_server_format_batch_and_normalise(server, sleeps, kind, path):
    embedder = clients(server, sleeps)[kind]
    texts = ["а", "бб", "ввв", "гггг", "ддддд"]
    matrix = embedder.embed(texts)
    raw = np.array([vector(t) for t in texts])
    np.testing.assert_allclose(matrix, raw / np.linalg.norm(raw, axis=1, keepdims=True))
    assert matrix.shape == (5, 3) and embedder.dim == 3
    sent = [payload for p, _, payload in server.requests]
    assert [p for p, _, _ in server.requests] == [path] * 3  # 5 текстов пачками по 2
    assert [payload["input"] for payload in sent] == [["а", "бб"], ["ввв", "гггг"], ["ддддд"]]
    assert {payload["model"] for payload in sent} == {embedder.model}


def test_fingerprints_name_the_server_and_the_model(server, sleeps):
    embedders = clients(server, sleeps)
    assert embedders["ollama"].fingerprint == f"ollama:{server.url}:nomic-embed-text"
    assert embedders["openai"].fingerprint == f"openai:{server.url}/v1:bge-m3"


def test_settings_come_from_the_environment(server, monkeypatch):
    monkeypatch.setenv("MINIRAG_BASE_URL", server.url + "/v1")
    monkeypatch.setenv("MINIRAG_MODEL", "qwen2.5:7b")
    monkeypatch.setenv("MINIRAG_EMBED_MODEL", "bge-m3")
    monkeypatch.setenv("MINIRAG_API_KEY", "sk-test-123")
    monkeypatch.setenv("OLLAMA_HOST", server.url.removeprefix("http://"))
    assert OpenAIChat().generate("Привет") == "Ответ qwen2.5:7b [1]."
    assert OpenAIEmbedder().fingerprint == f"openai:{server.url}/v1:bge-m3"
    assert OllamaChat().generate("Привет") == "Ответ Ollama [1]."
    path, headers, payload = server.requests[0]
    assert path == "/v1/chat/completions" and headers["Authorization"] == "Bearer sk-test-123"
    assert payload["messages"] == [{"role": "user", "content": "Привет"}] and payload["temperature"] == 0.0
    path, headers, payload = server.requests[1]
    assert path == "/api/chat" and payload["stream"] is False and payload["model"] == "qwen2.5:7b"
    assert "Authorization" not in headers


def test_missing_settings_say_which_variable_to_set():
    with pytest.raises(MiniRagError, match="MINIRAG_BASE_URL"):
        OpenAIChat("qwen2.5:7b")
    with pytest.raises(MiniRagError, match="MINIRAG_MODEL"):
        OllamaChat()
    with pytest.raises(MiniRagError, match="MINIRAG_EMBED_MODEL"):
        OllamaEmbedder()


def test_429_waits_as_long_as_retry_after_says(server, sleeps):
    server.plan("/api/embed", {"status": 429, "headers": {"Retry-After": "2"}, "body": {"error": "busy"}},
                {"status": 429, "headers": {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, "body": {}})
    vectors = clients(server, sleeps)["ollama"].embed(["а"])
    assert vectors.shape == (1, 3)
    assert sleeps == [2.0, 0.0]  # секунды из заголовка; дата в прошлом — без паузы
    assert len(server.requests) == 3


def test_5xx_retries_with_exponential_backoff_then_gives_up(server, sleeps):
    server.plan("/v1/chat/completions", *[{"status": 503, "body": {"error": {"message": "overloaded"}}}] * 4)
    chat = OpenAIChat("m", server.url + "/v1", retries=3, backoff=0.5, sleep=sleeps.append)
    with pytest.raises(RemoteError, match="после 4 попыток") as info:
        chat.generate("Привет")
    assert sleeps == [0.5, 1.0, 2.0] and len(server.requests) == 4
    assert info.value.status == 503 and server.url in str(info.value) and "overloaded" in str(info.value)


def test_4xx_is_not_retried_and_the_message_says_what_to_fix(server, sleeps):
    server.plan("/api/embed", {"status": 404, "body": {"error": 'model "nomic-embed-text" not found, try pulling it'}})
    with pytest.raises(RemoteError, match="HTTP 404") as info:
        clients(server, sleeps)["ollama"].embed(["а"])
    assert "not found" in str(info.value) and f"{server.url}/api/embed" in str(info.value)
    assert sleeps == [] and len(server.requests) == 1

    server.plan("/v1/chat/completions", {"status": 401, "body": {"error": {"message": "bad key"}}})
    with pytest.raises(RemoteError, match="MINIRAG_API_KEY") as info:
        OpenAIChat("m", server.url + "/v1", api_key="sk-test-123").generate("Привет")
    assert "sk-test-123" not in str(info.value)  # ключ не утекает в сообщения
    with pytest.raises(MiniRagError, match="ключе API"):  # ключ, скопированный с кириллицей
        OpenAIChat("m", server.url + "/v1", api_key="sk-тест").generate("Привет")


def test_connection_refused_names_the_url(sleeps):
    url = dead_url()
    with pytest.raises(RemoteError, match="Не удалось подключиться") as info:
        OllamaEmbedder("m", url, sleep=sleeps.append).embed(["а"])
    assert url in str(info.value) and info.value.status is None and sleeps == []


def test_a_slow_server_times_out_without_retries(server, sleeps):
    server.plan("/api/chat", {"delay": 1.0, "body": {"message": {"content": "поздно"}}})
    started = time.monotonic()
    with pytest.raises(RemoteError, match="не ответил за 0.2 с"):
        OllamaChat("m", server.url, timeout=0.2, sleep=sleeps.append).generate("Привет")
    assert time.monotonic() - started < 0.9 and sleeps == [] and len(server.requests) == 1


@pytest.mark.parametrize("body, message", [
    (b"<html>502 Bad Gateway</html>", "не JSON"),
    ({"embeddings": [[1.0, 0.0]]}, "1 векторов на 2 текстов"),
    ({"embeddings": [[1.0, 0.0], [1.0]]}, "не векторы одной длины"),
    ({"embeddings": [[1.0, "x"], [1.0, 2.0]]}, "не векторы одной длины"),
    ({"vectors": []}, "нет списка embeddings"),
])
def test_malformed_embedding_responses_are_errors(server, sleeps, body, message):
    server.plan("/api/embed", {"body": body})
    with pytest.raises(RemoteError, match=message):
        clients(server, sleeps)["ollama"].embed(["а", "б"])


def test_openai_vectors_with_wrong_indices_and_chat_without_content_are_errors(server, sleeps):
    twice_zero = [{"index": 0, "embedding": [1.0]}, {"index": 0, "embedding": [2.0]}]
    server.plan("/v1/embeddings", {"body": {"data": twice_zero}})
    with pytest.raises(RemoteError, match="номерами"):
        clients(server, sleeps)["openai"].embed(["а", "б"])
    server.plan("/v1/chat/completions", {"body": {"choices": []}})
    with pytest.raises(RemoteError, match="choices"):
        OpenAIChat("m", server.url + "/v1").generate("Привет")


def test_a_changed_dimension_behind_the_same_url_is_an_error(server, sleeps):
    embedder = clients(server, sleeps)["ollama"]
    embedder.embed(["а"])
    server.plan("/api/embed", {"body": {"embeddings": [[1.0, 2.0, 3.0, 4.0]]}})
    with pytest.raises(RemoteError, match="длины 4, а раньше — 3"):
        embedder.embed(["б"])


def test_an_index_built_with_one_model_refuses_another(server, sleeps, tmp_path):
    docs = DEMO_DOCS[:3]
    index = Index.build(docs, OllamaEmbedder("model-a", server.url, sleep=sleeps.append))
    assert index.fingerprint == f"ollama:{server.url}:model-a"
    assert len(index.search("отпуск", k=2)) == 2
    path = index.save(tmp_path / "remote.minirag")
    assert Index.load(path, OllamaEmbedder("model-a", server.url)).fingerprint == index.fingerprint
    with pytest.raises(EmbedderMismatchError, match="model-b"):
        Index.load(path, OllamaEmbedder("model-b", server.url))
    index.embedder = OllamaEmbedder("model-b", server.url)
    with pytest.raises(EmbedderMismatchError):
        index.search("отпуск")

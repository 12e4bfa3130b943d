"""Подделки для тестов: HTTP-сервер с форматами Ollama и OpenAI и генератор с заготовленными репликами."""

from __future__ import annotations

import json
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ENV = ("MINIRAG_BASE_URL", "MINIRAG_MODEL", "MINIRAG_EMBED_MODEL", "MINIRAG_API_KEY", "OLLAMA_HOST",
       "http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


def vector(text: str, model: str = "") -> list[float]:
    """Ненормированный вектор, который сервер отдаёт за текст: длина текста, 1, 2."""
    return [float(len(text)), 1.0, 2.0]


class FakeServer:
    """HTTP-сервер на 127.0.0.1 с форматами Ollama и OpenAI; ``plan`` задаёт ответы по очереди."""

    def __init__(self):
        self.requests: list[tuple[str, dict, object]] = []
        self.planned: dict[str, list[dict]] = {}
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                payload = json.loads(raw)
                server.requests.append((self.path, dict(self.headers), payload))
                queue = server.planned.get(self.path)
                spec = queue.pop(0) if queue else server.default(self.path, payload)
                time.sleep(spec.get("delay", 0))
                body = spec.get("body", b"")
                body = body if isinstance(body, bytes) else json.dumps(body, ensure_ascii=False).encode()
                try:
                    self.send_response(spec.get("status", 200))
                    for name, value in {"Content-Type": "application/json", **spec.get("headers", {})}.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:  # клиент уже ушёл по тайм-ауту
                    pass

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.01,), daemon=True)

    def default(self, path: str, payload: dict) -> dict:
        model = payload.get("model", "")
        if path == "/api/embed":
            return {"body": {"model": model, "embeddings": [vector(t, model) for t in payload["input"]]}}
        if path == "/v1/embeddings":  # нарочно в обратном порядке: клиент должен сортировать по index
            data = [{"object": "embedding", "index": i, "embedding": vector(t, model)}
                    for i, t in reversed(list(enumerate(payload["input"])))]
            return {"body": {"object": "list", "model": model, "data": data}}
        if path == "/v1/chat/completions":
            message = {"role": "assistant", "content": f"Ответ {model} [1]."}
            return {"body": {"object": "chat.completion", "choices": [{"index": 0, "message": message,
                                                                       "finish_reason": "stop"}]}}
        if path == "/api/chat":
            return {"body": {"model": model, "message": {"role": "assistant", "content": "Ответ Ollama [1]."},
                             "done": True}}
        return {"status": 404, "body": {"error": f"unknown path {path}"}}

    def plan(self, path: str, *responses: dict) -> None:
        self.planned.setdefault(path, []).extend(responses)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def dead_url() -> str:
    """Адрес на 127.0.0.1, где никто не слушает: порт занят и сразу освобождён."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"



class Scripted:
    """Генератор-заглушка: отвечает заготовленными репликами по очереди (исключение — бросает) и пишет промпты."""

    def __init__(self, *replies):
        self.replies, self.prompts = list(replies), []

    def generate(self, prompt):
        self.prompts.append(prompt)
        reply = self.replies.pop(0)
        if isinstance(reply, Exception):
            raise reply
        return reply

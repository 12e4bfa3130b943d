"""Командная строка: демо, ``index`` своей папки и ``ask`` — настоящими процессами ``python -m minirag``."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from fakes import ENV, FakeServer, dead_url

from minirag.__main__ import main


def run(*args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {name: value for name, value in os.environ.items() if name not in ENV}
    return subprocess.run([sys.executable, "-m", "minirag", *args], capture_output=True, text=True, timeout=60,
                          env={**clean, "PYTHONUTF8": "1", **env})


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Папка со своими файлами (и одним битым) и индекс, построенный командой index."""
    root = tmp_path_factory.mktemp("cli")
    folder = root / "документы"
    (folder / "hr").mkdir(parents=True)
    (folder / "hr" / "отпуск.md").write_text(
        "# Отпуск\n\nЕжегодный отпуск длится 28 календарных дней. Заявление подают за две недели.", encoding="utf-8")
    (folder / "vpn.txt").write_text("Для работы из дома подключитесь к VPN через клиент «Фарватер».", encoding="utf-8")
    (folder / "faq.csv").write_text("вопрос,ответ\nГде выдают пропуск?,В кабинете 318.\n", encoding="utf-8")
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4 broken")
    index = root / "docs.minirag"
    result = run("index", str(folder), "--out", str(index))
    return folder, index, result


def test_without_arguments_the_demo_is_printed():
    result = run()
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.startswith("Индекс: ") and "Вопрос: Сколько дней длится ежегодный отпуск?" in result.stdout
    assert "Промпт для первого вопроса:" in result.stdout and "Ответ:" in result.stdout
    assert result.stdout.count("  1. ") == 3  # три вопроса, у каждого top-3


def test_index_reads_the_folder_reports_what_it_skipped_and_saves(built):
    folder, index, result = built
    assert result.returncode == 0, result.stderr
    assert "Прочитано документов: 3, пропущено файлов: 1." in result.stdout
    assert "пропущен broken.pdf: PDF не читается" in result.stdout
    assert index.is_file() and f"Индекс сохранён в {index}: документов 3, чанков 3" in result.stdout


def test_ask_answers_from_the_saved_index_with_sources_and_checked_citations(built):
    _, index, _ = built
    result = run("ask", "Сколько календарных дней длится отпуск?", "--index", str(index), "--k", "2")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    out = result.stdout
    assert "Найдено (cosine, k=2, порог нет):" in out and "  [1] " in out and "  [3] " not in out
    assert "hr/отпуск.md, чанк 1 — Отпуск" in out  # источник — путь к файлу
    assert "Ежегодный отпуск длится 28 календарных дней [1]." in out
    assert "Проверка цитат: Цитаты в порядке" in out


@pytest.mark.parametrize("method", ["bm25", "hybrid"])
def test_ask_with_other_retrieval_methods(built, method):
    _, index, _ = built
    result = run("ask", "VPN из дома", "--index", str(index), "--method", method, "--k", "1")
    assert result.returncode == 0, result.stderr
    assert f"Найдено ({method}, k=1" in result.stdout and "vpn.txt, чанк 1" in result.stdout


def test_ask_on_the_demo_corpus_by_default_and_threshold_refusal():
    result = run("ask", "Сколько дней длится ежегодный отпуск?", "--threshold", "0.99")
    assert result.returncode == 0 and "Индекс: демо-корпус" in result.stdout
    assert "Не найдено" in result.stdout and "В контексте ответа нет." in result.stdout


def test_ask_with_a_model_server_and_the_fallback_when_it_is_down():
    with FakeServer() as server:
        result = run("ask", "Сколько дней отпуска?", "--generator", "openai",
                     MINIRAG_BASE_URL=server.url + "/v1", MINIRAG_MODEL="qwen")
    assert result.returncode == 0, result.stderr
    assert "Ответ (openai):\n  Ответ qwen [1]." in result.stdout and "Цитаты в порядке" in result.stdout
    url = dead_url()
    result = run("ask", "Сколько дней отпуска?", "--generator", "ollama", OLLAMA_HOST=url, MINIRAG_MODEL="qwen")
    assert result.returncode == 0 and "Ответ (запасной, экстрактивный" in result.stdout
    assert f"Причина: OllamaChat: Не удалось подключиться к {url}/api/chat" in result.stdout


def test_user_errors_are_one_russian_line_with_exit_code_2(tmp_path):
    for args in (["ask"], ["ask", "x", "--k", "0"], ["ask", "x", "--index", str(tmp_path / "нет.minirag")],
                 ["index", str(tmp_path / "нет"), "--out", str(tmp_path / "x.minirag")], ["прыгай"]):
        result = run(*args)
        assert result.returncode == 2 and result.stdout == "", (args, result.stdout)
        assert result.stderr.startswith("Ошибка: ") and result.stderr.count("\n") == 1, (args, result.stderr)
        assert "Traceback" not in result.stderr


@pytest.mark.parametrize("args, message", [
    (["ask", "x", "--method", "bm25", "--threshold", "0.2"], "только с --method cosine"),
    (["ask", "x", "--threshold", "2"], "от -1 до 1"),
    (["ask", "x", "--method", "faiss"], "недопустимое значение 'faiss'"),
    (["ask", "x", "--generator", "openai"], "MINIRAG_MODEL"),
    (["ask", "x", "--embedder", "ollama"], "MINIRAG_EMBED_MODEL"),
    (["index", "папка"], "не хватает аргументов: --out"),
    (["ask", "x", "--bogus"], "лишние аргументы: --bogus"),
])
def test_user_error_messages_say_what_to_fix(args, message, capsys, monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert message in err and err.startswith("Ошибка: ") and err.count("\n") == 1


def test_an_index_of_a_folder_without_readable_files_is_refused(tmp_path, capsys):
    (tmp_path / "bad.txt").write_bytes(b"\xff\xfe\x00")
    assert main(["index", str(tmp_path), "--out", str(tmp_path / "x.minirag")]) == 2
    captured = capsys.readouterr()
    assert "пропущен bad.txt" in captured.out and "нет ни одного читаемого документа" in captured.err
    assert not (tmp_path / "x.minirag").exists()


def test_an_index_asked_with_another_embedder_is_refused(built, capsys, monkeypatch):
    _, index, _ = built
    monkeypatch.setenv("MINIRAG_EMBED_MODEL", "nomic-embed-text")
    assert main(["ask", "x", "--index", str(index), "--embedder", "ollama"]) == 2
    assert "построен эмбеддером «HashEmbedder" in capsys.readouterr().err

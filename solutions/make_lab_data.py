"""Данные лабораторной 5 из эталонной библиотеки: `python solutions/make_lab_data.py`.

В лабораторной 5 BM25 и RRF пишут руками, и при проверке `minirag` в ядре слушателя недоступен
(`c.Grading.no_reference_labs`). Всё, что ей нужно от курса, лежит простыми данными в
``solutions/lab05_bm25_hybrid/lab05_data.json`` (выдача кладёт файл рядом с ноутбуком): чанки
демо-корпуса, размеченные запросы с ответом и по 20 лучших чанков каждого запроса по косинусу
(`Index.build(DEMO_DOCS, HashEmbedder(dim=96))`). Файл не правят руками: тест
``tests/test_labs_release.py`` сверяет его с тем, что возвращает ``lab05_data()``, и при расхождении
просит запустить этот скрипт.
"""

from __future__ import annotations

import json
from pathlib import Path

LAB05_DATA = Path(__file__).resolve().parent / "lab05_bm25_hybrid" / "lab05_data.json"
CANDIDATES = 20  # столько лучших по косинусу нужно гибриду лабораторной (как candidates в hybrid_search)


def lab05_data() -> dict:
    """Чанки, запросы с ответом и top-20 по косинусу — простыми данными JSON."""
    from minirag import CATEGORIES, DEMO_DOCS, DEMO_QUERIES, HashEmbedder, Index

    index = Index.build(DEMO_DOCS, HashEmbedder(dim=96))
    queries = [q for q in DEMO_QUERIES if q.relevant]  # hit@k определён только для запросов с ответом
    used = {q.category for q in queries}
    return {
        "about": "Демо-корпус курса «Мини-RAG руками» для лабораторной 5: чанки Index.build(DEMO_DOCS, "
                 "HashEmbedder(dim=96)), размеченные запросы с ответом и 20 лучших чанков каждого запроса по "
                 "косинусу (ключ чанка — doc_id и chunk_id, оценка округлена до 6 знаков). Сгенерировано "
                 "solutions/make_lab_data.py; не правь руками.",
        "categories": {key: name for key, name in CATEGORIES.items() if key in used},
        "chunks": [{"doc_id": c.doc_id, "chunk_id": c.chunk_id, "title": c.title, "text": c.text}
                   for c in index.chunks],
        "queries": [{"text": q.text, "relevant": list(q.relevant), "category": q.category} for q in queries],
        "cosine_top": {q.text: [[h.doc_id, h.chunk_id, round(h.score, 6)] for h in index.search(q.text, k=CANDIDATES)]
                       for q in queries},
    }


def dumps(data: dict) -> str:
    """JSON, где каждый чанк, запрос и список top-20 — одна строка: файл читается глазами и в diff."""
    def one(value) -> str:
        return json.dumps(value, ensure_ascii=False)

    parts = []
    for key, value in data.items():
        if isinstance(value, list):
            body = ",\n".join(f"  {one(item)}" for item in value)
            parts.append(f" {one(key)}: [\n{body}\n ]")
        elif isinstance(value, dict):
            body = ",\n".join(f"  {one(k)}: {one(v)}" for k, v in value.items())
            parts.append(f" {one(key)}: {{\n{body}\n }}")
        else:
            parts.append(f" {one(key)}: {one(value)}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


if __name__ == "__main__":
    LAB05_DATA.parent.mkdir(parents=True, exist_ok=True)
    LAB05_DATA.write_text(dumps(lab05_data()), encoding="utf-8")
    print(f"записано: {LAB05_DATA}")

"""Загрузчики своих файлов: что читается, как называется и что пропускается — всегда с причиной."""

from __future__ import annotations

import sys

import docx
import pytest

from minirag import Index, LoadReport, MiniRagError, build_prompt, load_file, load_folder, loaders
from minirag.sentences import candidate_sentences


def make_pdf(text: str, title: str = "") -> bytes:
    """Одностраничный PDF со строкой латиницы шрифтом Helvetica, смещения xref посчитаны честно."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> "
        b"/Contents 4 0 R >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Title (" + title.encode("latin-1") + b") >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info 6 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


@pytest.fixture
def folder(tmp_path):
    root = tmp_path / "мои_документы"
    (root / "sub").mkdir(parents=True)
    (root / "notes.txt").write_text("Отпуск длится 28 календарных дней.\nЕго можно делить на части.", encoding="utf-8")
    (root / "sub" / "guide.md").write_text("Вступление.\n\n# Руководство по VPN\n\nКлиент «Фарватер» ставит ИТ.",
                                           encoding="utf-8")
    (root / "faq.csv").write_text("вопрос;ответ\nСколько суточных?;700 рублей в день\n\n;Без вопроса\n",
                                  encoding="utf-8")
    (root / "page.html").write_text(
        "<html><head><title>Правила &laquo;Ладьи&raquo;</title><style>p{color:red}</style></head><body>"
        "<script>var secret = 1;</script><h1>Пропуска</h1><p>Пропуск   выдают в&nbsp;кабинете 318.</p>"
        "<p>Потерю оплачивают.</p></body></html>", encoding="utf-8")
    (root / "policy.pdf").write_bytes(make_pdf("Business trips pay 700 roubles a day.", title="Travel policy"))
    word = docx.Document()
    word.add_paragraph("Черновик")
    word.add_heading("Командировки", level=1)
    word.add_paragraph("Суточные — 700 рублей.")
    word.add_table(rows=1, cols=2).rows[0].cells[0].text = "Гостиница до 5000 рублей"
    word.save(root / "trips.docx")
    # то, что прочитать нельзя: каждый файл должен попасть в skipped по имени
    (root / "broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog /Pages 9 0 R\nnot a PDF at all")
    (root / "broken.docx").write_bytes(b"PK\x03\x04 not really a zip")
    (root / "cp1251.txt").write_bytes("Отпуск".encode("cp1251"))
    (root / "picture.png").write_bytes(b"\x89PNG\r\n")
    (root / "empty.md").write_text("  \n\n ", encoding="utf-8")
    (root / "header_only.csv").write_text("вопрос,ответ\n", encoding="utf-8")
    (root / "gone.txt").symlink_to(root / "nowhere.txt")
    (root / "linked").symlink_to(root / "sub", target_is_directory=True)
    (root / "folder.txt").mkdir()  # папка с именем файла — это папка: её файлы читаются
    (root / "folder.txt" / "inner.txt").write_text("Вложенный текст.", encoding="utf-8")
    (root / ".hidden.txt").write_text("Скрытый текст.", encoding="utf-8")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("[core]", encoding="utf-8")
    return root


def test_every_supported_format_becomes_documents_with_the_path_as_id(folder):
    report = load_folder(folder)
    docs = {doc.id: doc for doc in report.docs}
    assert list(docs) == ["faq.csv:2", "faq.csv:4", "folder.txt/inner.txt", "notes.txt", "page.html",
                          "policy.pdf", "sub/guide.md", "trips.docx"]
    assert docs["notes.txt"].title == "Отпуск длится 28 календарных дней."  # первая строка текстового файла
    assert docs["notes.txt"].text.startswith("Отпуск длится 28")
    assert docs["sub/guide.md"].title == "Руководство по VPN" and "«Фарватер»" in docs["sub/guide.md"].text
    # заголовок — отдельный абзац без решёток и без точки: генератор ответа видит, что это не предложение
    assert docs["sub/guide.md"].text == "Вступление.\n\nРуководство по VPN\n\nКлиент «Фарватер» ставит ИТ."
    assert docs["faq.csv:2"].text == "вопрос: Сколько суточных?\nответ: 700 рублей в день"  # разделитель «;»
    assert docs["faq.csv:4"].text == "ответ: Без вопроса" and docs["faq.csv:2"].title == "faq.csv"
    page = docs["page.html"]
    assert page.title == "Правила «Ладьи»"
    assert page.text == "Пропуска\n\nПропуск выдают в кабинете 318.\n\nПотерю оплачивают."
    assert docs["policy.pdf"].title == "Travel policy" and "700 roubles a day" in docs["policy.pdf"].text
    assert docs["trips.docx"].title == "Командировки"  # первый абзац стиля «Заголовок»: в свойствах названия нет
    assert docs["trips.docx"].text == "Черновик\n\nКомандировки\n\nСуточные — 700 рублей.\n\nГостиница до 5000 рублей"


def test_unreadable_files_are_reported_by_name_with_a_reason(folder):
    skipped = dict(load_folder(folder).skipped)
    assert sorted(skipped) == ["broken.docx", "broken.pdf", "cp1251.txt", "empty.md", "gone.txt",
                               "header_only.csv", "linked", "picture.png"]
    assert "PDF не читается" in skipped["broken.pdf"] and "DOCX не читается" in skipped["broken.docx"]
    assert "UTF-8" in skipped["cp1251.txt"] and "0xce" in skipped["cp1251.txt"]
    assert ".png не поддерживается" in skipped["picture.png"] and "нет текста" in skipped["empty.md"]
    assert "ссылка на папку" in skipped["linked"]
    assert "битая ссылка" in skipped["gone.txt"] and "ни одной строки" in skipped["header_only.csv"]
    assert "пропущен broken.pdf: PDF не читается" in str(load_folder(folder))


def test_hidden_files_and_folders_are_not_read(folder):
    ids = [doc.id for doc in load_folder(folder).docs] + [path for path, _ in load_folder(folder).skipped]
    assert not any(part.startswith(".") for path in ids for part in path.split("/"))


def test_citations_lead_back_to_the_file(folder):
    index = Index.build(load_folder(folder).docs)
    hits = index.search("VPN Фарватер", k=1)
    assert hits[0].doc_id == "sub/guide.md"
    assert "[1] Руководство по VPN (sub/guide.md, чанк 1)" in build_prompt("Как поставить VPN?", hits)


def test_load_file_explains_what_is_wrong(folder):
    assert load_file(folder / "sub" / "guide.md", root=folder)[0].id == "sub/guide.md"
    assert load_file(folder / "notes.txt")[0].id == "notes.txt"
    with pytest.raises(MiniRagError, match="папка"):
        load_file(folder / "folder.txt")
    with pytest.raises(MiniRagError, match="не внутри"):
        load_file(folder / "notes.txt", root=folder / "sub")
    with pytest.raises(MiniRagError, match="Папки .* нет"):
        load_folder(folder / "нет_такой")


def test_without_the_optional_packages_pdf_and_docx_are_skipped_with_the_install_command(folder, monkeypatch):
    monkeypatch.setitem(sys.modules, "pypdf", None)
    monkeypatch.setitem(sys.modules, "docx", None)
    skipped = dict(load_folder(folder).skipped)
    assert "minirag[files]" in skipped["policy.pdf"] and "minirag[files]" in skipped["trips.docx"]


def test_too_large_files_are_skipped(folder, monkeypatch):
    monkeypatch.setattr(loaders, "MAX_BYTES", 40)
    report = load_folder(folder)
    assert "больше" in dict(report.skipped)["notes.txt"] and isinstance(report, LoadReport)


@pytest.mark.parametrize("name, content, title", [
    ("a.md", "Вступление без решётки.\n\n## Первый заголовок\n\nТекст.\n\n# Второй", "Первый заголовок"),
    ("b.md", "```python\n# не заголовок, а комментарий\n```\n\n# Настоящий", "Настоящий"),
    ("c.md", "Текст без заголовков.", "Текст без заголовков."),
    ("d.html", "<html><head><title>Из title</title></head><body><h1>Из h1</h1><p>Текст.</p></body></html>", "Из title"),
    ("e.html", "<html><body><h1>Из h1</h1><p>Текст.</p></body></html>", "Из h1"),
    ("f.txt", "\n\n  Первая непустая строка  \nВторая.", "Первая непустая строка"),
    ("g.txt", "слово " * 40, "слово " * 15 + "слово…"),  # 100 символов по слову: 16 слов и «…»
])
def test_titles_come_from_the_file_and_the_id_from_its_name(tmp_path, name, content, title):
    (tmp_path / name).write_text(content, encoding="utf-8")
    doc = load_file(tmp_path / name)[0]
    assert doc.id == name and doc.title == title
    assert len(doc.title) <= loaders.TITLE_MAX_CHARS + 1


def test_docx_and_pdf_titles_come_from_the_document_properties(tmp_path):
    word = docx.Document()
    word.core_properties.title = "Название из свойств"
    word.add_heading("Заголовок в тексте", level=1)
    word.add_paragraph("Текст.")
    word.save(tmp_path / "t.docx")
    assert load_file(tmp_path / "t.docx")[0].title == "Название из свойств"
    (tmp_path / "t.pdf").write_bytes(make_pdf("Body text.", title="PDF title"))
    assert load_file(tmp_path / "t.pdf")[0].title == "PDF title"
    (tmp_path / "u.pdf").write_bytes(make_pdf("First line of the page."))
    assert load_file(tmp_path / "u.pdf")[0].title == "First line of the page."  # без названия — первая строка


def test_an_html_table_becomes_rows_read_with_their_header(tmp_path):
    """Ячейки HTML не склеиваются в одно слово: таблица становится таблицей Markdown, и строка читается
    с шапкой из <th>, как строка CSV; перенос внутри ячейки — пробел, пробелы между тегами — не текст."""
    (tmp_path / "prices.html").write_text(
        "<html><body><p>Цены на лето.</p>\n<table>\n <tr><th>Домик</th><th>Цена<br>за ночь</th></tr>\n"
        " <tr><td>Большой</td><td><b>5000</b> руб</td></tr>\n <tr><td>Малый</td><td>3000 руб</td></tr>\n</table>\n"
        "<p>Залог не берём.</p></body></html>", encoding="utf-8")
    [doc] = load_file(tmp_path / "prices.html")
    assert "| Домик | Цена за ночь |\n|---|---|\n| Большой | 5000 руб |\n| Малый | 3000 руб |" in doc.text
    assert candidate_sentences(doc.text) == ["Цены на лето.", "Домик: Большой; Цена за ночь: 5000 руб",
                                             "Домик: Малый; Цена за ночь: 3000 руб", "Залог не берём."]


def test_the_report_counts_files_and_says_why_a_csv_gives_more_documents(tmp_path):
    # пользователь: «Прочитано документов: 11» на 6 файлов выглядело как ошибка
    (tmp_path / "график.csv").write_text("врач,пятница\nСафина Д. В.,8:00-14:00\nГалиев А. Р.,выходной\n"
                                        "Смирнова И. П.,10:00-16:00\n", encoding="utf-8")
    (tmp_path / "адрес.txt").write_text("Мы на ул. Баумана, д. 47.", encoding="utf-8")
    report = load_folder(tmp_path)
    assert (len(report.docs), report.files) == (4, 2)
    assert str(report) == ("Прочитано файлов: 2 (строка CSV — отдельный документ, всего документов 4), "
                           "пропущено файлов: 0.")
    (tmp_path / "график.csv").unlink()
    assert str(load_folder(tmp_path)) == "Прочитано файлов: 1, пропущено файлов: 0."

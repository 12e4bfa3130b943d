"""Отзыв слушателю: HTML с итогом по тестам и его ноутбуком — без кода скрытых тестов.

На вход — уже очищенный проверенный ноутбук (sanitize.py): markdown слушателя — безопасный
HTML, выходы — только текст и настоящие картинки, метаданные — только nbgrader. Здесь из ячеек
скрытых тестов убирается код (строка-заглушка вместо него) и всё, кроме имени и сообщения
ошибки; строки скрытых тестов вычёркиваются из любого текста (на всякий случай: в ядро
слушателя код тестов больше не попадает). Шаблон ``templates/feedback`` экранирует каждое
значение. Модуль не считает баллы и не читает базу оценок — ручные баллы ему передают.
"""

from __future__ import annotations

import copy
import html
import json
from functools import lru_cache
from pathlib import Path

from nbformat import NotebookNode

from autograde.lab.master import HIDDEN_BEGIN, HIDDEN_END, Master, gid, hide_tests
from autograde.lab.result import Result, fmt
from autograde.lab.verdict import INSTRUCTOR_ONLY
from autograde.render.sanitize import printable, shown

PLACEHOLDER = "# … здесь скрытые тесты: их код не показывается …"
TEMPLATES = Path(__file__).resolve().parent / "templates"


def hidden_lines(master: Master, shortest: int = 16) -> list[str]:
    """Строки кода скрытых тестов (без коротких и общих вроде «import minirag as _ref»)."""
    lines = set()
    for grade_id in master.order:
        if master.has_hidden_tests(grade_id):
            inside = False
            for line in master.by_id[grade_id].source.split("\n"):
                if HIDDEN_BEGIN in line or HIDDEN_END in line:
                    inside = HIDDEN_BEGIN in line
                    lines.add(line.strip())
                elif inside and len(line.strip()) >= shortest:
                    lines.add(line.strip())
    released = {line.strip() for cell in master.release.cells for line in cell.source.split("\n")}
    return sorted(lines - released, key=len, reverse=True)


class Redactor:
    """Вычёркивает из текста строки скрытых тестов — как есть и как их показали бы repr() и json.dumps()."""

    def __init__(self, master: Master):
        variants = set()
        for line in hidden_lines(master):
            variants.update({line, repr(line)[1:-1], json.dumps(line, ensure_ascii=False)[1:-1]})
        self.lines = sorted(variants, key=len, reverse=True)

    def __call__(self, text):
        if not isinstance(text, str):
            return text
        for line in self.lines:
            if line in text:
                text = text.replace(line, "[скрыто: строка скрытого теста]")
        return text

    def cell(self, cell) -> None:
        for output in cell.get("outputs", []):
            for key in ("text", "evalue"):
                if key in output:
                    output[key] = self(output[key])
            if "traceback" in output:
                output["traceback"] = [self(line) for line in output["traceback"]]
            for key, value in output.get("data", {}).items():
                output["data"][key] = self(value)


def title(master: Master, grade_id: str, kind: str) -> str:
    for line in master.by_id[grade_id].source.splitlines():
        line = line.strip()
        if line.startswith("#") and "BEGIN" not in line:
            text = line.lstrip("#").strip()
            return text.split(":", 1)[1].strip() if text.lower().startswith("проверка:") else text
        if line:
            break
    return f"письменный ответ ({grade_id})" if kind == "manual" else grade_id


def visible(clean: NotebookNode, master: Master) -> NotebookNode:
    """Проверенный ноутбук без кода скрытых тестов: то, что видят formgrader, nbgrader generate_feedback и слушатель.

    У ячейки скрытых тестов остаются заглушка вместо кода и имя с сообщением ошибки — ни печати,
    ни трассировки (они показали бы строки теста); из текста остальных выходов вычёркиваются строки
    скрытых тестов.
    """
    nb = copy.deepcopy(clean)
    redact = Redactor(master)
    for cell in nb.cells:
        grade_id = gid(cell)
        if grade_id and grade_id in master.by_id and master.has_hidden_tests(grade_id):
            cell.source = hide_tests(master.by_id[grade_id].source, PLACEHOLDER)
            cell.outputs = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
            for output in cell.outputs:
                output["traceback"] = [f"{output.get('ename', 'Error')}: {output.get('evalue', '')}"]
        if cell.cell_type == "code":
            redact.cell(cell)
            cell.source = shown(cell.source, colours=False)  # смена направления текста в коде не прячет код
    return nb


def student_notebook(clean: NotebookNode, master: Master, cells: list[dict], manual: dict) -> tuple[NotebookNode, list[dict]]:
    """Копия ноутбука для отзыва и строки таблицы итогов.

    ``cells`` — баллы по ячейкам (CellScore.to_dict), ``manual`` — {grade_id: (балл, комментарий)} из базы.
    """
    nb = visible(clean, master)
    by_id = {c["grade_id"]: c for c in cells}
    redact = Redactor(master)
    rows = []
    for cell in nb.cells:
        grade_id = gid(cell)
        cell.metadata = NotebookNode()
        info = by_id.get(grade_id)
        comment = manual.get(grade_id, (None, ""))[1] if grade_id else ""
        if info is None:
            if comment:  # комментарий преподавателя к ячейке-решению без баллов
                cell.metadata.update(autograde_label=shown(f"Комментарий преподавателя: {comment}", colours=False),
                                     autograde_css="manual", autograde_anchor=f"ag-{grade_id}")
            continue
        score, message = info["score"], info["message"]
        if info["kind"] == "test":
            passed = score is not None and score >= info["max_score"]
            verdict, css = ("пройден", "passed") if passed else ("не пройден", "failed")
        else:
            graded, comment = manual.get(grade_id, (None, ""))
            if graded is not None:
                score, verdict, css = graded, "проверено преподавателем", "manual"
            elif score is not None:
                verdict, css = "нет ответа", "failed"
            else:
                verdict, css = "ждёт проверки преподавателем", "manual"
            message = comment or message
        name = title(master, grade_id, info["kind"])
        cell.metadata.update(autograde_anchor=f"ag-{grade_id}", autograde_css=css,
                             autograde_label=shown(f"{name}: {verdict}, {_points(score)} из {_points(info['max_score'])}"
                                                   + (f". Комментарий преподавателя: {comment}" if comment else ""),
                                                   colours=False))
        rows.append({"anchor": f"ag-{grade_id}", "title": name, "verdict": verdict, "css": css,
                     "points": f"{_points(score)} из {_points(info['max_score'])}",
                     "message": shown(redact(message), colours=False)})
    return nb, rows


def _points(value) -> str:
    return "—" if value is None else fmt(value)


@lru_cache(maxsize=1)
def _exporter():
    from nbconvert import HTMLExporter
    from nbconvert.exporters.templateexporter import TemplateExporter
    from nbconvert.filters.highlight import Highlight2HTML
    from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

    class FeedbackExporter(HTMLExporter):
        """HTMLExporter без прохода BeautifulSoup в конце и с кэшем подсветки (код заданий у всех один)."""

        def from_notebook_node(self, nb, resources=None, **kw):
            highlight = Highlight2HTML(pygments_lexer="ipython3", parent=self)

            def highlight_code(source, language=None, metadata=None):
                key = (source, language)
                if key not in _HIGHLIGHT_CACHE:
                    if len(_HIGHLIGHT_CACHE) > 5000:
                        _HIGHLIGHT_CACHE.clear()
                    _HIGHLIGHT_CACHE[key] = highlight(source, language=language, metadata=metadata)
                return _HIGHLIGHT_CACHE[key]

            resources = self._init_resources(resources)
            self.register_filter("highlight_code", highlight_code)
            self.register_filter("filter_data_type", WidgetsDataTypeFilter(
                notebook_metadata=self._nb_metadata, parent=self, resources=resources))
            return TemplateExporter.from_notebook_node(self, nb, resources, **kw)

    return FeedbackExporter(template_name="feedback", extra_template_basedirs=[str(TEMPLATES)],
                            exclude_anchor_links=True)


_HIGHLIGHT_CACHE: dict = {}


def render(clean: NotebookNode, master: Master, *, student_id: str, result: Result, manual: dict | None = None) -> str:
    """HTML отзыва по очищенному проверенному ноутбуку и итогу."""
    manual = manual or {}
    nb, rows = student_notebook(clean, master, result.cells, manual)
    manual_cells = [c for c in result.cells if c["kind"] == "manual"]
    pending = [c for c in manual_cells if manual.get(c["grade_id"], (None,))[0] is None and c["score"] is None]
    manual_total = sum(c["max_score"] for c in manual_cells)
    got_manual = sum((manual.get(c["grade_id"], (None,))[0] or c["score"] or 0) for c in manual_cells)
    if pending:
        manual_line = f"Письменные ответы ({fmt(manual_total)} б.) ещё проверяет преподаватель."
        total_line = f"Пока без письменных ответов: {fmt(result.score + got_manual)} из {fmt(result.max_score + manual_total)}."
    elif manual_total:
        manual_line = f"Письменные ответы: {fmt(got_manual)} из {fmt(manual_total)}."
        total_line = f"Итого: {fmt(result.score + got_manual)} из {fmt(result.max_score + manual_total)}."
    else:
        manual_line, total_line = "", f"Итого: {fmt(result.score)} из {fmt(result.max_score)}."
    status_line = for_student(result.message)
    if result.late_hours > 0:
        status_line = "; ".join(filter(None, [status_line, f"сдано на {result.late_hours:.1f} ч позже срока"
                                              + (f", снято {fmt(result.penalty)} б." if result.penalty else "")]))
    resources = {"autograde": {
        "title": f"{master.lab} — отзыв для {printable(student_id)}",
        "score": fmt(result.score), "max_score": fmt(result.max_score), "manual_line": manual_line,
        "total_line": total_line, "status_line": shown(status_line, colours=False), "rows": rows,
    }}
    body, _ = _exporter().from_notebook_node(nb, resources=resources)
    return body


def for_student(message: str) -> str:
    """Сообщение итога без частей для преподавателя (``INSTRUCTOR_ONLY``)."""
    return "; ".join(part for part in (message or "").split("; ") if part and not part.startswith(INSTRUCTOR_ONLY))


def error_page(lab: str, student_id: str, result: Result) -> str:
    """Отзыв, когда ноутбук не удалось проверить вовсе (не JSON, нет файла и т. п.)."""
    return ("<!DOCTYPE html><html lang='ru'><head><meta charset='utf-8'><title>"
            f"{html.escape(lab)}</title></head><body><h1>{html.escape(lab)} — отзыв для "
            f"{html.escape(printable(student_id))}</h1>"
            f"<p><b>Работа не проверена: баллы автопроверки {fmt(result.score)} из {fmt(result.max_score)}.</b></p>"
            f"<p>{html.escape(shown(for_student(result.message), colours=False))}</p></body></html>")

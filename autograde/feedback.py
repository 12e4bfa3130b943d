"""Отзыв слушателю: HTML с итогом по тестам и его ноутбуком — без кода скрытых тестов.

nbgrader кладёт в отзыв проверенный ноутбук целиком, а в нём тесты восстановлены из версии
преподавателя — вместе со скрытыми. Здесь перед выводом в HTML (nbconvert, шаблон
``templates/feedback``) из каждой ячейки со скрытыми тестами вырезается код между
``### BEGIN HIDDEN TESTS`` и ``### END HIDDEN TESTS``, а у её ошибок остаётся только имя и
сообщение (трассировка показала бы строки скрытого теста). Видно, прошёл ли тест и что он
сказал; не видно, как он устроен.

Чего модуль не делает: не считает баллы (scoring.py) и не читает базу оценок — ручные
баллы и комментарии ему передают.
"""

from __future__ import annotations

import copy
import html
import json
from functools import lru_cache
from pathlib import Path

from nbformat import NotebookNode

from .scoring import HIDDEN_BEGIN, REVIEW_PREFIX, Master, _gid

HIDDEN_END = "END HIDDEN TESTS"
# что можно оставить в HTML из текста слушателя: разметка есть, скриптов и обработчиков нет
SAFE_TAGS = ["a", "abbr", "b", "blockquote", "br", "code", "del", "div", "em", "h1", "h2", "h3", "h4", "h5", "h6",
             "hr", "i", "img", "li", "ol", "p", "pre", "span", "strong", "sub", "sup", "table", "tbody", "td", "th",
             "thead", "tr", "ul"]
SAFE_ATTRIBUTES = {"a": ["href", "title"], "img": ["src", "alt", "title"], "*": ["class"]}
SAFE_OUTPUTS = ("text/plain", "image/png", "image/jpeg")
PLACEHOLDER = "# … здесь скрытые тесты: их код не показывается …"
TEMPLATES = Path(__file__).resolve().parent / "templates"


def hide_tests(source: str) -> str:
    """Вырезать области скрытых тестов, оставив на их месте строку-заглушку."""
    out, inside = [], False
    for line in source.split("\n"):
        if HIDDEN_BEGIN in line:
            inside = True
            indent = line[: len(line) - len(line.lstrip())]
            out.append(indent + PLACEHOLDER)
        elif HIDDEN_END in line:
            inside = False
        elif not inside:
            out.append(line)
    return "\n".join(out)


def clean_markdown(source: str) -> str:
    """Markdown слушателя → безопасный HTML (bleach): отзыв открывают в браузере, скрипты в нём не нужны."""
    import bleach
    from nbconvert.filters import markdown2html

    return bleach.clean(markdown2html(source), tags=SAFE_TAGS, attributes=SAFE_ATTRIBUTES,
                        protocols=["http", "https", "mailto", "data"], strip=True)


def _safe_outputs(cell) -> None:
    """Из выходов кода оставить текст и картинки: HTML, JavaScript и SVG из ядра слушателя не показываем."""
    for output in cell.get("outputs", []):
        if output.get("output_type") in ("display_data", "execute_result"):
            data = output.get("data", {})
            kept = {k: v for k, v in data.items() if k in SAFE_OUTPUTS}
            if not kept:
                kept = {"text/plain": "[вывод " + ", ".join(sorted(data)) + " в отзыве не показывается]"}
            output["data"] = kept


def hidden_lines(master: Master, shortest: int = 16) -> list[str]:
    """Строки кода скрытых тестов (без коротких и общих вроде «import minirag as _ref»)."""
    lines = set()
    for gid in master.order:
        if master.has_hidden_tests(gid):
            inside = False
            for line in master.by_id[gid].source.split("\n"):
                if HIDDEN_BEGIN in line or HIDDEN_END in line:
                    inside = HIDDEN_BEGIN in line
                    lines.add(line.strip())
                elif inside and len(line.strip()) >= shortest:
                    lines.add(line.strip())
    released = {line.strip() for cell in master.release.cells for line in cell.source.split("\n")}
    return sorted(lines - released, key=len, reverse=True)


class Redactor:
    """Вычёркивает из текста строки скрытых тестов: код слушателя мог перехватить их и напечатать."""

    def __init__(self, master: Master):
        # и как есть, и как их покажут repr() или json.dumps() (с экранированными кавычками)
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
            if "text" in output:
                output["text"] = self(output["text"])
            if "evalue" in output:
                output["evalue"] = self(output["evalue"])
            if "traceback" in output:
                output["traceback"] = [self(line) for line in output["traceback"]]
            for key, value in output.get("data", {}).items():
                output["data"][key] = self(value)


def _fmt(points) -> str:
    return "—" if points is None else f"{float(points):g}"


def _title(master: Master, gid: str, kind: str) -> str:
    for line in master.by_id[gid].source.splitlines():
        line = line.strip()
        if line.startswith("#") and "BEGIN" not in line:
            text = line.lstrip("#").strip()
            return text.split(":", 1)[1].strip() if text.lower().startswith("проверка:") else text
        if line:
            break
    return f"письменный ответ ({gid})" if kind == "manual" else gid


def student_notebook(executed: NotebookNode, master: Master, cells: list[dict], manual: dict) -> tuple[NotebookNode, list[dict]]:
    """Копия ноутбука для слушателя и строки таблицы итогов.

    ``cells`` — баллы по ячейкам (CellScore.to_dict), ``manual`` — {grade_id: (балл, комментарий)}
    из базы оценок, если преподаватель уже проверил письменные ответы.
    """
    nb = copy.deepcopy(executed)
    by_id = {c["grade_id"]: c for c in cells}
    redact = Redactor(master)
    rows = []
    for cell in nb.cells:
        gid = _gid(cell)
        trusted = gid is not None and gid in master.by_id and not master.by_id[gid].metadata["nbgrader"].get("solution")
        if cell.cell_type == "markdown" and not trusted:
            cell.source = clean_markdown(cell.source)
        if cell.cell_type == "code":
            _safe_outputs(cell)
        cell.metadata.pop("nbgrader", None)
        cell.metadata.pop("autograde", None)
        if gid and gid in master.by_id and master.has_hidden_tests(gid):
            # от скрытого теста остаются итог и сообщение об ошибке; трассировка и печать показали бы его код
            cell.source = hide_tests(master.by_id[gid].source)
            cell.outputs = [output for output in cell.get("outputs", []) if output.get("output_type") == "error"]
            for output in cell.outputs:
                output["evalue"] = (output.get("evalue") or "")[:500]
                output["traceback"] = [f"{output.get('ename', 'Error')}: {output['evalue']}"]
        if cell.cell_type == "code":
            redact.cell(cell)
        info = by_id.get(gid)
        comment = manual.get(gid, (None, ""))[1] if gid else ""
        if info is None:
            if comment:  # комментарий преподавателя к ячейке-решению без баллов
                cell.metadata["autograde_label"] = f"Комментарий преподавателя: {comment}"
                cell.metadata["autograde_css"] = "manual"
                cell.metadata["autograde_anchor"] = f"ag-{gid}"
            continue
        anchor = f"ag-{gid}"
        score = info["score"]
        message = info["message"]
        if info["kind"] == "test":
            passed = score is not None and score >= info["max_score"]
            verdict, css = ("пройден", "passed") if passed else ("не пройден", "failed")
        else:
            graded, comment = manual.get(gid, (None, ""))
            if graded is not None:
                score, verdict, css = graded, "проверено преподавателем", "manual"
            elif score is not None:
                verdict, css = "нет ответа", "failed"
            else:
                verdict, css = "ждёт проверки преподавателем", "manual"
            message = comment or message
        title = _title(master, gid, info["kind"])
        cell.metadata["autograde_label"] = f"{title}: {verdict}, {_fmt(score)} из {_fmt(info['max_score'])}" + (
            f". Комментарий преподавателя: {comment}" if comment else "")
        cell.metadata["autograde_css"] = css
        cell.metadata["autograde_anchor"] = anchor
        rows.append({"anchor": anchor, "title": title, "points": f"{_fmt(score)} из {_fmt(info['max_score'])}",
                     "verdict": verdict, "css": css, "message": redact(message)})
    return nb, rows


@lru_cache(maxsize=1)
def _exporter():
    from nbconvert import HTMLExporter
    from nbconvert.exporters.templateexporter import TemplateExporter
    from nbconvert.filters.highlight import Highlight2HTML
    from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

    class FeedbackExporter(HTMLExporter):
        """HTMLExporter без прохода BeautifulSoup в конце (атрибуты доступности; треть времени отзыва)
        и с кэшем подсветки: код заданий и тестов у всех слушателей один и тот же."""

        def from_notebook_node(self, nb, resources=None, **kw):
            highlight = Highlight2HTML(pygments_lexer="ipython3", parent=self)
            cache: dict = _HIGHLIGHT_CACHE

            def highlight_code(source, language=None, metadata=None):
                key = (source, language)
                if key not in cache:
                    cache[key] = highlight(source, language=language, metadata=metadata)
                return cache[key]

            resources = self._init_resources(resources)
            self.register_filter("highlight_code", highlight_code)
            self.register_filter("filter_data_type", WidgetsDataTypeFilter(
                notebook_metadata=self._nb_metadata, parent=self, resources=resources))
            return TemplateExporter.from_notebook_node(self, nb, resources, **kw)

    return FeedbackExporter(template_name="feedback", extra_template_basedirs=[str(TEMPLATES)],
                            exclude_anchor_links=True)


_HIGHLIGHT_CACHE: dict = {}


def render(executed: NotebookNode, master: Master, *, student_id: str, result: dict, manual: dict | None = None) -> str:
    """HTML отзыва. ``result`` — итог проверки (grade.py), ``manual`` — ручные баллы из базы."""
    manual = manual or {}
    nb, rows = student_notebook(executed, master, result["cells"], manual)
    pending = [c for c in result["cells"] if c["kind"] == "manual" and manual.get(c["grade_id"], (None,))[0] is None
               and c["score"] is None]
    manual_total = sum(c["max_score"] for c in result["cells"] if c["kind"] == "manual")
    if pending:
        manual_line = f"Письменные ответы ({_fmt(manual_total)} б.) ещё проверяет преподаватель."
    elif manual_total:
        got = sum((manual.get(c["grade_id"], (None,))[0] or c["score"] or 0) for c in result["cells"] if c["kind"] == "manual")
        manual_line = f"Письменные ответы: {_fmt(got)} из {_fmt(manual_total)}."
    else:
        manual_line = ""
    # пометка «подозрительные конструкции» — для преподавателя, в отзыв слушателю она не идёт
    status_line = "; ".join(part for part in (result.get("message") or "").split("; ")
                            if part and not part.startswith(REVIEW_PREFIX))
    resources = {"autograde": {
        "title": f"{master.lab} — отзыв для {student_id}",
        "score": _fmt(result["score"]), "max_score": _fmt(result["max_score"]),
        "manual_line": manual_line, "status_line": status_line, "rows": rows,
    }}
    body, _ = _exporter().from_notebook_node(nb, resources=resources)
    return body


def error_page(lab: str, student_id: str, result: dict) -> str:
    """Отзыв, когда ноутбук не удалось проверить вовсе (не JSON, нет файла и т. п.)."""
    return ("<!DOCTYPE html><html lang='ru'><head><meta charset='utf-8'><title>"
            f"{html.escape(lab)}</title></head><body><h1>{html.escape(lab)} — отзыв для {html.escape(student_id)}</h1>"
            f"<p><b>Работа не проверена: баллы автопроверки {_fmt(result['score'])} из {_fmt(result['max_score'])}.</b></p>"
            f"<p>{html.escape(result.get('message') or '')}</p></body></html>")

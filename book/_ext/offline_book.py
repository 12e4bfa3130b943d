"""Книга без интернета: MathJax из установленного пакета и чистая консоль браузера.

Sphinx по умолчанию грузит MathJax с CDN, и без сети формулы в собранной книге не
отрисуются. Курс обещает работу офлайн, поэтому расширение кладёт MathJax 3 из пакета
``django-static-mathjax`` (он в requirements.txt; Django ему не нужен) в ``_static/mathjax``
и указывает на него. Второе: тема при первом визите с пустым localStorage пишет в консоль
ошибку о «пустом режиме темы» — маленький скрипт в <head> заранее выставляет режим «auto».
Третье: sphinx-thebe добавляет на страницу один и тот же встроенный скрипт дважды, и браузер
падает на повторном ``const`` — повторы убираются. Содержимое страниц расширение не меняет.
"""

from __future__ import annotations

import shutil
from pathlib import Path

MATHJAX_DIR = "mathjax"
# из дистрибутива MathJax нужен один компонент и то, что он подгружает по требованию
MATHJAX_PARTS = ("tex-chtml.js", "output", "input", "ui", "a11y", "adaptors")
THEME_MODE_FIX = (
    'if (!localStorage.getItem("mode")) { localStorage.setItem("mode", "auto"); }'
    ' if (!document.documentElement.dataset.mode) { document.documentElement.dataset.mode = "auto"; }'
)


def _mathjax_source() -> Path:
    import mathjax  # пакет django-static-mathjax

    return Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"


def _use_local_mathjax(app) -> None:
    app.config.mathjax_path = f"{MATHJAX_DIR}/tex-chtml.js"


def _copy_mathjax(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    source, target = _mathjax_source(), Path(app.outdir) / "_static" / MATHJAX_DIR
    target.mkdir(parents=True, exist_ok=True)
    for part in MATHJAX_PARTS:
        if (source / part).is_dir():
            shutil.copytree(source / part, target / part, dirs_exist_ok=True)
        else:
            shutil.copy2(source / part, target / part)


def _drop_duplicate_scripts(app, pagename, templatename, context, doctree) -> None:
    seen, unique = set(), []
    for script in context.get("script_files", []):
        name = getattr(script, "filename", script) or ""  # у встроенных скриптов имя то None, то ""
        key = (str(name), tuple(sorted((k, str(v)) for k, v in getattr(script, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    if "script_files" in context:
        context["script_files"][:] = unique


def setup(app):
    app.connect("builder-inited", _use_local_mathjax)
    app.connect("build-finished", _copy_mathjax)
    app.connect("html-page-context", _drop_duplicate_scripts, priority=900)  # после sphinx-thebe
    app.add_js_file(None, body=THEME_MODE_FIX, priority=100)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

"""Числа из кода — в тексте глав книги: одинаково на сайте и в JupyterLab курса.

Ячейка главы запоминает значение под именем, текст главы ссылается на него ролью MyST ``{eval}``:

- в коде: ``keep("ch2_cos", cosine(a, b))``;
- в тексте: ``{eval}`shown("ch2_cos:.4f")``` — после двоеточия формат, как у ``format()``.

Роль вычисляет выражение в ядре главы: при сборке книги это делает myst-nb, в JupyterLab курса —
расширение jupyterlab-myst, когда ячейки запущены («Выполнить» → «Запустить все ячейки»). Поэтому
``shown`` возвращает значение, чей текстовый вид — уже отформатированное число или строка без кавычек.

Пример: ``keep("n", 0.60512) and repr(shown("n:.3f"))`` → ``'0.605'``
"""

from __future__ import annotations

_KEPT: dict[str, object] = {}


class Shown:
    """Готовый текст для роли ``{eval}``: без кавычек строки и без ``np.float64(...)`` вокруг числа."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__


def keep(name: str, value):
    """Запомнить ``value`` под именем ``name`` для текста главы; возвращает ``value``."""
    _KEPT[name] = value
    return value


def shown(spec: str) -> Shown:
    """Значение, запомненное ``keep``, в формате после двоеточия: ``shown("ch3_top1:.3f")``."""
    name, _, fmt = spec.partition(":")
    if name not in _KEPT:
        raise KeyError(f"Значение {name!r} не запомнено: запусти ячейки главы по порядку "
                       f"(в ячейке выше должен быть keep({name!r}, ...)).")
    return Shown(format(_KEPT[name], fmt))

"""Итог проверки одной работы (``Result``): баллы по ячейкам, статус, сообщение, опоздание.

Его считает работник (``run/worker.py``), пишет и читает ``store/``, показывает ``render/`` и команды.
``fmt`` — как баллы выглядят в тексте: ``2.5``, ``33``.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields

VERSION = 2  # меняется, когда меняется сам способ проверки: тогда перепроверяются все


@dataclass
class Result:
    """Итог одной работы."""

    student: str  # ключ слушателя (имя папок и запись в базе оценок)
    display_id: str  # как слушатель назван в сдаче или в списке группы
    lab: str
    key: str  # хеш всего, от чего зависит итог; "" — перепроверить в следующий раз
    status: str
    message: str
    score: float
    max_score: float
    cells: list[dict] = field(default_factory=list)  # CellScore.to_dict()
    answered: dict = field(default_factory=dict)  # grade_id письменного ответа → написан ли
    answers: dict = field(default_factory=dict)  # grade_id письменного ответа → хеш его текста
    sandbox: bool = True
    events: list[dict] = field(default_factory=list)
    submitted_at: str = ""  # время сдачи по LMS (ISO 8601) или ""
    late_hours: float = 0.0
    penalty: float = 0.0  # сколько баллов снято за опоздание
    review: list[str] = field(default_factory=list)  # подозрительные конструкции — для глаз преподавателя
    feedback_state: str = ""
    version: int = VERSION

    @property
    def unexecuted(self) -> bool:
        """Работу не исполняли вовсе (файл не ноутбук, работы нет): отзыв — короткая страница."""
        return self.status in ("error", "not_submitted") and not self.events

    @property
    def counted(self) -> bool:
        """Входит ли работа в средние и медианы (несданная — нет)."""
        return self.status != "not_submitted"

    def pending_manual(self, manual: dict) -> float:
        """Сколько баллов письменных ответов ещё ждут преподавателя."""
        return sum(c["max_score"] for c in self.cells
                   if c["kind"] == "manual" and c["score"] is None and manual.get(c["grade_id"], (None,))[0] is None)

    def to_json(self) -> str:
        return json.dumps(asdict(self), ensure_ascii=False, indent=1, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Result:
        data = json.loads(text)
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


def fmt(value) -> str:
    return f"{float(value):g}"

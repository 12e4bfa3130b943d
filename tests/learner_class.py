"""Класс независимых слушателей из ``tests/learners/<lab>/<имя>.cells``: разбор файлов и их ноутбуки.

Формат файла — в tests/learners/README.md. Слушателей читают ``test_learners.py`` (``grade`` и ``check``)
и ``test_labs_release.py`` (Validate: ``nbgrader autograde`` честных работ в той же выдаче, что и решений).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import autograde_class as ac

ROOT = Path(__file__).resolve().parents[1]
LEARNERS = ROOT / "tests" / "learners"
LABS = sorted(p.name for p in (ROOT / "solutions").iterdir() if (p / f"{p.name}.ipynb").is_file())


@dataclass
class Learner:
    lab: str
    name: str
    about: str
    base: str | None
    expect_full: bool
    lose: set[str] = field(default_factory=set)
    messages: dict[str, str] = field(default_factory=dict)
    cells: dict[str, str] = field(default_factory=dict)


def parse(path: Path) -> Learner:
    text = path.read_text(encoding="utf-8")
    head, *chunks = re.split(r"^%% ", text, flags=re.M)
    learner = Learner(path.parent.name, path.stem, "", None, False)
    for line in head.splitlines():
        key, _, value = line.lstrip("# ").partition(":")
        value = value.strip()
        if key == "learner":
            learner.about = value
        elif key == "base":
            learner.base = value
        elif key == "expect":
            learner.expect_full = value == "full"
            if value.startswith("lose"):
                learner.lose = set(value.split()[1:])
        elif key == "message":
            grade_id, _, substring = value.partition("~")
            learner.messages[grade_id.strip()] = substring.strip()
    for chunk in chunks:
        grade_id, _, source = chunk.partition("\n")
        learner.cells[grade_id.strip()] = source.rstrip("\n") + "\n"
    return learner


def learners(lab: str) -> list[Learner]:
    found = {p.stem: parse(p) for p in sorted((LEARNERS / lab).glob("*.cells"))}
    for learner in found.values():  # base: начать с ячеек другого слушателя
        chain, seen = learner, set()
        while chain.base and chain.base not in seen:
            seen.add(chain.base)
            chain = found[chain.base]
            learner.cells = {**chain.cells, **learner.cells}
    return list(found.values())


def notebook(learner: Learner) -> bytes:
    release = json.loads((ROOT / "labs" / learner.lab / f"{learner.lab}.ipynb").read_text(encoding="utf-8"))
    nb = copy.deepcopy(release)
    cells = []
    for cell in nb["cells"]:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id in learner.cells:
            cell["source"] = learner.cells[grade_id]
        cells.append(cell)
        if f"+{grade_id}" in learner.cells:  # своя ячейка слушателя сразу после этой (черновик, сверка)
            cells.append({"cell_type": "code", "execution_count": None, "id": f"own-{grade_id}", "metadata": {}, "outputs": [],
                          "source": learner.cells[f"+{grade_id}"]})
    nb["cells"] = cells
    return ac.dumps(nb)


ALL = [learner for lab in LABS for learner in learners(lab)]

"""Синтетическая группа для проверки autograde: честные работы и все виды плохих сдач.

Работы собираются из настоящих ноутбуков курса: выданная версия ``labs/<lab>/<lab>.ipynb`` —
то, что получил слушатель, решения — из ``solutions/<lab>/<lab>.ipynb`` (код между маркерами
BEGIN/END SOLUTION). Модуль ничего не проверяет сам: им пользуются tests/test_autograde.py
и benchmarks/bench_autograde.py.
"""

from __future__ import annotations

import copy
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
LAB = "lab01_mini_rag"


def course_copy(target: Path, root: Path = ROOT) -> Path:
    """Копия каталога курса (настройки, решения, выданные версии) — проверка пишет только в неё."""
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy(root / "nbgrader_config.py", target / "nbgrader_config.py")
    for folder in ("solutions", "labs"):
        shutil.copytree(root / folder, target / folder, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return target


def _source(cell) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _gid(cell):
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


class Lab:
    """Выданный ноутбук и решения одной лабораторной; из них собираются работы."""

    def __init__(self, root: Path = ROOT, lab: str = LAB):
        self.lab = lab
        self.release = json.loads((root / "labs" / lab / f"{lab}.ipynb").read_text(encoding="utf-8"))
        source = json.loads((root / "solutions" / lab / f"{lab}.ipynb").read_text(encoding="utf-8"))
        self.solutions = {}
        for cell in source["cells"]:
            meta = cell["metadata"].get("nbgrader", {})
            if meta.get("solution"):
                lines = [line for line in _source(cell).split("\n")
                         if "BEGIN SOLUTION" not in line and "END SOLUTION" not in line]
                self.solutions[meta["grade_id"]] = "\n".join(lines)
        self.points = {meta["grade_id"]: float(meta["points"]) for meta in
                       (c["metadata"].get("nbgrader", {}) for c in source["cells"])
                       if meta.get("grade") and not meta.get("solution")}

    def notebook(self, answers: dict[str, str] | None = None) -> dict:
        """Выданный ноутбук с ответами ``answers`` (grade_id → код); по умолчанию — все решения."""
        answers = self.solutions if answers is None else answers
        nb = copy.deepcopy(self.release)
        for cell in nb["cells"]:
            if _gid(cell) in answers:
                cell["source"] = answers[_gid(cell)]
        return nb

    def index(self, nb: dict, grade_id: str) -> int:
        return next(i for i, c in enumerate(nb["cells"]) if _gid(c) == grade_id)

    def add_cell(self, nb: dict, after: str | None, source: str) -> dict:
        """Ячейка слушателя (без метаданных nbgrader) после ячейки ``after`` или в конце."""
        cell = {"cell_type": "code", "execution_count": None, "id": f"own-{len(nb['cells'])}",
                "metadata": {}, "outputs": [], "source": source}
        at = self.index(nb, after) + 1 if after else len(nb["cells"])
        nb["cells"].insert(at, cell)
        return nb

    def total(self, failing=()) -> float:
        """Автобаллы, если не проходят тесты заданий ``failing`` (по префиксу grade_id)."""
        return sum(p for gid, p in self.points.items() if not any(gid.startswith(f + "_") for f in failing))


def dumps(nb: dict) -> bytes:
    return json.dumps(nb, ensure_ascii=False, indent=1).encode("utf-8")


@dataclass
class Case:
    """Одна работа группы и чего от неё ждём."""

    student_id: str
    files: dict[str, bytes]  # имя файла в папке <student>/<lab>/ → содержимое
    status: str
    score: float | None  # None — проверить по эталонному nbgrader
    message: str  # кусок сообщения, который должен быть в CSV ("" — сообщение пустое)
    kind: str  # какой вид плохой сдачи (для отчёта)
    honest: bool = False


ALWAYS_EQUAL = '''class _Answer:
    """Объект, равный чему угодно: так пытаются обмануть assert result == expected."""
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False

'''


def cases(lab: Lab, memory_mb: int = 512, cell_timeout: float = 5, host_targets: tuple[str, ...] = ()) -> list[Case]:
    """Группа для e2e-теста: честные работы и по работе на каждый вид плохой сдачи."""
    name = f"{lab.lab}.ipynb"
    full_nb = lab.notebook()
    full = dumps(full_nb)
    partial_answers = {k: v for k, v in lab.solutions.items() if k in ("l2_normalize", "cosine", "top_k")}
    out = [
        Case("full", {name: full}, "ok", lab.total(), "", "полное решение", True),
        Case("untouched", {name: dumps(lab.notebook({}))}, "ok", 0.0, "", "нетронутая выданная версия", True),
        Case("partial", {name: dumps(lab.notebook(partial_answers))}, "ok", None, "", "частичное решение", True),
        Case("not_json", {name: "это не ноутбук, а текст".encode()}, "error", 0.0, "файл не JSON", "не JSON"),
        Case("truncated", {name: full[: len(full) // 2]}, "error", 0.0, "файл обрезан", "обрезанный файл"),
        Case("empty", {name: b""}, "error", 0.0, "файл пустой", "пустой файл"),
        Case("wrong_name", {"моя_лаба.ipynb": full}, "ok", lab.total(), "ноутбук называется моя_лаба.ipynb",
             "неверное имя ноутбука"),
        Case("missing", {"notes.txt": "забыл приложить ноутбук".encode()}, "error", 0.0, "нет ноутбука",
             "нет ноутбука"),
        Case("extra_files", {name: full, "helper.py": b"x = 1\n", "data.csv": b"a,b\n"}, "ok", lab.total(),
             "лишние файлы не проверяются: data.csv, helper.py", "лишние файлы"),
    ]
    # старый формат и потерянные метаданные
    v3 = nbformat.writes(nbformat.convert(nbformat.reads(full.decode(), as_version=4), 3), version=3)
    out.append(Case("old_format", {name: v3.encode()}, "ok", lab.total(), "старый формат nbformat 3",
                    "старый nbformat"))
    stripped = copy.deepcopy(full_nb)
    for cell in stripped["cells"]:
        cell["metadata"] = {}
    stripped["metadata"] = {}
    out.append(Case("no_metadata", {name: dumps(stripped)}, "ok", lab.total(), "метаданные nbgrader потеряны",
                    "нет метаданных"))
    # удалённые, повторённые, переименованные и изменённые ячейки
    nb = lab.notebook({k: v for k, v in lab.solutions.items() if k != "chunk_text"})
    nb["cells"] = [c for c in nb["cells"] if _gid(c) not in ("chunk_text_visible", "chunk_text_hidden")]
    out.append(Case("deleted_cells", {name: dumps(nb)}, "ok", lab.total(["chunk_text", "search"]),
                    "удалены ячейки задания: chunk_text_hidden, chunk_text_visible", "удалённые ячейки с тестами"))
    nb = lab.notebook()
    wrong = copy.deepcopy(nb["cells"][lab.index(nb, "cosine")])
    wrong["source"] = "def cosine(a, b):\n    return 0.5\n"
    wrong["id"] = "dup-1"
    test = copy.deepcopy(nb["cells"][lab.index(nb, "cosine_visible")])
    test["id"] = "dup-2"
    nb["cells"].insert(lab.index(nb, "cosine"), wrong)  # первая копия неверная — оценивается последняя
    nb["cells"].insert(lab.index(nb, "cosine_visible") + 1, test)
    out.append(Case("duplicated_cells", {name: dumps(nb)}, "ok", lab.total(), "ячейки повторены: cosine, cosine_visible",
                    "повторённые ячейки"))
    nb = lab.notebook({k: v for k, v in lab.solutions.items() if k != "chunk_text"})
    cell = nb["cells"][lab.index(nb, "chunk_text_visible")]
    cell["metadata"]["nbgrader"]["grade_id"] = "chunk_text_visible_mine"
    cell["source"] = "print('тест пройден')"
    out.append(Case("renamed_cells", {name: dumps(nb)}, "ok", lab.total(["chunk_text", "search"]),
                    "чужими grade_id (переименованы?): chunk_text_visible_mine", "переименованная ячейка"))
    nb = lab.notebook({k: v for k, v in lab.solutions.items() if k != "cosine"})
    nb["cells"][lab.index(nb, "cosine_visible")]["source"] = "print('Задание 2: видимые тесты пройдены.')"
    out.append(Case("edited_tests", {name: dumps(nb)}, "ok", lab.total(["cosine"]),
                    "изменены ячейки с тестами или только для чтения: cosine_visible", "изменённые тесты"))
    # код, который не даёт себя проверить
    answers = dict(lab.solutions, cosine="while True:\n    pass\n\n" + lab.solutions["cosine"])
    out.append(Case("infinite_loop", {name: dumps(lab.notebook(answers))}, "timeout", lab.total(["cosine"]),
                    f"«cosine»: выполнялась дольше {cell_timeout:g} с", "бесконечный цикл"))
    nb = lab.add_cell(lab.notebook(), None, "_hog = []\nwhile True:\n    _hog.append(bytearray(64 * 2**20))")
    out.append(Case("memory_bomb", {name: dumps(nb)}, "killed", lab.total(),
                    f"превышен лимит памяти {memory_mb} МБ", "бомба памяти"))
    nb = lab.add_cell(lab.notebook(), None, "while True:\n    print('x' * 10000)")
    out.append(Case("output_flood", {name: dumps(nb)}, "killed", lab.total(), "вывела больше 1024 КБ", "поток вывода"))
    nb = lab.add_cell(lab.notebook(), "setup", "import sys\nsys.exit('не хочу, чтобы меня проверяли')")
    out.append(Case("sys_exit", {name: dumps(nb)}, "ok", lab.total(), "«import sys»): sys.exit()", "sys.exit"))
    nb = lab.add_cell(lab.notebook(), "cosine_hidden", "import os\nos._exit(0)")
    out.append(Case("os_exit", {name: dumps(nb)}, "error", lab.total(["top_k", "chunk_text", "build_prompt",
                                                                       "check_citations", "search", "why_cosine"]),
                    "«import os»): ядро Python завершилось (код выхода 0", "os._exit"))
    nb = lab.add_cell(lab.notebook(), "top_k_hidden", "import ctypes\nctypes.string_at(0)")
    out.append(Case("crash", {name: dumps(nb)}, "error", lab.total(["chunk_text", "build_prompt", "check_citations",
                                                                     "search", "why_cosine"]),
                    "сигнал SIGSEGV", "падение ядра"))
    nb = lab.add_cell(lab.notebook(), None, "import os, time\nwhile True:\n    if os.fork() == 0:\n        time.sleep(120)")
    out.append(Case("fork_bomb", {name: dumps(nb)}, "killed", lab.total(), "процессов (fork-бомба?)", "fork-бомба"))
    nb = lab.add_cell(lab.notebook(), None,
                      "import socket, urllib.request\n"
                      "try:\n    socket.create_connection(('1.1.1.1', 80), timeout=3)\nexcept OSError as exc:\n    print(exc)\n"
                      "urllib.request.urlopen('http://example.com', timeout=3)")
    out.append(Case("network", {name: dumps(nb)}, "ok", lab.total(), "попытка выйти в сеть", "сеть"))
    out.append(Case("write_outside", {name: dumps(lab.add_cell(lab.notebook(), None, write_outside(host_targets)))},
                    "ok", lab.total(),
                    "попытка записи вне рабочей папки", "запись вне рабочей папки"))
    answers = dict(lab.solutions)
    answers["cosine"] = ALWAYS_EQUAL + "def cosine(a, b):\n    return _Answer()\n"
    answers["check_citations"] = lab.solutions["check_citations"] + "\n\ncheck_citations = lambda answer, hits: _Answer()\n"
    answers["cosine"] = answers["cosine"]
    out.append(Case("always_equal", {name: dumps(lab.notebook(answers))}, "ok", lab.total(["cosine", "check_citations"]),
                    "подозрительные конструкции в решении: __eq__", "__eq__ всегда True"))
    answers = dict(lab.solutions, l2_normalize="def l2_normalize(x):\n    return np.asarray(x, dtype=float)\n"
                                               "np.allclose = lambda *args, **kwargs: True\n")
    # баллы — как у nbgrader: подмену видно только глазами (сообщение), тесты её могут и не заметить
    out.append(Case("patched_library", {name: dumps(lab.notebook(answers))}, "ok", None,
                    "подмена функций библиотек", "подмена функции, которую зовут тесты"))
    spy = ("_seen = []\n"
           "def _spy(lines):\n"
           "    _seen.append(''.join(lines))\n"
           "    print(''.join(lines))\n"
           "    return lines\n"
           "get_ipython().input_transformers_post.append(_spy)")
    nb = lab.add_cell(lab.add_cell(lab.notebook(), "setup", spy), None, "print(_seen)")
    out.append(Case("steals_hidden_tests", {name: dumps(nb)}, "ok", lab.total(),
                    "подозрительные конструкции в решении: get_ipython, input_transformers",
                    "перехват кода скрытых тестов для отзыва"))
    return out


def write_outside(host_targets: tuple[str, ...]) -> str:
    """Код работы write_outside: пишет в систему, в HOME, в /tmp и по путям на диске проверяющего."""
    targets = ["/etc/autograde_pwned", "/usr/autograde_pwned", "~/autograde_pwned", "/tmp/autograde_pwned",
               "../../../../etc/autograde_pwned2", *host_targets]
    return (f"import os\nfor target in {targets!r}:\n"
            "    try:\n"
            "        with open(os.path.expanduser(target), 'w') as f:\n"
            "            f.write('взлом')\n"
            "        print('записал', target)\n"
            "    except OSError as exc:\n"
            "        print('не вышло:', target, exc)\n"
            "open('/etc/autograde_pwned', 'w')\n")


def write_class(folder: Path, class_cases: list[Case], lab: str = LAB) -> Path:
    """Разложить работы по папкам ``<student>/<lab>/``."""
    for case in class_cases:
        target = folder / case.student_id / lab
        target.mkdir(parents=True, exist_ok=True)
        for file_name, data in case.files.items():
            (target / file_name).write_bytes(data)
    return folder

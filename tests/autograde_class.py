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
    # сообщение Jupyter с чужой подписью прямо в сокет iopub: ядро — код работы, это её ответ, а не сбой проверки
    nb = lab.add_cell(lab.notebook(), None, "k = get_ipython().kernel\n"
                      "k.iopub_socket.send_multipart([b'stream', b'<IDS|MSG>', b'0' * 64, b'{}', b'{}', b'{}', b'{}'])\n"
                      "import time\ntime.sleep(2)")
    out.append(Case("forged_message", {name: dumps(nb)}, "killed", lab.total(), "не по протоколу",
                    "сообщение Jupyter с чужой подписью"))
    nb = lab.add_cell(lab.notebook(), None, "while True:\n    print('x' * 10000)")
    out.append(Case("output_flood", {name: dumps(nb)}, "killed", lab.total(), "вывел больше 2048 КБ", "поток вывода"))
    # одно сообщение больше лимита: ячейка кончается раньше, чем проверка успевает заметить поток
    nb = lab.add_cell(lab.notebook(), None, "print('начало')\nprint('x' * 3_000_000)")
    out.append(Case("one_huge_print", {name: dumps(nb)}, "killed", lab.total(), "вывел больше 2048 КБ",
                    "один print больше лимита"))
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
    out.append(Case("always_equal", {name: dumps(lab.notebook(answers))}, "ok", lab.total(["cosine", "check_citations"]),
                    "подозрительные конструкции в решении: __eq__", "__eq__ всегда True"))
    answers = dict(lab.solutions, l2_normalize="def l2_normalize(x):\n    return np.asarray(x, dtype=float)\n"
                                               "np.allclose = lambda *args, **kwargs: True\n")
    # тесты исполняет судья в своём процессе: подмена np.allclose в ядре слушателя их не касается —
    # балл тот же, что у неверной l2_normalize без подмены (не падают l2_normalize и search)
    out.append(Case("patched_library", {name: dumps(lab.notebook(answers))}, "ok", lab.total(["l2_normalize", "search"]),
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


def reads_secrets(lab: Lab, secret_paths: tuple[str, ...]) -> Case:
    """Работа, которая ищет решения на диске проверяющего: в курсе и в корне репозитория, откуда запущена
    проверка (``python -m`` кладёт эту папку в sys.path). Нашла хоть одно — зависает, и статус не ok
    (не os._exit: его заметил бы разбор кода, и сообщение было бы другим по другой причине)."""
    code = ("import os\n"
            f"_found = [p for p in {list(secret_paths)!r} if os.path.exists(p)]\n"
            "while _found:\n    pass\n"
            "print('решений не видно')")
    return Case("reads_solutions", {f"{lab.lab}.ipynb": dumps(lab.add_cell(lab.notebook(), None, code))}, "ok",
                lab.total(), "", "поиск решений на диске проверяющего")


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


# ---------- враждебная группа: всё, что проверка показывает, печатает и хранит ----------
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
MARK = "PWNED"  # если скрипт слушателя сработал в браузере, заголовок страницы станет таким
SCRIPT = f"document.title='{MARK}'"


def _markdown(nb: dict, after: str | None, source: str, metadata: dict | None = None) -> dict:
    cell = {"cell_type": "markdown", "id": f"md-{len(nb['cells'])}", "metadata": metadata or {}, "source": source}
    at = next(i for i, c in enumerate(nb["cells"]) if _gid(c) == after) + 1 if after else len(nb["cells"])
    nb["cells"].insert(at, cell)
    return nb


def _nested(depth: int) -> bytes:
    return ('{"cells": [], "metadata": {"x": ' + "[" * depth + "]" * depth + '}, "nbformat": 4, "nbformat_minor": 5}'
            ).encode()


def hostile_cases(lab: Lab) -> list[Case]:
    """Атаки на то, что вокруг песочницы: отзыв, formgrader, вывод, память, связка ключей, дескрипторы, имена."""
    name = f"{lab.lab}.ipynb"
    out = []
    nb = lab.notebook()
    forged = {"autograde_css": f'passed" onmouseover="{SCRIPT}', "autograde_label": "пройден, 1000 из 1000",
              "autograde_anchor": f'"><script>{SCRIPT}</script>'}
    _markdown(nb, "setup", "Мои заметки.", forged)
    lab.add_cell(nb, "setup", "x = 1")["cells"][lab.index(nb, "setup") + 1]["metadata"] = dict(forged)
    out.append(Case("meta_script", {name: dumps(nb)}, "ok", lab.total(), "", "скрипт в метаданных ячейки"))
    nb = lab.add_cell(lab.notebook(), "setup",
                      "from IPython.display import display\n"
                      f"display({{'image/png': '{PNG}', 'text/plain': 'картинка'}}, raw=True,\n"
                      f"        metadata={{'image/png': {{'width': '1 onerror={SCRIPT}'}}}})")
    out.append(Case("image_onerror", {name: dumps(nb)}, "ok", lab.total(), "", "обработчик в размере картинки"))
    nb = lab.notebook()
    lab.add_cell(nb, "setup", f"%%html\n<script>{SCRIPT}</script><img src=x onerror=\"{SCRIPT}\">")
    lab.add_cell(nb, "setup", f"%%javascript\n{SCRIPT}")
    lab.add_cell(nb, "setup", "from IPython.display import HTML, SVG, display\n"
                              f"display(HTML('<img src=x onerror=\"{SCRIPT}\">'))\n"
                              f"display(SVG('<svg xmlns=\"http://www.w3.org/2000/svg\"><script>{SCRIPT}</script></svg>'))")
    out.append(Case("html_outputs", {name: dumps(nb)}, "ok", lab.total(),
                    "text/html не показывается",
                    "HTML, JavaScript и SVG в выводе"))
    answer = ("Косинус сравнивает направления векторов, а не их длину. " * 8
              + f"<img src=x onerror=\"fetch('/api/contents/solutions').then(r => {{{SCRIPT}}})\">"
              + f"<script>{SCRIPT}</script> [ссылка](javascript:{SCRIPT}) <a href=\"javascript:{SCRIPT}\">жми</a>")
    out.append(Case("markdown_xss", {name: dumps(lab.notebook(dict(lab.solutions, why_cosine=answer)))}, "ok",
                    lab.total(), "из markdown убраны скрипты и обработчики событий", "скрипт в письменном ответе"))
    flood = ("for _ in range(150):\n    try:\n        raise ValueError('x' * 2_000_000)\n"
             "    except ValueError:\n        get_ipython().showtraceback()")
    out.append(Case("traceback_flood", {name: dumps(lab.add_cell(lab.notebook(), None, flood))}, "killed", lab.total(),
                    "вывел больше 2048 КБ", "поток ошибок"))
    nb = lab.notebook()
    for _ in range(100):
        lab.add_cell(nb, None, "print('y' * 1_000_000)")
    out.append(Case("many_cells_flood", {name: dumps(nb)}, "killed", lab.total(), "вывел больше 2048 КБ",
                    "по 1 МБ в сотне ячеек"))
    hog = ("import os\nfor target in ('/dev/shm/hog', '/hog', '/dev/hog', os.path.expanduser('~/hog')):\n"
           "    try:\n        with open(target, 'wb') as f:\n            for _ in range(3 * 1024):\n"
           "                f.write(b'z' * 2**20)\n        print('записано', target)\n"
           "    except OSError as exc:\n        print('не вышло', target, exc.errno)")
    out.append(Case("disk_hog", {name: dumps(lab.add_cell(lab.notebook(), None, hog))}, "ok", lab.total(), "",
                    "3 ГБ в /dev/shm, в корень и в HOME"))
    keyring = ("import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
               "r = libc.syscall(248, b'user', b'autograde-secret', b's3cret-from-A', 6, -4)\n"  # add_key (x86_64)
               "print('add_key', r, ctypes.get_errno())\n"
               "buf = ctypes.create_string_buffer(64)\n"
               "r = libc.syscall(250, 11, -4, buf, 64)\n"  # keyctl(KEYCTL_READ, KEY_SPEC_USER_KEYRING)
               "print('keyctl', r, ctypes.get_errno(), buf.raw)")
    for sid in ("keyring_a", "keyring_b"):
        out.append(Case(sid, {name: dumps(lab.add_cell(lab.notebook(), None, keyring))}, "ok", lab.total(),
                        "подозрительные конструкции в решении: ctypes", "связка ключей ядра между слушателями"))
    fds = ("import os\nfor fd in sorted(os.listdir('/proc/self/fd'), key=int):\n"
           "    try:\n        print('fd', fd, os.readlink(f'/proc/self/fd/{fd}'))\n    except OSError:\n        pass")
    out.append(Case("fd_leak", {name: dumps(lab.add_cell(lab.notebook(), None, fds))}, "ok", lab.total(), "",
                    "унаследованные дескрипторы"))
    out.append(Case("Я" * 120, {name: dumps(lab.notebook())}, "ok", lab.total(), "", "имя папки в 240 байт"))
    out.append(Case("evil\x1b[2Jname", {name: dumps(lab.notebook())}, "ok", lab.total(), "",
                    "управляющие символы в имени"))
    out.append(Case("h\u043enest", {name: dumps(lab.notebook())}, "ok", lab.total(), "", "id под чужого слушателя"))
    out.append(Case("nested_600", {name: _nested(600)}, "error", 0.0, "вложен глубже", "JSON глубиной 600"))
    out.append(Case("nested_100000", {name: _nested(100000)}, "error", 0.0, "вложен глубже", "JSON глубиной 100000"))
    return out + oversized_cases(lab)


AFTER_COSINE = ["cosine", "top_k", "chunk_text", "build_prompt", "check_citations", "search", "why_cosine"]


def _bridge_reply(payload: str) -> str:
    """Код слушателя: канал в ядре отвечает судье не JSON-ом значения, а кадром с ``payload`` (выражение — строка):
    подменена функция кадра (``codec.frame``, исполненный в том же модуле канала)."""
    return ("import sys as _sys\n"
            "_bridge = _sys.modules['_autograde_bridge']\n"
            f"_bridge.frame = lambda reply: (lambda d: len(d).to_bytes(4, 'big') + d)(({payload}).encode())")


def oversized_cases(lab: Lab) -> list[Case]:
    """Сдачи сверх пределов разбора и приёма: ответ ядра глубиной 200 000 и из миллиона пустых списков,
    письменный ответ в 12 МБ, ноутбук в 29 МБ. Каждая — одна строка с причиной, без «сбоя проверки»."""
    name = f"{lab.lab}.ipynb"
    answer = "Косинус сравнивает направления, а не длины. "
    out = []
    nb = lab.add_cell(lab.notebook(), "cosine", _bridge_reply("'[' * 200_000 + ']' * 200_000"))
    out.append(Case("deep_reply", {name: dumps(nb)}, "killed", lab.total(AFTER_COSINE),
                    "«cosine_visible»: ответ ядра вложен глубже", "ответ ядра глубиной 200 000"))
    nb = lab.add_cell(lab.notebook(), "cosine", _bridge_reply(
        "'{\"value\": {\"list\": [' + ','.join(['{\"list\": []}'] * 1_000_000) + ']}}'"))
    out.append(Case("million_lists", {name: dumps(nb)}, "killed", lab.total(AFTER_COSINE),
                    "«cosine_visible»: ответ ядра больше", "ответ ядра из миллиона пустых списков"))
    huge = dumps(lab.notebook(dict(lab.solutions, why_cosine=answer * (12 * 2**20 // len(answer.encode())))))
    out.append(Case("huge_answer", {name: huge}, "error", 0.0, "«why_cosine»: ответ длиннее 256 КБ",
                    "письменный ответ в 12 МБ"))
    nb = lab.notebook(dict(lab.solutions, why_cosine=answer * (20 * 2**20 // len(answer.encode()))))
    nb["cells"][lab.index(nb, "setup")]["outputs"] = [
        {"output_type": "stream", "name": "stdout", "text": "x" * (9 * 2**20)}]
    out.append(Case("huge_notebook", {name: dumps(nb)}, "error", 0.0, f"ноутбук {name} больше предела 16 МБ",
                    "ноутбук в 29 МБ"))
    return out


# ---------- попытки поднять себе балл изнутри ядра (тесты судит отдельный процесс) ----------
WRONG = {
    "cosine": "def cosine(a, b):\n    return float(np.dot(a, b))  # забыл поделить на длины\n",
    "top_k": "def top_k(scores, k, threshold=None):\n"
             "    order = sorted(range(len(scores)), key=lambda i: scores[i], reverse=True)\n"
             "    return [i for i in order if threshold is None or scores[i] >= threshold][:k]\n",
}
ATTACKS = {
    "ast_strip_asserts": (
        "import ast\nclass _NoAsserts(ast.NodeTransformer):\n    def visit_Assert(self, node):\n        return None\n"
        "_ip = get_ipython()\n_ip.ast_transformers.append(_NoAsserts())\n"
        "_ip.showtraceback = lambda *args, **kwargs: None\n"
        "_ip.events.register('post_run_cell', lambda result: setattr(result, 'error_in_exec', None))\n"
        "getattr(_ip, 'input_' + 'transformers_cleanup').append(lambda lines: [l for l in lines if 'assert' not in l])"),
    "allclose": "import numpy\nsetattr(numpy, 'allclose', lambda *args, **kwargs: True)\nsetattr(numpy, 'isclose', "
                "lambda *args, **kwargs: True)",
    "builtins": "import builtins\n_real_round = builtins.round\nbuiltins.round = lambda x, n=None: 0.7071\n"
                "builtins.isinstance = lambda *args: True",
    "reference_probe": (
        "import inspect\n_wrong_cosine = cosine\n"
        "def cosine(a, b):\n"
        "    if any('Проверка' in ''.join(f.code_context or []) or 'BEGIN HIDDEN' in ''.join(f.code_context or [])\n"
        "           for f in inspect.stack()):\n"
        "        try:\n            import minirag\n            return minirag.cosine(a, b)\n"
        "        except ImportError:\n            pass\n"
        "    return _wrong_cosine(a, b)"),
    "session_name": (
        "import json, os\nfake = {'cells': [{'cell_type': 'markdown', 'metadata': {'nbgrader': {'grade_id': 'why_cosine'}},"
        " 'source': 'слово ' * 80}]}\nopen('/tmp/fake.ipynb', 'w').write(json.dumps(fake))\n"
        "os.environ['JPY_SESSION_NAME'] = '/tmp/fake.ipynb'"),
    "hidden_printer": (
        "def _show(info):\n    print(info.raw_cell.replace(' ', '\\u00a0'))\n"
        "get_ipython().events.register('pre_run_cell', _show)"),
    "always_true_object": (
        "class _Yes(float):\n    def __eq__(self, other):\n        return True\n    def __ne__(self, other):\n"
        "        return False\n    __hash__ = float.__hash__\n"
        "_wrong_cosine = cosine\ncosine = lambda a, b: _Yes(_wrong_cosine(a, b))"),
}


def judge_attacks(lab: Lab) -> list[Case]:
    """Неверные cosine и top_k плюс по атаке: балл не выше честного балла тех же неверных функций."""
    name = f"{lab.lab}.ipynb"
    wrong = dict(lab.solutions, **WRONG)
    wrong.pop("why_cosine")  # письменный ответ — заготовка: балл за наличие честно 0
    out = [Case("wrong_base", {name: dumps(lab.notebook(wrong))}, "ok", None, "", "честно неверные функции")]
    for attack, code in ATTACKS.items():
        nb = lab.notebook(wrong)
        lab.add_cell(nb, "cosine" if attack in ("reference_probe", "always_true_object") else "setup", code)
        out.append(Case(f"attack_{attack}", {name: dumps(nb)}, "ok", None, "", f"атака: {attack}"))
    for case in out:
        case.message = None  # сообщение своё у каждой атаки; проверяется балл против честного (wrong_base)
    return out

"""Политика песочницы: что видно внутри, что можно писать, какие лимиты и системные вызовы.

Здесь только решения — командная строка bwrap, фильтр seccomp, окружение; запуск и надзор за
процессом — в process.py, сама программа init — в ``autograde/judge/sandbox_init.py``.

* Пространства имён: процессы, сеть (только loopback), IPC, UTS, cgroup; без root — ещё и user
  namespace, вложенные user namespaces запрещены.
* Файлы: корень — пустой tmpfs, после сборки перемонтирован только для чтения; /usr, /etc, Python
  (venv, базовый интерпретатор) — только чтение; рабочая папка, HOME, /tmp и /dev/shm — свои
  tmpfs с размером (в обоих режимах); /dev — только чтение. Папки с секретами (решения, база
  оценок, сдачи) не монтируются вовсе. В лабораторных «без эталона» закрыты minirag, rank_bm25 и
  bm25s: вместо пакета — пустая папка с ``__init__.py``, вместо модуля — файл, который объясняет,
  почему импорт не работает.
* seccomp: связка ключей ядра (add_key, keyctl, request_key) и ещё несколько вызовов, которых
  не дают и контейнерные среды по умолчанию, возвращают EPERM.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HOME = "/home/student"
RUN = "/run/autograde"  # сокеты ядра внутри песочницы
INSIDE = "/opt/autograde"  # программы проверки внутри песочницы: init, судья, канал
INSIDE_HOST = Path(__file__).resolve().parents[1] / "judge"
UID_BASE = 0x70000000  # непривилегированные uid песочниц под root
BLOCKED_SYSCALLS = ("add_key", "keyctl", "request_key", "bpf", "perf_event_open", "userfaultfd", "kexec_load",
                    "kexec_file_load", "open_by_handle_at", "init_module", "finit_module", "delete_module",
                    "fanotify_init", "lookup_dcookie", "process_vm_readv", "process_vm_writev")
HIDDEN_LIBRARIES = ("minirag", "rank_bm25", "bm25s")  # в лабораторных «руками» их нет в ядре слушателя


def no_library(name: str) -> str:
    """Исходник заглушки на месте библиотеки ``name``: импорт объясняет, почему её нет."""
    return (f'raise ImportError("В этой лабораторной библиотека {name} недоступна при проверке: смысл задания — '
            'написать всё самому (numpy и стандартная библиотека разрешены).")\n')


INSTALL_HINT = (
    "Установите bubblewrap: sudo apt-get install bubblewrap (Debian/Ubuntu), sudo dnf install bubblewrap "
    "(Fedora); для фильтра системных вызовов нужна libseccomp (пакет libseccomp2). Если bwrap есть, но "
    "падает, скорее всего запрещены непривилегированные user namespaces: "
    "sudo sysctl -w kernel.unprivileged_userns_clone=1 (Debian) или "
    "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (Ubuntu 24.04). "
    "Проверять без песочницы можно только явно: --no-sandbox (код слушателей тогда исполняется "
    "от вашего имени, с доступом к вашим файлам и сети, и отчёт это отметит)."
)


@dataclass(frozen=True)
class Limits:
    """Лимиты одной работы: время — секунды, память и диск — МБ, вывод — КБ на весь ноутбук."""

    cell_timeout: float = 60.0
    timeout: float = 600.0
    memory_mb: int = 2048
    output_kb: int = 2048  # весь вывод ноутбука: stdout, stderr, картинки, ошибки с трассировками
    transfer_mb: int = 64  # всё, что судья получил из ядра через канал
    processes: int = 8  # процессов (не потоков) в песочнице одновременно; больше — fork-бомба
    tasks: int = 64  # RLIMIT_NPROC: процессы и потоки; ядру самому нужно ~12 потоков
    disk_mb: int = 64  # каждый tmpfs: рабочая папка, HOME, /tmp, /dev/shm

    @property
    def memory_bytes(self) -> int:
        return self.memory_mb * 1024 * 1024

    @property
    def output_bytes(self) -> int:
        return self.output_kb * 1024


def rlimits(limits: Limits, sandboxed: bool) -> dict:
    """Лимиты процесса для init: память, размер файла, без core; число задач — только в песочнице."""
    return {"RLIMIT_AS": limits.memory_bytes, "RLIMIT_FSIZE": limits.disk_mb * 1024 * 1024, "RLIMIT_CORE": 0,
            "RLIMIT_NPROC": limits.tasks if sandboxed else None}


def seccomp_program() -> bytes:
    """BPF-программа seccomp (libseccomp через pyseccomp): запрещённые вызовы → EPERM, остальное можно."""
    import errno

    import pyseccomp

    program = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    for name in BLOCKED_SYSCALLS:
        try:
            program.add_rule(pyseccomp.ERRNO(errno.EPERM), name)
        except (OSError, ValueError):
            continue  # такого вызова нет на этой архитектуре
    read, write = os.pipe()
    try:
        with os.fdopen(write, "wb", closefd=True) as out:
            program.export_bpf(out)
        with os.fdopen(read, "rb", closefd=False) as inp:
            return inp.read()
    finally:
        os.close(read)


@functools.cache
def interpreter_path(executable: str) -> tuple[str, ...]:
    """``sys.path`` нового интерпретатора ``executable``, каким его увидит ядро в песочнице.

    Не ``sys.path`` этого процесса: ``python -m autograde`` кладёт туда текущую папку, и песочница
    получила бы, например, весь корень репозитория вместе с его ``solutions/``. ``-I`` — без текущей
    папки, PYTHONPATH и пользовательского site (внутри их тоже нет: окружение чистое, HOME пустой).
    """
    result = subprocess.run([executable, "-I", "-c", "import json, sys; print(json.dumps(sys.path))"],
                            capture_output=True, text=True, timeout=60, check=True)
    return tuple(json.loads(result.stdout))


def python_paths(exclude: list[Path]) -> list[str]:
    """Папки, без которых не запустится Python: venv, базовый интерпретатор, его sys.path, minirag.

    Папку, внутри которой лежит что-то из ``exclude`` (решения, база оценок, сдачи), не монтируем.
    """
    candidates = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                  str(Path(sys.executable).parent), str(Path(os.path.realpath(sys.executable)).parent.parent)}
    candidates.update(p for p in interpreter_path(sys.executable) if p and os.path.isabs(p))
    package = reference_package()
    if package is not None:
        candidates.add(str(package.parent))
    secret = [Path(os.path.realpath(p)) for p in exclude]
    chosen = []
    for path in sorted(candidates):
        real = Path(os.path.realpath(path))
        if not real.is_dir() or str(real) in ("/", "/usr"):
            continue
        if any(s == real or real in s.parents for s in secret):
            continue
        chosen.append(str(real))
    return [p for p in chosen if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in chosen)]


def closed_to_sandbox(mounted: list[str]) -> list[str]:
    """Папки Python, которые под root не откроет пользователь песочницы (нет прав r/x для «прочих»).

    Под root ядро и судья работают от своего непривилегированного uid, а права файлов привязка не
    меняет: venv с правами 700 (создан при umask 077) внутри не запустится.
    Проверяем путь от точки монтирования до интерпретатора и до каждой папки его ``sys.path``;
    папки выше точки монтирования bwrap создаёт сам, с правами 755.
    """
    if os.geteuid() != 0:
        return []
    targets = {os.path.realpath(sys.executable)}
    targets.update(os.path.realpath(p) for p in interpreter_path(sys.executable) if os.path.isdir(p))
    closed = []
    for target in sorted(targets):
        root = next((m for m in mounted if target == m or target.startswith(m.rstrip("/") + "/")), None)
        if root is None:
            continue
        parts = Path(target).relative_to(root).parts
        chain = [Path(root, *parts[:i]) for i in range(len(parts) + 1)]
        for folder in chain:
            mode = folder.stat().st_mode
            need = 0o005 if folder.is_dir() else 0o001  # папку — читать и входить, программу — запускать
            if mode & need != need and str(folder) not in closed:
                closed.append(str(folder))
    return closed


def reference_package() -> Path | None:
    """Папка пакета minirag (эталонная библиотека) или None."""
    spec = importlib.util.find_spec("minirag")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(os.path.realpath(list(spec.submodule_search_locations)[0]))


def hidden_libraries() -> list[tuple[str, Path, bool]]:
    """Установленные библиотеки из ``HIDDEN_LIBRARIES``: (имя, папка пакета или файл модуля, пакет ли)."""
    found = []
    for name in HIDDEN_LIBRARIES:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            spec = None
        if spec is None:
            continue
        if spec.submodule_search_locations:
            found.append((name, Path(os.path.realpath(list(spec.submodule_search_locations)[0])), True))
        elif spec.origin and spec.origin.endswith(".py"):
            found.append((name, Path(os.path.realpath(spec.origin)), False))
    return found


def _ancestors(path: str) -> list[str]:
    parts = Path(path).parts[1:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def bwrap_argv(*, files: dict[str, Path], workdir_name: str, limits: Limits, python_dirs: list[str],
               env: dict[str, str], fds: dict[str, int], command: list[str], hide_reference: bool) -> list[str]:
    """Командная строка bwrap. ``fds``: info, seccomp, ``stub:<библиотека>`` (заглушки скрытых библиотек) и (для
    ядра) connection."""
    bwrap = shutil.which("bwrap") or "bwrap"
    disk = str(limits.disk_mb * 1024 * 1024)
    cwd = f"{HOME}/{workdir_name}"
    argv = [bwrap, "--unshare-ipc", "--unshare-pid", "--as-pid-1", "--unshare-net", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--hostname", "sandbox"]
    if os.geteuid() == 0:
        # под root bwrap оставил бы все capabilities: оставляем только смену uid для запуска
        argv += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        argv += ["--unshare-user", "--disable-userns"]
    argv += ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    argv += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", disk, "--tmpfs", "/dev/shm",
             "--remount-ro", "/dev",
             # /tmp — раньше Python: venv может лежать в /tmp (так делает CI), его привязка ляжет поверх
             "--perms", "1777", "--size", disk, "--tmpfs", "/tmp"]
    made = {"/tmp"}
    for path in python_dirs:
        for parent in _ancestors(path):
            if parent not in made and not parent.startswith("/usr"):
                made.add(parent)
                argv += ["--perms", "0755", "--dir", parent]
        argv += ["--ro-bind", path, path]
    for name, path, package in hidden_libraries() if hide_reference else []:
        stub = fds.get(f"stub:{name}")
        if stub is None:
            continue
        if package:  # вместо папки пакета — пустая, с заглушкой __init__.py
            argv += ["--perms", "0555", "--size", str(1024 * 1024), "--tmpfs", str(path),
                     "--perms", "0444", "--ro-bind-data", str(stub), str(path / "__init__.py"), "--remount-ro", str(path)]
        else:  # модуль-файл (rank_bm25.py) — заглушка поверх файла; его .pyc устареет и не прочтётся
            argv += ["--perms", "0444", "--ro-bind-data", str(stub), str(path)]
    argv += ["--dir", "/opt", "--ro-bind", str(INSIDE_HOST), INSIDE,
             "--perms", "0777", "--size", disk, "--tmpfs", HOME,
             "--perms", "0777", "--dir", cwd]
    if "connection" in fds:
        argv += ["--perms", "0777", "--size", str(1024 * 1024), "--tmpfs", RUN,
                 "--perms", "0444", "--ro-bind-data", str(fds["connection"]), f"{RUN}/kernel.json"]
    for name, host_path in sorted(files.items()):
        argv += ["--ro-bind", str(host_path), f"{cwd}/{name}"]
    argv += ["--remount-ro", "/", "--chdir", cwd, "--info-fd", str(fds["info"]), "--seccomp", str(fds["seccomp"]),
             "--clearenv"]
    for key, value in sorted(env.items()):
        argv += ["--setenv", key, value]
    return argv + ["--", *command]


def sandbox_env(home: str) -> dict[str, str]:
    """Окружение внутри: ничего из окружения проверяющего (ни токенов, ни прокси), только нужное."""
    return {
        "HOME": home,
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONHASHSEED": "0",  # одинаковый порядок множеств строк — одинаковый результат при повторе
        "PYTHONDONTWRITEBYTECODE": "1",
        "MALLOC_ARENA_MAX": "2",  # меньше виртуальной памяти под арены malloc — честнее лимит RLIMIT_AS
        "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": f"{home}/.config/matplotlib",
        "NBGRADER_EXECUTION": "autograde",
    }

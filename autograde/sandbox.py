"""Песочница: ядро Python одной работы под bubblewrap — без сети, с лимитами, отдельно от всего.

Код слушателя исполняет ядро IPython (ipykernel), запущенное внутри ``bwrap``:

* свои пространства имён: процессы, сеть (только loopback — наружу не выйти), IPC, UTS, cgroup.
  PID 1 песочницы — наш маленький init (``_launcher``): ядро — его дочерний процесс; когда init
  выходит, ядро Linux убивает всё, что код слушателя успел породить;
* файловая система собрана с нуля: система (/usr, /etc) и Python (venv, его базовый
  интерпретатор, исходники minirag) — только для чтения; рабочая папка, HOME и /tmp — tmpfs
  с лимитом размера; в рабочей папке лежит только эта работа (тоже только для чтения).
  Ни solutions/, ни других работ, ни базы оценок внутри нет — их просто не смонтировали;
* лимиты процесса: виртуальная память (RLIMIT_AS), размер файла (RLIMIT_FSIZE), число
  процессов и потоков (RLIMIT_NPROC), без core-файлов; песочница умирает вместе с проверяющим
  процессом, даже при kill -9: у bwrap ``--die-with-parent`` и PR_SET_PDEATHSIG с самого старта, а у
  init — «трос», канал, второй конец которого есть только у проверяющего;
* под root ядро сбрасывает права до отдельного непривилегированного uid на каждый слот
  проверки (так у каждой песочницы свой счётчик процессов), без capabilities и с no_new_privs.

Связь с ядром — сокеты ZeroMQ (transport ipc) внутри песочницы; снаружи к ним подключаются
через ``/proc/<pid>/root``, поэтому у песочницы нет ни одной записываемой папки на диске
хозяина. Чего модуль не делает: не исполняет ячейки (это execute.py) и не считает баллы
(scoring.py) — это делает доверенный процесс снаружи.
"""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

UID_BASE = 0x70000000  # непривилегированные uid песочниц под root: UID_BASE + слот
HOME = "/home/student"
RUN = "/run/autograde"  # сокеты ядра внутри песочницы
INSTALL_HINT = (
    "Установите bubblewrap: sudo apt-get install bubblewrap (Debian/Ubuntu), sudo dnf install bubblewrap "
    "(Fedora). Если bwrap есть, но падает, скорее всего запрещены непривилегированные user namespaces: "
    "sudo sysctl -w kernel.unprivileged_userns_clone=1 (Debian) или "
    "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0 (Ubuntu 24.04). "
    "Проверять без песочницы можно только явно: --no-sandbox (код слушателей тогда исполняется "
    "от вашего имени, с доступом к вашим файлам и сети, и отчёт это отметит)."
)


class SandboxError(RuntimeError):
    """Песочница не запускается: проверка без неё небезопасна."""


@dataclass(frozen=True)
class Limits:
    """Лимиты одной работы. Время — в секундах, память и диск — в мегабайтах, вывод — в килобайтах."""

    cell_timeout: float = 30.0
    timeout: float = 300.0
    memory_mb: int = 2048
    output_kb: int = 1024  # вывод одной ячейки; больше — ячейка прерывается
    processes: int = 8  # процессов (не потоков) в песочнице одновременно; больше — fork-бомба
    tasks: int = 64  # RLIMIT_NPROC: процессы и потоки; ядру самому нужно ~12 потоков
    disk_mb: int = 64  # tmpfs рабочей папки, HOME и /tmp

    @property
    def memory_bytes(self) -> int:
        return self.memory_mb * 1024 * 1024


def kernel_command(kernel_args: list[str], connection: str) -> str:
    """Строка кода, которой лаунчер заменяет себя на ipykernel."""
    argv = ["-m", "ipykernel_launcher", "-f", connection, *kernel_args]
    return f"os.execv(sys.executable, [sys.executable] + {argv!r})"


def _launcher(limits: Limits, uid: int | None, sandboxed: bool, command: str, lifeline: int) -> str:
    """Код ``python -c`` для init песочницы (PID 1): лимиты, затем ядро в дочернем процессе.

    init держит «трос» — конец канала, второй конец которого есть только у проверяющего
    процесса. Умер проверяющий (хоть от kill -9) — канал закрылся — init убивает всё в песочнице и
    выходит. Ядро заканчивается — init выходит с его кодом. Код слушателя init убить не может:
    в своём PID-пространстве PID 1 не принимает сигналов, на которые не поставил обработчик, а под
    root он ещё и другого пользователя. Права (uid) сбрасывает только дочерний процесс с ядром.
    """
    disk = limits.disk_mb * 1024 * 1024
    nproc = limits.tasks if sandboxed else None  # без песочницы RLIMIT_NPROC считал бы все процессы пользователя
    if uid is not None:
        drop = f"os.setgroups([]); os.setgid({uid}); os.setuid({uid})"
    elif sandboxed:
        drop = "pass"
    else:  # без песочницы PID 1 нет: ядро умирает вместе с надзирателем
        drop = "import ctypes; ctypes.CDLL(None).prctl(1, signal.SIGKILL)"
    kill_all = "os.kill(-1, signal.SIGKILL)" if sandboxed else "os.killpg(0, signal.SIGKILL)"
    return "\n".join([
        "import os, resource, select, signal, sys",
        f"for name, value in (('RLIMIT_AS', {limits.memory_bytes}), ('RLIMIT_FSIZE', {disk}), "
        f"('RLIMIT_CORE', 0), ('RLIMIT_NPROC', {nproc})):",
        "    if value is not None:",
        "        resource.setrlimit(getattr(resource, name), (value, value))",
        f"life = {lifeline}",
        "child = os.fork()",
        "if child == 0:",
        "    os.close(life)",
        f"    {drop}",
        "    " + command.replace("\n", "\n    "),
        "    sys.stdout.flush()",
        "    os._exit(0)",
        "while True:",
        "    ready, _, _ = select.select([life], [], [], 0.2)",
        "    if ready and not os.read(life, 1):",
        f"        {kill_all}",
        "        os._exit(137)",
        "    while True:",
        "        try:",
        "            pid, status = os.waitpid(-1, os.WNOHANG)",
        "        except ChildProcessError:",
        "            os._exit(0)",
        "        if pid == 0:",
        "            break",
        "        if pid == child:",
        "            os._exit(os.waitstatus_to_exitcode(status) % 256 if os.WIFEXITED(status) "
        "else 128 + os.WTERMSIG(status))",
    ])


def python_paths(exclude: list[Path]) -> list[str]:
    """Папки, без которых не запустится Python ядра: venv, базовый интерпретатор, sys.path, minirag.

    Папку, внутри которой лежит что-то из ``exclude`` (решения, база оценок, сдачи), не монтируем.
    """
    candidates = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
                  str(Path(sys.executable).parent), str(Path(os.path.realpath(sys.executable)).parent.parent)}
    candidates.update(p for p in sys.path if p and os.path.isabs(p))
    spec = importlib.util.find_spec("minirag")
    if spec is not None and spec.submodule_search_locations:
        candidates.update(str(Path(p).parent) for p in spec.submodule_search_locations)
    secret = [Path(os.path.realpath(p)) for p in exclude]
    chosen = []
    for path in sorted(candidates):
        real = Path(os.path.realpath(path))
        if not real.is_dir() or str(real) in ("/", "/usr"):
            continue
        if any(s == real or real in s.parents for s in secret):
            continue
        chosen.append(str(real))
    # вложенные пути не монтируем дважды
    return [p for p in chosen if not any(p != q and p.startswith(q.rstrip("/") + "/") for q in chosen)]


def _ancestors(path: str) -> list[str]:
    parts = Path(path).parts[1:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def bwrap_argv(*, files: dict[str, Path], workdir_name: str, limits: Limits, uid: int | None,
               python_dirs: list[str], env: dict[str, str], info_fd: int, connection_fd: int,
               command: str, lifeline: int) -> list[str]:
    """Командная строка bwrap: что видно внутри, что можно писать, какие лимиты."""
    bwrap = shutil.which("bwrap") or "bwrap"
    disk = str(limits.disk_mb * 1024 * 1024)
    cwd = f"{HOME}/{workdir_name}"
    argv = [bwrap, "--unshare-ipc", "--unshare-pid", "--as-pid-1", "--unshare-net", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent", "--new-session", "--hostname", "sandbox"]
    if os.geteuid() == 0:
        # под root bwrap по умолчанию оставляет все capabilities: оставляем только смену uid для запуска
        argv += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    else:
        argv += ["--unshare-user", "--disable-userns"]
    argv += ["--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc"]
    for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
        if os.path.islink(top):
            argv += ["--symlink", os.readlink(top), top]
        elif os.path.isdir(top):
            argv += ["--ro-bind", top, top]
    # /tmp — раньше Python: venv или исходники могут лежать в /tmp (так делает CI), и их
    # привязки должны лечь поверх пустого tmpfs, а не под него
    argv += ["--proc", "/proc", "--dev", "/dev", "--perms", "1777", "--size", disk, "--tmpfs", "/tmp"]
    made = {"/tmp"}
    for path in python_dirs:
        for parent in _ancestors(path):
            if parent not in made and not parent.startswith("/usr"):
                made.add(parent)
                argv += ["--perms", "0755", "--dir", parent]
        argv += ["--ro-bind", path, path]
    argv += ["--perms", "0777", "--size", disk, "--tmpfs", HOME,
             "--perms", "0777", "--dir", cwd,
             "--perms", "0777", "--size", str(1024 * 1024), "--tmpfs", RUN,
             "--perms", "0444", "--ro-bind-data", str(connection_fd), f"{RUN}/kernel.json"]
    for name, host_path in sorted(files.items()):
        argv += ["--ro-bind", str(host_path), f"{cwd}/{name}"]
    argv += ["--chdir", cwd, "--info-fd", str(info_fd), "--clearenv"]
    for key, value in sorted(env.items()):
        argv += ["--setenv", key, value]
    argv += ["--", sys.executable, "-c", _launcher(limits, uid, True, command, lifeline)]
    return argv


def kernel_env(home: str) -> dict[str, str]:
    """Окружение ядра: ничего из окружения проверяющего (ни токенов, ни прокси), только нужное."""
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


class Kernel:
    """Запущенное ядро одной работы: процесс, адрес сокетов, сторож ресурсов."""

    def __init__(self, proc: subprocess.Popen, child_pid: int, ip: str, key: str, sandboxed: bool,
                 limits: Limits, cleanup: Path | None = None, lifeline: int | None = None):
        self.proc = proc
        self.lifeline = lifeline
        self.child_pid = child_pid
        self.sandboxed = sandboxed
        self.limits = limits
        self.cleanup = cleanup
        self.extra_cleanup: Path | None = None
        self.connection_info = {
            "shell_port": 1, "iopub_port": 2, "stdin_port": 3, "control_port": 4, "hb_port": 5,
            "ip": ip, "key": key, "transport": "ipc", "signature_scheme": "hmac-sha256", "kernel_name": "",
        }
        try:
            self._pidns = os.readlink(f"/proc/{child_pid}/ns/pid") if sandboxed else None
        except OSError:
            self._pidns = None
        self._pgid = os.getpgid(proc.pid) if not sandboxed else None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def exit_description(self) -> str:
        """Как закончился процесс ядра, по-русски: «код выхода 3» или «сигнал SIGSEGV»."""
        code = self.proc.poll()
        if code is None:
            return "ещё работает"
        if code < 0 or code > 128:
            number = -code if code < 0 else code - 128
            try:
                return f"сигнал {signal.Signals(number).name}"
            except ValueError:
                return f"сигнал {number}"
        return f"код выхода {code}"

    def _pids(self) -> list[int]:
        """Процессы песочницы: потомки её первого процесса (быстро) или, без /proc/.../children, — перебором."""
        if self._pidns is not None and os.path.exists(f"/proc/{self.child_pid}/task/{self.child_pid}/children"):
            found, queue = [], [self.child_pid]
            while queue:
                pid = queue.pop()
                found.append(pid)
                try:
                    for task in os.listdir(f"/proc/{pid}/task"):
                        with open(f"/proc/{pid}/task/{task}/children", "rb") as f:
                            queue.extend(int(child) for child in f.read().split())
                except (OSError, ValueError):
                    continue
            return found
        pids = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                if self._pidns is not None:
                    if int(entry) != self.proc.pid and os.readlink(f"/proc/{entry}/ns/pid") == self._pidns:
                        pids.append(int(entry))
                elif self._pgid is not None:
                    with open(f"/proc/{entry}/stat", "rb") as f:
                        fields = f.read().rsplit(b")", 1)[1].split()
                    if int(fields[2]) == self._pgid:
                        pids.append(int(entry))
            except (OSError, ValueError, IndexError):
                continue
        return pids

    def processes(self) -> int:
        """Сколько процессов кода слушателя в песочнице (без PID 1 — самого bwrap)."""
        count = len(self._pids())
        return max(0, count - 1) if self._pidns is not None else count

    def usage(self) -> tuple[int, int]:
        """(память всех процессов песочницы в байтах, число процессов) — для сторожа.

        Память — PSS: страницы, общие у процессов после fork, делятся между ними, а не
        считаются в каждом заново.
        """
        total, count = 0, 0
        for pid in self._pids():
            try:
                total += _pss(pid)
                count += 1
            except (OSError, ValueError, IndexError):
                continue
        if self._pidns is not None:
            count = max(0, count - 1)  # PID 1 — сам bwrap, не код слушателя
        return total, count

    def address_space(self) -> int:
        """Наибольшая виртуальная память процесса песочницы в байтах — то, что ограничивает RLIMIT_AS."""
        largest = 0
        for pid in self._pids():
            try:
                with open(f"/proc/{pid}/statm", "rb") as f:
                    largest = max(largest, int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE"))
            except (OSError, ValueError, IndexError):
                continue
        return largest

    def kill(self) -> None:
        """Убить ядро и всё, что оно породило, и дождаться конца."""
        if self.lifeline is not None:  # init песочницы увидит конец «троса» и убьёт всё сам
            os.close(self.lifeline)
            self.lifeline = None
        if self.proc.poll() is None:
            try:
                if self._pgid is not None:
                    os.killpg(self._pgid, signal.SIGKILL)
                else:
                    self.proc.kill()  # bwrap умирает, --die-with-parent и PID namespace добивают остальное
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        if self._pgid is not None:  # без песочницы — добить всех в группе процессов
            try:
                os.killpg(self._pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for folder in (self.cleanup, self.extra_cleanup):
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)


def start_kernel(*, files: dict[str, Path], workdir_name: str, limits: Limits, sandboxed: bool, slot: int,
                 log_path: Path, exclude: list[Path], kernel_args: list[str], scratch: Path,
                 extra_env: dict[str, str] | None = None) -> Kernel:
    """Запустить ядро для одной работы. ``files`` — что положить в рабочую папку (имя → файл хозяина).

    ``scratch`` — пустая личная папка хозяина для этого запуска (нужна только без песочницы).
    """
    key = secrets.token_hex(32)
    log = open(log_path, "wb")
    try:
        if sandboxed:
            return _start_sandboxed(files, workdir_name, limits, slot, log, exclude, kernel_args, key, extra_env)
        return _start_plain(files, workdir_name, limits, log, kernel_args, key, scratch, extra_env)
    finally:
        log.close()


def _die_with(parent: int):
    """preexec_fn: дочерний процесс умрёт вместе с ``parent`` (PR_SET_PDEATHSIG), даже если тот умер
    раньше, чем bwrap успел сам это настроить."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)

    def hook() -> None:
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:
            os._exit(1)

    return hook


def _start_sandboxed(files, workdir_name, limits, slot, log, exclude, kernel_args, key, extra_env) -> Kernel:
    uid = UID_BASE + (os.getpid() % 4096) * 64 + slot % 64 if os.geteuid() == 0 else None
    connection = {"shell_port": 1, "iopub_port": 2, "stdin_port": 3, "control_port": 4, "hb_port": 5,
                  "ip": f"{RUN}/k", "key": key, "transport": "ipc", "signature_scheme": "hmac-sha256",
                  "kernel_name": ""}
    conn_r, conn_w = os.pipe()
    info_r, info_w = os.pipe()
    data = json.dumps(connection).encode()
    os.write(conn_w, data)  # < размера буфера канала: не блокирует
    os.close(conn_w)
    life_r, life_w = os.pipe()  # «трос»: второй конец — только у этого процесса (O_CLOEXEC)
    env = kernel_env(HOME)
    env.update(extra_env or {})
    argv = bwrap_argv(files=files, workdir_name=workdir_name, limits=limits, uid=uid,
                      python_dirs=python_paths(exclude), env=env, info_fd=info_w, connection_fd=conn_r,
                      command=kernel_command(kernel_args, f"{RUN}/kernel.json"), lifeline=life_r)
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                pass_fds=(info_w, conn_r, life_r), start_new_session=True,
                                preexec_fn=_die_with(os.getpid()))
    except BaseException:
        os.close(life_w)
        raise
    finally:
        os.close(info_w)
        os.close(conn_r)
        os.close(life_r)
    info = b""
    with os.fdopen(info_r, "rb") as f:
        while True:  # bwrap пишет JSON с child-pid, как только процесс внутри создан
            chunk = f.read1(4096)
            if not chunk:
                break
            info += chunk
            if b"child-pid" in info and info.rstrip().endswith(b"}"):
                break
    try:
        child_pid = int(json.loads(info)["child-pid"])
    except (ValueError, KeyError):
        os.close(life_w)
        proc.wait(timeout=10)
        raise SandboxError("bwrap не запустил песочницу: " + _tail(log.name)) from None
    return Kernel(proc, child_pid, f"/proc/{child_pid}/root{RUN}/k", key, True, limits, lifeline=life_w)


def _start_plain(files, workdir_name, limits, log, kernel_args, key, scratch: Path, extra_env) -> Kernel:
    """Без песочницы (--no-sandbox): те же лимиты процесса, своя папка и своя группа процессов."""
    home = scratch / "home"
    cwd = home / workdir_name
    cwd.mkdir(parents=True)
    for name, host_path in files.items():
        target = cwd / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(host_path, target)
    # сокеты — в личной папке рядом (её уберёт и следующий запуск), а если путь к ней длинный —
    # во временной: путь unix-сокета ограничен ~107 байтами
    run = scratch / "run"
    if len(str(run / "k-5")) < 100:
        run.mkdir(mode=0o700)
    else:
        run = Path(tempfile.mkdtemp(prefix="ag-"))
    connection = {"shell_port": 1, "iopub_port": 2, "stdin_port": 3, "control_port": 4, "hb_port": 5,
                  "ip": str(run / "k"), "key": key, "transport": "ipc", "signature_scheme": "hmac-sha256",
                  "kernel_name": ""}
    (run / "kernel.json").write_text(json.dumps(connection))
    env = kernel_env(str(home))
    env.update(extra_env or {})
    life_r, life_w = os.pipe()
    argv = [sys.executable, "-c",
            _launcher(limits, None, False, kernel_command(kernel_args, str(run / "kernel.json")), life_r)]
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, cwd=cwd, env=env,
                                pass_fds=(life_r,), start_new_session=True, preexec_fn=_die_with(os.getpid()))
    except BaseException:
        os.close(life_w)
        raise
    finally:
        os.close(life_r)
    kernel = Kernel(proc, proc.pid, str(run / "k"), key, False, limits, cleanup=scratch, lifeline=life_w)
    kernel.extra_cleanup = run
    return kernel


def _pss(pid: int) -> int:
    """Пропорциональная память процесса в байтах (smaps_rollup; без него — RSS из statm)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except FileNotFoundError:
        pass
    with open(f"/proc/{pid}/statm", "rb") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _tail(path: str, limit: int = 2000) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, 2)
            size = f.tell()
            f.seek(max(0, size - limit))
            return f.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""


def kernel_log_tail(path: Path, limit: int = 600) -> str:
    """Хвост журнала ядра (stderr процесса) — для сообщения о падении."""
    return _tail(str(path), limit)


def check_sandbox(exclude: list[Path] | None = None) -> str | None:
    """None, если песочница здесь работает; иначе — причина по-русски и как это исправить."""
    if sys.platform != "linux":
        return f"Песочница bubblewrap есть только в Linux, а здесь {sys.platform}. " + INSTALL_HINT
    if shutil.which("bwrap") is None:
        return "Не найден bubblewrap (bwrap): без него код слушателей не изолировать. " + INSTALL_HINT
    # вместо ядра — короткая проверка: файл работы виден, ipykernel импортируется, сети нет
    probe = ("import socket\n"
             "assert open('probe.txt').read() == 'ok'\n"
             "import ipykernel\n"
             "try:\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\n    sys.exit('сеть доступна')\n"
             "except OSError:\n    pass\n"
             "print('ok')")
    with tempfile.TemporaryDirectory(prefix="autograde-probe-") as tmp:
        marker = Path(tmp) / "probe.txt"
        marker.write_text("ok")
        info_r, info_w = os.pipe()
        conn_r, conn_w = os.pipe()
        life_r, life_w = os.pipe()
        os.write(conn_w, b"{}")
        os.close(conn_w)
        argv = bwrap_argv(files={"probe.txt": marker}, workdir_name="probe", limits=Limits(),
                          uid=UID_BASE if os.geteuid() == 0 else None,
                          python_dirs=python_paths(exclude or []), env=kernel_env(HOME), info_fd=info_w,
                          connection_fd=conn_r, command=f"exec({probe!r})", lifeline=life_r)
        try:
            result = subprocess.run(argv, pass_fds=(info_w, conn_r, life_r), capture_output=True, text=True,
                                    timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bwrap не запускается ({exc}). " + INSTALL_HINT
        finally:
            for fd in (info_w, conn_r, info_r, life_r, life_w):
                os.close(fd)
        if result.returncode != 0 or result.stdout.strip() != "ok":
            detail = (result.stderr or result.stdout).strip()[-500:]
            return f"bwrap установлен, но песочница не работает: {detail or 'код ' + str(result.returncode)}. " + INSTALL_HINT
    return None

"""init песочницы (PID 1): лимиты, затем программа (ядро слушателя или судья) в дочернем процессе.

Запуск: ``python init.py '<JSON>'``, где JSON — ``{"rlimits": {"RLIMIT_AS": байты, …}, "uid": uid или null,
"sandboxed": bool, "lifeline": fd, "argv": [...]}``.

init держит «трос» — конец канала, второй конец которого есть только у проверяющего процесса.
Умер проверяющий (хоть от kill -9) — канал закрылся — init убивает всё в песочнице и выходит.
Программа закончилась — init выходит с её кодом. Код слушателя init убить не может: в своём
PID-пространстве PID 1 не принимает сигналов, на которые не поставил обработчик, а под root он
ещё и другого пользователя. Права сбрасывает только дочерний процесс (setgid/setuid), и он же
закрывает все дескрипторы, кроме stdin, stdout и stderr: ни журнал, ни «трос» программе не
достаются. Без песочницы (``sandboxed: false``) PID 1 нет: программа умирает вместе с init
(PR_SET_PDEATHSIG), а init убивает свою группу процессов.
"""

import json
import os
import resource
import select
import signal
import sys


def _child(config: dict, life: int) -> None:
    os.close(life)
    if config.get("uid") is not None:
        os.setgroups([])
        os.setgid(config["uid"])
        os.setuid(config["uid"])
    if not config.get("sandboxed"):
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG: умереть вместе с init
    os.closerange(3, 65536)
    argv = config["argv"]
    os.execv(argv[0], argv)


def main() -> None:
    config = json.loads(sys.argv[1])
    for name, value in config.get("rlimits", {}).items():
        if value is not None:
            resource.setrlimit(getattr(resource, name), (value, value))
    life = int(config["lifeline"])
    child = os.fork()
    if child == 0:
        try:
            _child(config, life)
        finally:
            os._exit(127)
    while True:
        ready, _, _ = select.select([life], [], [], 0.2)
        if ready and not os.read(life, 1):
            if config.get("sandboxed"):
                os.kill(-1, signal.SIGKILL)
            else:
                os.killpg(0, signal.SIGKILL)
            os._exit(137)
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                os._exit(0)
            if pid == 0:
                break
            if pid == child:
                os._exit(os.waitstatus_to_exitcode(status) % 256 if os.WIFEXITED(status)
                         else 128 + os.WTERMSIG(status))


if __name__ == "__main__":
    main()

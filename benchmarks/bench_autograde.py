"""Бенчмарк проверки группы: ``python -m autograde grade`` против ``nbgrader autograde`` и против себя прежнего.

Одна и та же группа из 40 честных работ lab01_mini_rag (полные, частичные, нетронутые —
разные наборы решённых заданий, seed 7) проверяется в одном прогоне на этой машине:

* базовая линия — ``nbgrader autograde lab01_mini_rag``: последовательно, без песочницы;
* ``grade --workers 2`` — в песочнице bubblewrap (то, что сравнивается с целью ≥ 1.7×);
* ``grade --workers 2`` ревизии ``--baseline`` (по умолчанию — последней без судьи, тесты в ядре
  слушателя): во сколько раз дороже стала работа с судьёй (цель — не больше 1.5×);
* ``grade --workers 1`` в песочнице и ``--no-sandbox`` — из их разницы получается цена
  песочницы на одну работу.

Каждая проверка идёт в своей свежей копии каталога курса во временной папке (своя база
оценок), репозиторий не трогается. Заодно сверяются баллы: у autograde они должны совпасть с
баллами nbgrader по каждой работе. Запуск: ``python benchmarks/bench_autograde.py``
(несколько минут; ``--students 10`` — быстрее, ``--repeat 2`` — лучшее из двух).

``--cluster local:2`` меряет другое — проверку на кластере Dask рядом с локальным пулом, в одном
прогоне на одной группе (``--students 200``):

* ``grade --workers 2`` (пул) против ``grade --cluster local:2``: накладные расходы кластера
  (цель — не больше 10 %);
* отдельно запущенный ``dask scheduler`` с 1 и с 2 работниками (``dask worker --nthreads 1``):
  масштабирование;
* цена работы на ядре работника, цена главного процесса на работу (запись итога, ноутбука, отзыва
  и строки базы — её он делает один за всех) и оценка на бумаге: 10 000 работ на 8, 32 и 128 ядрах.

``--memory`` меряет память доверенных процессов (главный и работники, вне песочницы): пиковая
память (VmHWM) при проверке враждебной группы из tests/autograde_class.py (плохие и враждебные
работы: поток вывода, ответ ядра глубиной 200 000 и из миллиона пустых списков, ответ в 12 МБ,
ноутбук в 29 МБ…) против честной группы того же размера, в одном прогоне, с одними лимитами
(цель — не больше 1.5×).

Результат — таблица в stdout и JSON в benchmarks/results/.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import autograde_class as ac  # noqa: E402 — сборщик работ из tests/
from dask_processes import scheduler_with_workers  # noqa: E402 — отдельный планировщик и работники

TASKS = ["l2_normalize", "cosine", "top_k", "chunk_text", "build_prompt", "check_citations", "search"]


def save_json(name: str, data: dict) -> None:
    """Итог замера — в benchmarks/results/NAME.json (рядом с таблицей в stdout)."""
    out = ROOT / "benchmarks" / "results"
    out.mkdir(exist_ok=True)
    (out / f"{name}.json").write_text(json.dumps(data, ensure_ascii=False, indent=1))


def make_class(lab: ac.Lab, n: int, seed: int = 7) -> dict[str, bytes]:
    """n честных работ: у каждой свой набор решённых заданий (все, часть или ни одного)."""
    rng = random.Random(seed)
    works = {}
    for i in range(n):
        kind = rng.choices(["full", "partial", "untouched"], weights=[5, 4, 1])[0]
        if kind == "full":
            answers = lab.solutions
        elif kind == "untouched":
            answers = {}
        else:
            chosen = set(rng.sample(TASKS, rng.randint(1, len(TASKS) - 1)))
            answers = {k: v for k, v in lab.solutions.items() if k in chosen or k == "why_cosine"}
        works[f"s{i:02d}_{kind}"] = ac.dumps(lab.notebook(answers))
    return works


def lay_out(folder: Path, works: dict[str, bytes], lab: str) -> Path:
    for student, data in works.items():
        target = folder / student / lab
        target.mkdir(parents=True, exist_ok=True)
        (target / f"{lab}.ipynb").write_bytes(data)
    return folder


CPUACCT = Path("/sys/fs/cgroup/cpuacct")  # cgroup v1: счётчик процессора всех процессов группы


def timed(cmd: list[str], cwd: Path, cpu: list | None = None) -> float:
    """Секунды от запуска до конца команды; в ``cpu`` — секунды процессора всего её дерева процессов — эта
    цифра меньше зависит от чужой нагрузки на машину, чем время.

    Дерево считает cgroup ``cpuacct`` (если её можно создать, как под root здесь): в неё попадает команда и
    всё, что она запустила, — работники пула, процессы Dask, песочницы и ядра, даже те, кого дождался не их
    родитель. Иначе — ``RUSAGE_CHILDREN``: только потомки, которых дождались по цепочке до этой команды."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
               AUTOGRADE_ALLOW_NBGRADER="1")  # nbgrader autograde здесь нужен как базовая линия
    group = CPUACCT / f"bench-autograde-{os.getpid()}-{time.monotonic_ns()}"
    try:
        group.mkdir()
    except OSError:
        group = None

    def enter() -> None:
        (group / "cgroup.procs").write_text(str(os.getpid()))

    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                            preexec_fn=enter if group else None)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if group is not None:
        time.sleep(1)  # последние процессы песочниц успевают выйти
        used = int((group / "cpuacct.usage").read_text()) / 1e9
        try:
            group.rmdir()
        except OSError:
            pass
    else:
        used = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} упал:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
    if cpu is not None:
        cpu.append(used)
    return elapsed


def run_nbgrader(tmp: Path, works: dict[str, bytes], lab: str) -> tuple[float, dict[str, float]]:
    course = ac.course_copy(tmp / "nbgrader")
    timed([sys.executable, "-m", "nbgrader", "generate_assignment", lab, "--force", "--log-level=ERROR"], course)
    lay_out(course / "autograde" / "submitted", works, lab)
    seconds = timed([sys.executable, "-m", "nbgrader", "autograde", lab, "--log-level=ERROR"], course)
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'autograde' / 'gradebook.db'}") as gb:
        scores = {s.student.id: s.code_score for s in gb.assignment_submissions(lab)}
    return seconds, scores


def run_grade(tmp: Path, name: str, works: dict[str, bytes], lab: str, *options: str,
              code: Path = ROOT, cpu: list | None = None) -> tuple[float, dict[str, float]]:
    """``grade`` из каталога ``code`` (этот репозиторий или ревизия --baseline) на своей копии курса."""
    course = ac.course_copy(tmp / name)
    submissions = lay_out(tmp / f"{name}-class", works, lab)
    seconds = timed([sys.executable, "-m", "autograde", "grade", lab, "--submissions", str(submissions),
                     "--course", str(course), *options], code, cpu)
    with open(course / "autograde" / "grades" / f"{lab}.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    bad = [r for r in rows if r["status"] != "ok"]
    if bad:
        raise SystemExit(f"{name}: честные работы получили не ok: {bad[:3]}")
    return seconds, {r["student_id"]: float(r["score"]) for r in rows}


def kernel_start_seconds(sandboxed: bool, repeat: int = 10) -> float:
    """Медиана: запустить ядро (в песочнице или без), дождаться готовности, убить."""
    import statistics

    from autograde.run.kernel import KernelSession
    from autograde.run.record import Execution
    from autograde.sandbox import Limits, start

    times = []
    for _ in range(repeat):
        begin = time.perf_counter()
        kernel = start(program="kernel", files={}, workdir_name="lab", limits=Limits(), sandboxed=sandboxed, slot=0,
                       exclude=[])
        session = KernelSession(kernel, Execution(), time.monotonic() + 120)
        ready = session.ready(time.monotonic() + 60)
        session.close()
        kernel.kill()
        if not ready:
            raise SystemExit("ядро не запустилось")
        times.append(time.perf_counter() - begin)
    return statistics.median(times)


def baseline_checkout(tmp: Path, revision: str) -> Path:
    """Ревизия этого репозитория во временной папке (git worktree) — её autograde и будет базовой линией."""
    target = tmp / "baseline-code"
    subprocess.run(["git", "worktree", "add", "--detach", "--force", str(target), revision], cwd=ROOT, check=True,
                   capture_output=True)
    return target


def replay(seed: Path, lab: str, n: int, tmp: Path) -> dict[str, float]:
    """Главный процесс без ядер: ``grade`` записывает ``n`` итогов, которые отдаёт работник-заглушка.

    Итоги — настоящие (ноутбук, отзыв, баллы по ячейкам) из проверенной группы ``seed``, размноженные под
    ``n`` разных слушателей; путь записи — тот же, что у ``grade`` (``_record``: пачки ``save.Recorder``,
    база оценок, файлы), затем его конец (``save.finish`` с CSV). Возвращает секунды (стена и процессор
    этого процесса) на запись всех итогов и на конец."""
    import copy
    import io

    from autograde.commands import grade
    from autograde.course import Course
    from autograde.intake.plan import Worklist
    from autograde.lab.master import build_master
    from autograde.lab.task import Outcome, Task
    from autograde.store import save
    from autograde.store.gradebook import register
    from autograde.store.results import load

    source = Course.load(seed).lab(lab)
    samples = [Outcome(r, (source.autograded(r.student) / f"{lab}.ipynb").read_text(encoding="utf-8"),
                       (source.feedback(r.student) / f"{lab}.html").read_text(encoding="utf-8"))
               for r in load(source.results) if r.status != "not_submitted"]
    course = Course.load(ac.course_copy(tmp / "replay"))
    target = course.lab(lab)
    master = build_master(target.source_notebook, lab, course.config)
    register(master, course.db_url, course.course_id)
    tasks = [Task(f"r{i:06d}", f"r{i:06d}", "", b"") for i in range(n)]

    def stub_worker(tasks, ctx):
        for i, task in enumerate(tasks):
            outcome = copy.copy(samples[i % len(samples)])
            outcome.result = copy.deepcopy(outcome.result)
            outcome.result.student = outcome.result.display_id = task.student
            yield task, outcome

    stderr, sys.stderr = sys.stderr, io.StringIO()  # полоса прогресса — не в отчёт
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        grade._record(course, target, None, Worklist(tasks), stub_worker)
        record = {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}
        wall, cpu = time.perf_counter(), time.process_time()
        results = save.finish(course, target, master)
        record.update(finish_wall=time.perf_counter() - wall, finish_cpu=time.process_time() - cpu)
    finally:
        sys.stderr = stderr
    if len(results) != n:
        raise SystemExit(f"записано {len(results)} итогов из {n}")
    return record


def master_suite(args, lab: ac.Lab) -> None:
    """``--master-only N``: потолок главного процесса в итогах в секунду, без ядер и работников."""
    with tempfile.TemporaryDirectory(prefix="bench-autograde-master-") as tmp:
        seed_works = make_class(lab, 4)
        run_grade(Path(tmp), "seed", seed_works, lab.lab, "--workers", "2")
        rounds = []
        for round_ in range(args.repeat):  # машина шумит: лучший из повторов, как у остальных замеров
            shutil.rmtree(Path(tmp) / "replay", ignore_errors=True)
            rounds.append(replay(Path(tmp) / "seed", lab.lab, args.master_only, Path(tmp)))
            print(f"[{round_ + 1}/{args.repeat}] запись: {rounds[-1]['wall']:.1f} с", file=sys.stderr)
        took = min(rounds, key=lambda r: r["wall"])
    n = args.master_only
    per = took["wall"] / n
    print(f"главный процесс, {n} итогов {lab.lab} от работника-заглушки (пачки по 64, одна транзакция базы на пачку):")
    print(f"  запись во время проверки: {per * 1000:.1f} мс на итог по стене ({n / took['wall']:.0f} итогов/с), "
          f"{took['cpu'] / n * 1000:.1f} мс процессора — цель ≤ 10 мс (≥ 100 итогов/с): {'да' if per <= 0.010 else 'НЕТ'}")
    print(f"  конец (база догоняет итоги, ручные баллы, CSV): {took['finish_wall'] / n * 1000:.1f} мс на итог")
    save_json("bench_autograde_master", {
        "results": n, "seconds": took, "rounds": rounds, "per_result_ms": per * 1000, "results_per_second": n / took["wall"],
        "cpu_count": os.cpu_count()})


def _print_overhead(args, best: dict, cpu: dict, csvs: dict) -> None:
    overhead, cpu_overhead = best["cluster"] / best["pool_w2"] - 1, cpu["cluster"] / cpu["pool_w2"] - 1
    same = all(data == csvs["pool_w2"] for data in csvs.values())
    print(f"накладные расходы кластера {args.cluster}: {overhead * 100:+.1f} % к пулу по времени ({best['cluster']:.0f} "
          f"против {best['pool_w2']:.0f} с), по процессору дерева процессов {cpu_overhead * 100:+.1f} % "
          f"({cpu['cluster']:.0f} против {cpu['pool_w2']:.0f} с; цель ≤ 10 %) — {'да' if cpu_overhead <= 0.10 else 'НЕТ'}; "
          f"CSV совпадают байт в байт: {'да' if same else 'НЕТ'}")


def cluster_suite(args, lab: ac.Lab, works: dict[str, bytes]) -> None:
    """Пул против ``--cluster``, отдельный планировщик с 1 и 2 работниками, оценка на 10 000 работ."""
    n, best, csvs, cpu = len(works), {}, {}, {}
    with tempfile.TemporaryDirectory(prefix="bench-autograde-cluster-") as tmp:
        for round_ in range(args.repeat):
            for name in ("pool_w2", "cluster") if args.no_separate else ("pool_w2", "cluster", "separate_1", "separate_2"):
                folder = Path(tmp) / f"{name}-{round_}"
                folder.mkdir()
                if name.startswith("separate_"):
                    with scheduler_with_workers(folder, int(name[-1])) as address:
                        seconds, _ = run_grade(folder, name, works, lab.lab, "--cluster", address)
                else:
                    options = ["--workers", "2"] if name == "pool_w2" else ["--cluster", args.cluster]
                    used: list[float] = []  # у local:N и пула все процессы — потомки команды
                    seconds, _ = run_grade(folder, name, works, lab.lab, *options, cpu=used)
                    cpu[name] = min(cpu.get(name, float("inf")), used[0])
                best[name] = min(best.get(name, float("inf")), seconds)
                csvs[name] = (folder / name / "autograde" / "grades" / f"{lab.lab}.csv").read_bytes()
                print(f"[{round_ + 1}/{args.repeat}] {name}: {seconds:.1f} с", file=sys.stderr)
        if args.no_separate:
            _print_overhead(args, best, cpu, csvs)
            return
        pool_course = Path(tmp) / "pool_w2-0" / "pool_w2"
        rerun = timed([sys.executable, "-m", "autograde", "grade", lab.lab, "--submissions",
                       str(Path(tmp) / "pool_w2-0" / "pool_w2-class"), "--course", str(pool_course)], ROOT)
        empty = timed([sys.executable, "-m", "autograde", "grade", lab.lab, "--course",
                       str(ac.course_copy(Path(tmp) / "empty"))], ROOT)
        replayed = replay(pool_course, lab.lab, n, Path(tmp))
        write = replayed["wall"] / n
    same = all(data == csvs["pool_w2"] for data in csvs.values())
    overhead = best["cluster"] / best["pool_w2"] - 1
    cpu_overhead = cpu["cluster"] / cpu["pool_w2"] - 1
    scaling = best["separate_1"] / best["separate_2"]
    core = (best["separate_1"] - rerun) / n  # секунд ядра работника на работу: без запуска, приёма и CSV
    serial = max(0.0, rerun - empty) / n  # главный процесс до и после проверки: приём, ключи, база, CSV — на работу
    print(f"{n} работ {lab.lab}, {os.cpu_count()} ядра, Python {sys.version.split()[0]}")
    print(f"{'что':<58} {'секунд':>8}")
    for what, name in (("grade --workers 2 (локальный пул)", "pool_w2"), (f"grade --cluster {args.cluster}", "cluster"),
                       ("отдельный dask scheduler, 1 работник", "separate_1"),
                       ("отдельный dask scheduler, 2 работника", "separate_2")):
        print(f"{what:<58} {best[name]:>8.1f}")
    _print_overhead(args, best, cpu, csvs)
    print(f"масштабирование отдельного планировщика, 1 → 2 работника: {scaling:.2f}× (эффективность "
          f"{scaling / 2 * 100:.0f} %)")
    print(f"на работу: {core:.2f} с ядра работника; главный процесс — {write * 1000:.0f} мс записи во время "
          f"проверки и {serial * 1000:.0f} мс до и после (приём, ключи, база, CSV); запуск — {empty:.1f} с")
    estimate = {}
    for cores in (8, 32, 128):
        seconds = empty + 10_000 * serial + max(10_000 * core / cores, 10_000 * write)
        estimate[cores] = seconds
        bound = "главный процесс" if 10_000 * write > 10_000 * core / cores else "работники"
        print(f"оценка: 10 000 работ на {cores} ядрах ≈ {seconds / 60:.0f} мин (упирается в: {bound})")
    save_json("bench_autograde_cluster", {
        "students": n, "cluster": args.cluster, "seconds": best, "overhead": overhead, "cpu_seconds": cpu,
        "cpu_overhead": cpu_overhead, "csv_identical": same,
        "scaling_1_to_2": scaling, "worker_core_seconds_per_submission": core,
        "main_write_seconds_per_submission": write, "main_serial_seconds_per_submission": serial,
        "startup_seconds": empty, "rerun_seconds": rerun, "estimate_10000_seconds": estimate,
        "cpu_count": os.cpu_count()})


MEMORY_LIMITS = ["--cell-timeout", "20", "--timeout", "180", "--memory", "512"]


def peak_memory(cmd: list[str], cwd: Path) -> dict[str, float]:
    """Запустить команду и опрашивать до конца пиковую память (VmHWM, МБ) её самой и её прямых потомков-Python
    (работников пула); песочницы — внуки через bwrap, их память ограничивают лимиты, здесь их нет."""
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    main_peak = workers_peak = 0
    while proc.poll() is None:
        try:
            children = [int(p) for p in Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()]
        except OSError:
            children = []
        for pid in [proc.pid, *children]:
            try:
                if b"python" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                    continue
                hwm = int(re.search(r"VmHWM:\s+(\d+)", Path(f"/proc/{pid}/status").read_text()).group(1))
            except (OSError, AttributeError):
                continue
            if pid == proc.pid:
                main_peak = max(main_peak, hwm)
            else:
                workers_peak = max(workers_peak, hwm)
        time.sleep(0.05)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} упал:\n{proc.stderr.read().decode(errors='replace')[-3000:]}")
    return {"main": main_peak / 1024, "worker": workers_peak / 1024, "max": max(main_peak, workers_peak) / 1024}


def memory_suite(lab: ac.Lab) -> None:
    """Пиковая память проверяющего: враждебная группа против честной того же размера, в одном прогоне."""
    hostile = {c.student_id: c.files for c in ac.cases(lab, memory_mb=512, cell_timeout=20) + ac.hostile_cases(lab)
               if not c.honest}
    honest = make_class(lab, len(hostile))
    peaks = {}
    with tempfile.TemporaryDirectory(prefix="bench-autograde-memory-") as tmp:
        for name, works in (("honest", honest), ("hostile", hostile)):
            course = ac.course_copy(Path(tmp) / name)
            folder = Path(tmp) / f"{name}-class"
            for student, files in works.items():
                target = folder / student / lab.lab
                target.mkdir(parents=True, exist_ok=True)
                for file_name, data in (files.items() if isinstance(files, dict) else
                                        [(f"{lab.lab}.ipynb", files)]):
                    (target / file_name).write_bytes(data)
            start = time.perf_counter()
            peaks[name] = peak_memory([sys.executable, "-m", "autograde", "grade", lab.lab, "--submissions",
                                       str(folder), "--course", str(course), "--workers", "2", *MEMORY_LIMITS], ROOT)
            print(f"{name}: {time.perf_counter() - start:.0f} с, пик {peaks[name]['max']:.0f} МБ", file=sys.stderr)
    ratio = peaks["hostile"]["max"] / peaks["honest"]["max"]
    from minirag import plural

    print(f"{plural(len(hostile), 'работа', 'работы', 'работ')} {lab.lab} в каждой группе, grade --workers 2, "
          f"ядер: {os.cpu_count()}")
    print(f"{'группа':<12} {'главный, МБ':>12} {'работник, МБ':>13}")
    for name in ("honest", "hostile"):
        print(f"{name:<12} {peaks[name]['main']:>12.0f} {peaks[name]['worker']:>13.0f}")
    print(f"пиковая память проверяющего, враждебная / честная: {ratio:.2f}× (цель ≤ 1.5×) — "
          f"{'да' if ratio <= 1.5 else 'НЕТ'}")
    save_json("bench_autograde_memory", {
        "submissions": len(hostile), "peak_mb": peaks, "ratio": ratio, "cpu_count": os.cpu_count()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=1, help="повторить замеры и взять лучшее время")
    parser.add_argument("--baseline", default="a994f51",
                        help="ревизия для сравнения (по умолчанию a994f51 — последняя, где тесты шли в ядре слушателя)")
    parser.add_argument("--cluster", metavar="АДРЕС",
                        help="вместо сравнения с nbgrader — пул против grade --cluster АДРЕС (local:2) и отдельный "
                             "планировщик с 1 и 2 работниками; оценка на 10 000 работ")
    parser.add_argument("--no-separate", action="store_true",
                        help="с --cluster: только пул против --cluster, без отдельного планировщика и оценки")
    parser.add_argument("--master-only", type=int, metavar="N",
                        help="вместо проверки — главный процесс без ядер: N итогов от работника-заглушки, итогов в секунду")
    parser.add_argument("--memory", action="store_true",
                        help="вместо времени — пиковая память проверяющего: враждебная группа против честной")
    args = parser.parse_args()
    lab = ac.Lab()
    if args.master_only:
        master_suite(args, lab)
        return
    if args.memory:
        memory_suite(lab)
        return
    works = make_class(lab, args.students)
    if args.cluster:
        cluster_suite(args, lab, works)
        return
    best: dict[str, float] = {}
    scores: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-autograde-") as tmp:
        old_code = baseline_checkout(Path(tmp), args.baseline)
        for round_ in range(args.repeat):
            runs = {
                "nbgrader": lambda t: run_nbgrader(t, works, lab.lab),
                "grade_w2": lambda t: run_grade(t, "w2", works, lab.lab, "--workers", "2"),
                "baseline_w2": lambda t: run_grade(t, "b2", works, lab.lab, "--workers", "2", code=old_code),
                "grade_w1": lambda t: run_grade(t, "w1", works, lab.lab, "--workers", "1"),
                "grade_w1_nosandbox": lambda t: run_grade(t, "w1ns", works, lab.lab, "--workers", "1", "--no-sandbox"),
            }
            for name, fn in runs.items():
                folder = Path(tmp) / f"{name}-{round_}"
                folder.mkdir()
                seconds, got = fn(folder)
                best[name] = min(best.get(name, float("inf")), seconds)
                scores[name] = got
                print(f"[{round_ + 1}/{args.repeat}] {name}: {seconds:.1f} с", file=sys.stderr)
        subprocess.run(["git", "worktree", "remove", "--force", str(old_code)], cwd=ROOT, capture_output=True)
    start_sandbox, start_plain = kernel_start_seconds(True), kernel_start_seconds(False)
    mismatched = sorted(s for s in works if any(scores[name].get(s) != scores["nbgrader"].get(s) for name in scores))
    n = len(works)
    speedup = best["nbgrader"] / best["grade_w2"]
    overhead = (best["grade_w1"] - best["grade_w1_nosandbox"]) / n
    judge_cost = best["grade_w2"] / best["baseline_w2"]
    rows = [
        ("nbgrader autograde (последовательно, без песочницы)", best["nbgrader"], "1.00×"),
        ("autograde grade --workers 2 (песочница, судья)", best["grade_w2"], f"{speedup:.2f}×"),
        (f"autograde grade --workers 2 ревизии {args.baseline} (тесты в ядре)", best["baseline_w2"],
         f"{best['nbgrader'] / best['baseline_w2']:.2f}×"),
        ("autograde grade --workers 1 (песочница)", best["grade_w1"], f"{best['nbgrader'] / best['grade_w1']:.2f}×"),
        ("autograde grade --workers 1 --no-sandbox", best["grade_w1_nosandbox"],
         f"{best['nbgrader'] / best['grade_w1_nosandbox']:.2f}×"),
    ]
    print(f"{n} работ {lab.lab}, {os.cpu_count()} ядра, Python {sys.version.split()[0]}")
    print(f"{'что':<55} {'секунд':>8} {'против nbgrader':>16}")
    for what, seconds, ratio in rows:
        print(f"{what:<55} {seconds:>8.1f} {ratio:>16}")
    print(f"ускорение с 2 работниками: {speedup:.2f}× (цель ≥ 1.7×) — {'да' if speedup >= 1.7 else 'НЕТ'}")
    print(f"цена судьи: {judge_cost:.2f}× времени прежней проверки ({best['grade_w2'] / n:.2f} против "
          f"{best['baseline_w2'] / n:.2f} с на работу при 2 работниках; цель ≤ 1.5×) — "
          f"{'да' if judge_cost <= 1.5 else 'НЕТ'}")
    print(f"цена песочницы по группе: {overhead:+.2f} с на работу "
          f"({overhead / (best['grade_w1_nosandbox'] / n) * 100:+.0f}% от {best['grade_w1_nosandbox'] / n:.2f} с)")
    print(f"цена песочницы на запуске ядра (медиана из 10): {start_sandbox - start_plain:+.3f} с "
          f"({start_sandbox:.3f} с в bwrap против {start_plain:.3f} с без)")
    print(f"баллы совпадают с nbgrader: {'да, у всех' if not mismatched else 'НЕТ: ' + ', '.join(mismatched)}")
    save_json("bench_autograde", {
        "students": n, "seconds": best, "speedup_workers2": speedup, "judge_cost": judge_cost,
        "baseline": args.baseline, "sandbox_overhead_per_submission": overhead,
        "kernel_start_sandbox": start_sandbox, "kernel_start_plain": start_plain,
        "scores_match_nbgrader": not mismatched, "cpu_count": os.cpu_count()})


if __name__ == "__main__":
    main()

"""Настройки nbgrader для курса «Мини-RAG руками».

Каталог курса — папка этого файла (пути считаются от него, а не от текущей папки):

    solutions/<lab>/<lab>.ipynb   версия преподавателя: решения и скрытые тесты (source)
    labs/<lab>/<lab>.ipynb        версия для слушателей, её генерирует `python -m autograde release`
    autograde/submitted/          сданные работы: <student_id>/<lab>/<lab>.ipynb
    autograde/autograded/         работы после автопроверки
    autograde/feedback/           отзывы (HTML)
    autograde/gradebook.db        база оценок (SQLite)

Папки и база в autograde/ не попадают в git. nbgrader читает этот файл из текущей папки,
поэтому команды `nbgrader ...` запускают из корня репозитория; Validate в JupyterLab
берёт его, если JupyterLab запущен из корня.
"""

import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821 — get_config подставляет сам nbgrader (traitlets)

ROOT = Path(__file__).resolve().parent
WORK = ROOT / "autograde"

# nbgrader создаёт и обновляет базу оценок, запуская программу alembic по PATH. Если окружение
# не активировано (.venv/bin/python -m …, .venv/bin/jupyter lab), её там нет: кладём папку
# программ этого Python в начало PATH — каждая команда nbgrader читает этот файл первым.
_BIN = str(Path(sys.executable).parent)
if _BIN not in os.environ.get("PATH", "").split(os.pathsep):
    os.environ["PATH"] = _BIN + os.pathsep + os.environ.get("PATH", "")

# ---------- каталог курса ----------
c.CourseDirectory.course_id = "mini-rag-rukami"
c.CourseDirectory.root = str(ROOT)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "labs"
# шаги проверки живут в autograde/: nbgrader подставляет их как {nbgrader_step}/{student_id}/{assignment_id}
c.CourseDirectory.submitted_directory = "autograde/submitted"
c.CourseDirectory.autograded_directory = "autograde/autograded"
c.CourseDirectory.feedback_directory = "autograde/feedback"
c.CourseDirectory.solution_directory = "autograde/solution"
c.CourseDirectory.source_with_tests_directory = "autograde/source_with_tests"
c.CourseDirectory.db_url = f"sqlite:///{WORK / 'gradebook.db'}"
WORK.mkdir(exist_ok=True)  # SQLite не создаёт папку базы сам (в копии каталога курса её может не быть)
# служебные файлы, которые не копируются ни в выданную версию, ни в проверку
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", "feedback", ".DS_Store", "*.minirag"]

# ---------- выдача: что видит слушатель вместо решения ----------
c.ClearSolutions.code_stub = {"python": "# ТВОЙ КОД ЗДЕСЬ\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "ТВОЙ ОТВЕТ ЗДЕСЬ: замени этот текст своим ответом."

# ---------- исполнение: одни числа для Validate, `python -m autograde check` и `grade` ----------
CELL_TIMEOUT = 60  # секунд на ячейку (с тестами — вместе с вызовами кода слушателя)
c.Execute.kernel_name = "python3"
c.Execute.timeout = CELL_TIMEOUT
c.Execute.interrupt_on_timeout = True
# история в памяти (как у nbgrader по умолчанию) и без служебных предупреждений ядра в выводе ячеек
c.Execute.extra_arguments = ["--HistoryManager.hist_file=:memory:", "--IPKernelApp.log_level=ERROR"]
c.Execute.error_on_timeout = {
    "ename": "CellTimeoutError",
    "evalue": f"ячейка не уложилась в {CELL_TIMEOUT} секунд",
    "traceback": [f"CellTimeoutError: ячейка не уложилась в {CELL_TIMEOUT} секунд. Проверь, нет ли бесконечного цикла."],
}

# ---------- проверка группы (python -m autograde grade, check) ----------
c.Grading.notebook_timeout = 600  # секунд на весь ноутбук
c.Grading.memory_mb = 2048  # память ядра слушателя
c.Grading.output_kb = 2048  # весь вывод ноутбука: текст, картинки, ошибки с трассировками
# лабораторные, где всё пишут руками: при проверке эталонная библиотека minirag в ядре слушателя недоступна
c.Grading.no_reference_labs = ["lab01_mini_rag", "lab05_bm25_hybrid"]
# сроки сдачи и опоздания (время сдачи берётся из LMS или из времени файла в папке сдач):
# c.Grading.due = {"lab01_mini_rag": "2026-10-01 23:59:00+03:00"}
# c.Grading.extensions = {"lab01_mini_rag": {"petrov": "2026-10-05 23:59:00+03:00"}}  # по id из списка группы
# c.Grading.late_penalty = "per_day"  # none — только отметить; zero — 0 баллов; per_day — доля за начатые сутки
# c.Grading.late_penalty_per_day = 0.1
# id слушателя в zip из LMS — группа student_id (по умолчанию: имя и номер участника, «Иван Петров_123»):
# c.LmsZip.student_id_pattern = r"_(?P<student_id>\d+)_assignsubmission"   # только номер участника Moodle

# ---------- formgrader: только безопасные действия ----------
# formgrader и `nbgrader autograde` исполняют код слушателя без песочницы, с правами преподавателя,
# и тесты — в ядре слушателя. В этом курсе проверка — только `python -m autograde grade`: здесь их
# автопроверка останавливается с объяснением. (Переменная AUTOGRADE_ALLOW_NBGRADER=1 снимает запрет —
# ею пользуются тесты курса, чтобы сравнить баллы с обычным nbgrader.)
from nbgrader.converters.autograde import Autograde as _Autograde  # noqa: E402
from nbgrader.preprocessors import NbGraderPreprocessor as _Preprocessor  # noqa: E402


class UseSandboxedGrading(_Preprocessor):
    """Остановить nbgrader autograde (кнопка Autograde в formgrader): проверять — python -m autograde grade."""

    def preprocess(self, nb, resources):
        if os.environ.get("AUTOGRADE_ALLOW_NBGRADER") != "1":
            raise RuntimeError("В этом курсе работы проверяет только `python -m autograde grade LAB` (песочница, "
                               "тесты в отдельном процессе). Автопроверка nbgrader и кнопка Autograde в formgrader "
                               "отключены: см. src/autograde/README.md.")
        return nb, resources


c.Autograde.sanitize_preprocessors = [UseSandboxedGrading,
                                      *_Autograde.class_traits()["sanitize_preprocessors"].default()]

# ---------- autograde ----------
# удалённые слушателем ячейки с тестами возвращаются из базы и всё равно проверяются
c.OverwriteCells.add_missing_cells = True
c.OverwriteCells.missing_cell_notification = (
    "Эта ячейка (id:{cell_id}) была удалена из работы, nbgrader вернул её при проверке.\n\n"
)
# nbgrader считает любой вывод в stderr провалом теста. Предупреждения библиотек (…Warning:),
# полосы прогресса tqdm и служебное предупреждение ядра ipykernel о TCP без шифрования —
# безобидный stderr: убираем его до подсчёта баллов
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = r"Warning:|warnings\.warn|it/s\]|s/it\]|\[IPKernelApp\] WARNING"

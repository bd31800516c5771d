"""Grade a class: build the course once, then grade each submission on its own (autograde/grade.py is the CLI).

    course = prepare(out_dir)                                   # source from solutions/, release, gradebook
    result = grade_submission(course, student_id, path, out_dir, settings)   # one student, one process

``grade_submission`` is a function of (course template, submission path, output directory) only: it checks the
file in this process (cheap, no student code runs), then grades it in a worker process (tools/course/grade_worker.py)
under a wall-clock limit and a memory limit, and kills the worker's whole process tree (nbgrader and the kernel)
when the limit is hit. Whatever a submission does, the other students' results are not touched; a submission that
cannot be graded gets an empty score and a reason, never a silent 0.
"""

from __future__ import annotations

import copy
import csv
import io
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import nbformat

from tools.prefixbench.fileio import atomic_write_json, atomic_write_text

from . import config
from . import sandbox
from .nbgrader_course import course_config, ensure_venv_on_path, prepare_course

STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$")
MARKER = ".prefixbench-grading"
"""File that marks an output directory as ours, so a later run may clear it."""


@dataclass(frozen=True)
class Settings:
    cell_timeout: float = 120.0
    """Seconds per cell (nbgrader Execute.timeout); a cell past it is interrupted and the notebook goes on."""
    submission_timeout: float = 900.0
    """Seconds for a whole submission (start-up, every cell, feedback); past it the worker tree is killed."""
    memory_limit_mb: int = 4096
    """Address-space limit of the worker and its kernel (0: none)."""
    max_notebook_mb: float = 50.0
    """Submissions larger than this are not read."""
    max_feedback_chars: int = 20000
    """Output kept per cell in the feedback."""


@dataclass
class Course:
    """What grading needs to know about the released assignment; plain data, so it can go to another process."""
    template_dir: str
    release_notebook: str
    cells: list[dict]  # graded cells in notebook order: {"id", "points", "hidden"}

    @property
    def max_score(self) -> float:
        return float(sum(cell["points"] for cell in self.cells))


@dataclass
class Result:
    student_id: str
    status: str  # graded | not_graded | error
    score: float | None = None
    max_score: float | None = None
    cells: dict[str, float | None] = field(default_factory=dict)
    reason: str = ""
    seconds: float = 0.0
    feedback: str | None = None
    diagnosis: list[str] | None = None
    """mistake:exercise codes named in the feedback (None: no diagnosis ran)."""


class SubmissionProblem(Exception):
    """The submission cannot be graded as handed in; the message is the reason shown to the instructor."""


def prepare(out_dir: Path, source_notebook: Path = config.SOURCE_NOTEBOOK) -> Course:
    """Build ``out_dir/course`` (source, release, gradebook) and describe its graded cells."""
    release = prepare_course(Path(out_dir) / "course", source_notebook)
    source_nb = nbformat.read(source_notebook, as_version=4)
    cells = []
    for cell in source_nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade"):
            cells.append({"id": meta["grade_id"], "points": float(meta["points"]),
                          "hidden": "### BEGIN HIDDEN TESTS" in cell.source})
    return Course(str(Path(out_dir) / "course"), str(release), cells)


# --- checks before any student code runs -----------------------------------------------------------------------

def _grade_id(cell) -> str | None:
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta.get("grade_id") if isinstance(meta, dict) else None


def read_submission(path: Path, settings: Settings) -> nbformat.NotebookNode:
    if not path.is_file():
        raise SubmissionProblem(f"missing {path.name}")
    size_mb = path.stat().st_size / 2**20
    if size_mb > settings.max_notebook_mb:
        raise SubmissionProblem(f"{path.name} is {size_mb:.1f} MB, over the {settings.max_notebook_mb:g} MB limit "
                                "(clear the outputs and resubmit)")
    raw = path.read_bytes()
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise SubmissionProblem(f"{path.name} is not a notebook (not UTF-8 text)") from None
    except json.JSONDecodeError as exc:
        raise SubmissionProblem(f"{path.name} is not a notebook (invalid JSON at line {exc.lineno}, "
                                f"column {exc.colno}: {exc.msg})") from None
    if not isinstance(data, dict) or "cells" not in data and "worksheets" not in data:
        raise SubmissionProblem(f"{path.name} is JSON but not a Jupyter notebook (no cells)")
    try:
        nb = nbformat.reads(json.dumps(data), as_version=4)
        _, nb = nbformat.validator.normalize(nb)
        nb = nbformat.from_dict(nb)
        _upgrade_to_cell_ids(nb)  # Colab saves nbformat 4.0: no cell ids, which restored cells would carry
        nbformat.validate(nb)
    except Exception as exc:  # nbformat raises several types; all mean "not a valid notebook"
        first = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
        raise SubmissionProblem(f"{path.name} is not a valid notebook ({first})") from None
    return nb


def _upgrade_to_cell_ids(nb: nbformat.NotebookNode) -> None:
    """Make the notebook nbformat 4.5 with a unique id on every cell (existing ids are kept)."""
    if nb.nbformat == 4 and nb.nbformat_minor < 5:
        nb.nbformat_minor = 5
    seen: set[str] = set()
    for index, cell in enumerate(nb.cells):
        cell_id = cell.get("id")
        if not isinstance(cell_id, str) or not re.fullmatch(r"[a-zA-Z0-9-_]{1,64}", cell_id) or cell_id in seen:
            cell_id = f"submitted-cell-{index}"
            while cell_id in seen:
                cell_id += "-x"
            cell["id"] = cell_id
        seen.add(cell_id)


def restore_cells(nb: nbformat.NotebookNode, release: nbformat.NotebookNode) -> tuple[nbformat.NotebookNode, list[str]]:
    """Check the nbgrader metadata and put deleted test / read-only cells back where the release had them.

    Raises SubmissionProblem when no graded cell carries nbgrader metadata (an editor stripped it): grading that
    notebook would score 0 without saying why. Edited test cells are left for nbgrader to restore from the
    gradebook (it compares checksums); they are only noted here.
    """
    nb = copy.deepcopy(nb)
    release_cells = [(gid, cell) for cell in release.cells if (gid := _grade_id(cell))]
    release_by_id = dict(release_cells)
    graded = [gid for gid, cell in release_cells if cell.metadata["nbgrader"].get("grade")
              or cell.metadata["nbgrader"].get("solution")]
    duplicated = []
    seen: set[str] = set()
    for cell in reversed(nb.cells):  # nbgrader's DeduplicateIds rule: the last copy of a grade id counts
        gid = _grade_id(cell)
        if gid in seen:
            cell.metadata.pop("nbgrader")
            duplicated.append(gid)
        elif gid:
            seen.add(gid)
    present = {gid for cell in nb.cells if (gid := _grade_id(cell))}
    if not present & set(graded):
        raise SubmissionProblem(
            f"nbgrader metadata missing: none of the {len(graded)} graded cells carries it (an editor or a copy-paste "
            "stripped it); ask for a resubmission made from the released notebook")
    notes = []
    restored_tests, restored_other, missing_solutions, edited = [], 0, [], []
    for index, (gid, rcell) in enumerate(release_cells):
        if gid in present:
            continue
        meta = rcell.metadata["nbgrader"]
        if meta.get("solution"):
            missing_solutions.append(gid)  # the student's code is theirs: never replaced by the stub
            continue
        anchor = None
        for previous, _ in reversed(release_cells[:index]):
            if previous in present:
                anchor = previous
                break
        position = 0
        if anchor is not None:
            position = next(i for i, cell in enumerate(nb.cells) if _grade_id(cell) == anchor) + 1
        nb.cells.insert(position, copy.deepcopy(rcell))
        present.add(gid)
        if meta.get("grade"):
            restored_tests.append(gid)
        else:
            restored_other += 1
    for cell in nb.cells:
        gid = _grade_id(cell)
        if gid in release_by_id and release_by_id[gid].metadata["nbgrader"].get("grade") \
                and cell.source != release_by_id[gid].source:
            edited.append(gid)
    if restored_tests:
        notes.append(f"deleted test cells restored: {', '.join(restored_tests)}")
    if restored_other:
        notes.append(f"{restored_other} deleted read-only cell(s) restored")
    if edited:
        notes.append(f"edited test cells restored from the gradebook: {', '.join(sorted(set(edited)))}")
    if duplicated:
        notes.append(f"cells copied with their nbgrader metadata, only the last copy counts: "
                     f"{', '.join(sorted(set(duplicated)))}")
    if missing_solutions:
        notes.append(f"solution cells without nbgrader metadata: {', '.join(missing_solutions)}")
    try:
        from nbgrader.nbgraderformat import MetadataValidator
        MetadataValidator().validate_nb(nb)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
        raise SubmissionProblem(f"nbgrader metadata is corrupted ({first})") from None
    return nb, notes


LIBRARY_NAMES = re.compile(r"\b(prefixbench|library_simulate|lib_decision|_oracle)\b")


def library_use(nb: nbformat.NotebookNode) -> list[str]:
    """Cells a student could edit (solution cells, cells they added) that name the reference library.

    The hidden tests compare answers with tools.prefixbench, which the lesson imports: a solution that wraps the
    library, or patches it, would pass them. Such a submission is still graded, and flagged for review by hand.
    Read-only cells are skipped: nbgrader restores their source anyway.
    """
    found = []
    for cell in nb.cells:
        meta = cell.get("metadata", {}).get("nbgrader") or {}
        if cell.cell_type == "code" and not meta.get("locked") and LIBRARY_NAMES.search(cell.source):
            found.append(meta.get("grade_id") or f"cell {cell.get('id')}")
    return found


# --- one submission --------------------------------------------------------------------------------------------

def _limits(memory_limit_mb: int, cpu_seconds: float):
    def apply() -> None:
        if memory_limit_mb > 0:
            limit = memory_limit_mb * 2**20
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        cpu = int(cpu_seconds) + 1  # a backstop: the wall-clock limit below normally fires first
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    return apply


def _process(pid: int):
    """A psutil handle on ``pid`` (it checks the process's identity later: a reused pid is not mistaken for it)."""
    import psutil
    try:
        return psutil.Process(pid)
    except psutil.NoSuchProcess:
        return None


def _kill_tree(root) -> None:
    """Kill ``root`` (a psutil handle, or None) and every process below it."""
    import psutil
    if root is None:
        return
    try:
        procs = root.children(recursive=True) + [root]
    except psutil.NoSuchProcess:
        return
    _kill_all(procs)


def _kill_all(procs: list) -> None:
    """SIGKILL each psutil handle and wait (10 s at most) for them to go."""
    import psutil
    for proc in procs:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(procs, timeout=10)


def processes_of(work: Path) -> list:
    """psutil handles on the processes whose command line names a file in a submission's work folder (its kernel
    and diagnosis runs do), with or without a sandbox user of their own."""
    import psutil
    needle = str(Path(work).resolve()) + os.sep
    return [proc for proc in psutil.process_iter(["cmdline"])
            if proc.pid != os.getpid() and any(needle in arg for arg in proc.info.get("cmdline") or ())]


def kill_strays(work: Path) -> int:
    """Kill what a submission started and left behind (a crashed worker's kernel, which init has adopted);
    returns how many were killed."""
    strays = processes_of(work)
    _kill_all(strays)
    return len(strays)


def worker_env() -> dict[str, str]:
    """Environment of the worker and the kernel: the repository importable, traces local, no downloads."""
    ensure_venv_on_path()
    env = dict(os.environ)
    repo = str(config.REPO_ROOT)
    env["PYTHONPATH"] = os.pathsep.join([repo, *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]])
    env["PREFIXBENCH_REPO"] = repo
    if not env.get("PREFIXBENCH_TRACE_DIR") and config.SHARED_TRACE_DIR.is_dir():
        env["PREFIXBENCH_TRACE_DIR"] = str(config.SHARED_TRACE_DIR)
    # Resolve the "python3" kernel to this environment's own kernelspec before any user-level one.
    env["JUPYTER_PATH"] = os.pathsep.join([str(Path(sys.prefix) / "share" / "jupyter"),
                                           *[p for p in env.get("JUPYTER_PATH", "").split(os.pathsep) if p]])
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"
    return env


def kernel_env() -> dict[str, str]:
    """The only variables student code sees (the sandbox launcher drops everything else)."""
    env = {"PYTHONPATH": str(config.REPO_ROOT), "PREFIXBENCH_REPO": str(config.REPO_ROOT),
           "PYDEVD_DISABLE_FILE_VALIDATION": "1", "MPLCONFIGDIR": ".matplotlib", "PYTHONDONTWRITEBYTECODE": "1",
           # Figures are built but not drawn while grading: no cell is graded on a picture, and rendering the
           # lesson's PNGs (and carrying them into the feedback page) cost about 0.45 s per submission.
           "MPLBACKEND": "agg"}
    trace_dir = os.environ.get("PREFIXBENCH_TRACE_DIR") or (
        str(config.SHARED_TRACE_DIR) if config.SHARED_TRACE_DIR.is_dir() else "")
    if trace_dir:
        env["PREFIXBENCH_TRACE_DIR"] = trace_dir
    return env


def sandbox_spec(out_dir: Path, work: Path, index: int, submission: Path | None, settings: Settings,
                 caps: dict) -> sandbox.Spec:
    """Where this submission's code runs and what confines it (tools/course/sandbox.py)."""
    hide = [Path(out_dir)] + ([Path(submission).resolve().parent.parent] if submission else [])
    env = kernel_env()
    trace = env.get("PREFIXBENCH_TRACE_DIR")
    spec = sandbox.make_spec(caps, work / "sandbox", index, hide=hide, memory_mb=settings.memory_limit_mb,
                             cpu_s=settings.submission_timeout, keep_ro=[Path(trace)] if trace else [], env=env)
    spec.env["MPLCONFIGDIR"] = str(Path(spec.sandbox_dir) / ".matplotlib")
    fonts = Path(out_dir) / "sandbox-template" / "matplotlib"
    if fonts.is_dir():  # matplotlib's font list, built once per run: seconds saved per kernel
        shutil.copytree(fonts, spec.env["MPLCONFIGDIR"], dirs_exist_ok=True)
        if spec.uid is not None:
            for path in [Path(spec.env["MPLCONFIGDIR"]), *Path(spec.env["MPLCONFIGDIR"]).rglob("*")]:
                os.chown(path, spec.uid, spec.uid)
    return spec


def prepare_sandbox_template(out_dir: Path) -> None:
    """Build matplotlib's font cache once, for every sandboxed kernel to copy."""
    target = Path(out_dir) / "sandbox-template" / "matplotlib"
    target.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], env={**worker_env(), "MPLCONFIGDIR":
                   str(target)}, capture_output=True, timeout=300)


def grade_submission(course: Course, student_id: str, submission: Path | None, out_dir: Path,
                     settings: Settings = Settings(), *, index: int = 0, caps: dict | None = None) -> Result:
    """Grade one student's notebook; never raises for anything the submission does.

    ``index`` numbers the submission within the run (it picks the sandbox user id: distinct per submission);
    ``caps`` is ``sandbox.capabilities()`` (probed here when not given)."""
    started = time.monotonic()
    out_dir = Path(out_dir)
    work = out_dir / "work" / student_id
    result = Result(student_id, "not_graded", max_score=course.max_score)
    try:
        if submission is None:
            raise SubmissionProblem(f"missing {config.NOTEBOOK_FILE}")
        nb = read_submission(Path(submission), settings)
        release = nbformat.read(course.release_notebook, as_version=4)
        nb, notes = restore_cells(nb, release)
        flagged = library_use(nb)
        if flagged:
            notes.append("review by hand: code the student wrote names the reference library "
                         f"tools.prefixbench ({', '.join(flagged)}), which the hidden tests compare against")
        if work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True)
        checked = work / "submission.ipynb"
        nbformat.write(nb, checked)
        spec = sandbox_spec(out_dir, work, index, submission, settings,
                            caps if caps is not None else sandbox.capabilities())
        job = {"course_template": course.template_dir, "student_id": student_id, "submission": str(checked),
               "work_dir": str(work), "settings": asdict(settings),
               "sandbox_spec": str(spec.write(work / "sandbox.json"))}
        atomic_write_json(work / "job.json", job)
        try:
            outcome = _run_worker(work, settings)
        finally:
            sandbox.kill_user_processes(spec.uid)
        notes += outcome.get("notes", [])
        result.status = outcome["status"]
        result.diagnosis = outcome.get("diagnosis")
        if outcome["status"] == "graded":
            cells = outcome["cells"]
            result.cells = {cell["id"]: (cells.get(cell["id"]) or {}).get("score") for cell in course.cells}
            missing = [cid for cid, score in result.cells.items() if score is None]
            if missing:
                result.status = "not_graded"
                notes.insert(0, f"no score recorded for {', '.join(missing)}")
            else:
                result.score = float(sum(result.cells.values()))
            if outcome.get("feedback_html"):
                dest = out_dir / "feedback" / student_id / f"{config.NOTEBOOK_NAME}.html"
                atomic_write_text(dest, Path(outcome["feedback_html"]).read_text(encoding="utf-8"))
                result.feedback = str(dest)
        else:
            notes.insert(0, outcome.get("reason", "not graded"))
        result.reason = "; ".join(notes)
    except SubmissionProblem as exc:
        result.status, result.reason = "not_graded", str(exc)
    except Exception as exc:  # a bug or an environment problem on our side: report it in the row, keep going
        result.status, result.reason = "error", f"grader error: {type(exc).__name__}: {exc}"
    result.seconds = round(time.monotonic() - started, 2)
    if result.feedback is None:
        _write_note(out_dir, result)
    return result


WORKER_PRELOAD = ["__main__", "tools.course.grade_worker", "nbgrader.converters", "nbgrader.api",
                  "nbconvert.exporters.html", "jupyter_client.manager", "nbclient", "tools.course.sandbox_kernel",
                  "psutil", "tools.course.worker_warmup"]
"""What the worker server imports once per run (about 2.5 s); each submission's worker is a fork of it.
``__main__`` (grade.py) too: a worker would otherwise import it again, as multiprocessing does for its children."""


def _worker_context():
    """Workers are forked from a server that has already imported nbgrader (multiprocessing's forkserver): a
    fresh, single-purpose process per submission, without paying the imports every time."""
    import multiprocessing

    # The server imports WORKER_PRELOAD as it starts, with the environment it inherits (Python 3.11's forkserver
    # does not pass sys.path on): the repository must be on PYTHONPATH wherever the grader was started from.
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(config.REPO_ROOT) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(config.REPO_ROOT), *paths])
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(WORKER_PRELOAD)
    return context


def start_worker_server() -> None:
    """Start the worker server now, so its imports overlap with building the course (optional: the first
    submission starts it otherwise)."""
    from multiprocessing import forkserver

    _worker_context()
    forkserver.ensure_running()


def _worker_main(job: str, log: str, env: dict, cwd: str, memory_limit_mb: int, cpu_seconds: float) -> None:
    """Entry point of a forked worker: what ``Popen(start_new_session=True, preexec_fn=limits, stdout=log,
    stderr=log, env=env, cwd=cwd)`` would set up, then the worker's main."""
    os.setsid()
    _limits(memory_limit_mb, cpu_seconds)()
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    from tools.course import grade_worker

    code = grade_worker.main([job])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # skip the server's inherited exit handlers


def _run_worker(work: Path, settings: Settings) -> dict:
    proc = _worker_context().Process(
        target=_worker_main, name=f"grade-worker-{work.name}", daemon=False,
        args=(str(work / "job.json"), str(work / "worker.log"), worker_env(), str(config.REPO_ROOT),
              settings.memory_limit_mb, settings.submission_timeout * 2))
    proc.start()
    worker = _process(proc.pid)
    try:
        proc.join(timeout=settings.submission_timeout)
        if proc.exitcode is None:
            _kill_tree(worker)
            proc.join()
            return {"status": "not_graded",
                    "reason": f"timed out: grading took longer than {settings.submission_timeout:g} s and was stopped"}
    finally:
        if proc.exitcode is None:  # interrupted while waiting
            _kill_tree(worker)
            proc.join()
        exitcode = proc.exitcode
        proc.close()
        kill_strays(work)  # a kernel left behind by a crashed worker
    out = work / "result.json"
    if not out.is_file():
        tail = (work / "worker.log").read_text(errors="replace").strip().splitlines()[-1:] or ["no output"]
        killed = exitcode is not None and exitcode < 0
        why = f"killed by signal {-exitcode}" if killed else f"exit status {exitcode}"
        return {"status": "error", "reason": f"grading worker failed ({why}; memory limit?): {tail[0][:200]}"}
    return json.loads(out.read_text(encoding="utf-8"))


def _write_note(out_dir: Path, result: Result) -> None:
    """Students whose notebook could not be graded (or whose feedback was withheld) get a short note instead."""
    text = (f"{config.NOTEBOOK_FILE}: {result.status.replace('_', ' ')}\n"
            f"score: {'' if result.score is None else f'{result.score:g} / {result.max_score:g}'}\n"
            f"reason: {result.reason}\n")
    dest = Path(out_dir) / "feedback" / result.student_id / "README.txt"
    atomic_write_text(dest, text)


# --- the class ----------------------------------------------------------------------------------------------------

def find_submissions(submissions_dir: Path) -> tuple[list[tuple[str, Path | None]], list[Result], list[str]]:
    """(student id, notebook or None) per student folder, rows for unusable folders, and warnings."""
    found, bad, warnings = [], [], []
    for entry in sorted(Path(submissions_dir).iterdir(), key=lambda p: p.name):
        if entry.name.startswith("."):
            continue
        if not entry.is_dir():
            warnings.append(f"ignored {entry.name}: expected one folder per student holding {config.NOTEBOOK_FILE}")
            continue
        if not STUDENT_ID.match(entry.name):
            bad.append(Result(entry.name, "not_graded", reason=f"folder name {entry.name!r} is not a usable student id "
                                                             "(letters, digits, '.', '_', '-', '@'; up to 64)"))
            continue
        notebook = entry / config.NOTEBOOK_FILE
        found.append((entry.name, notebook if notebook.is_file() else None))
    return found, bad, warnings


def csv_text(results: list[Result], course: Course) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    cell_ids = [cell["id"] for cell in course.cells]
    writer.writerow(["student_id", "status", "score", "max_score", *cell_ids, "reason", "seconds"])
    for r in sorted(results, key=lambda r: r.student_id):
        fmt = lambda v: "" if v is None else f"{v:g}"  # noqa: E731
        writer.writerow([r.student_id, r.status, fmt(r.score), fmt(course.max_score),
                         *[fmt(r.cells.get(cid)) for cid in cell_ids], r.reason, f"{r.seconds:g}"])
    return buffer.getvalue()


def run_report(caps: dict, settings: Settings, workers: int) -> dict:
    """How this run graded: the protections in force on this machine, and the parallelism."""
    spec = sandbox.Spec(sandbox_dir="", uid=sandbox.UID_BASE if caps["root"] else None, isolate=caps["namespaces"],
                        memory_mb=settings.memory_limit_mb, cpu_s=int(settings.submission_timeout) + 1)
    return {"workers": workers, "sandbox": sandbox.protections(caps, spec)}


def write_results(out_dir: Path, results: list[Result], course: Course, report: dict | None = None) -> None:
    """grades.csv and results.json, each replaced atomically (a reader never sees half a file)."""
    atomic_write_text(Path(out_dir) / "grades.csv", csv_text(results, course))
    atomic_write_json(Path(out_dir) / "results.json",
                      {"max_score": course.max_score, "cells": course.cells, **({"run": report} if report else {}),
                       "students": [asdict(r) for r in sorted(results, key=lambda r: r.student_id)]})


def prepare_out_dir(out_dir: Path, submissions_dir: Path) -> None:
    """Create or reuse ``out_dir``; refuse a non-empty folder that is not a previous grading output."""
    out_dir, submissions_dir = Path(out_dir).resolve(), Path(submissions_dir).resolve()
    if out_dir == submissions_dir or submissions_dir in out_dir.parents:
        raise SubmissionProblem(f"--out {out_dir} must not be inside the submissions folder")
    if out_dir.exists():
        if not out_dir.is_dir():
            raise SubmissionProblem(f"--out {out_dir} exists and is not a folder")
        if any(out_dir.iterdir()) and not (out_dir / MARKER).is_file():
            raise SubmissionProblem(f"--out {out_dir} is not empty and was not written by grade.py; "
                                    "choose an empty or new folder")
        for name in ("feedback", "work", "course"):
            if (out_dir / name).exists():
                shutil.rmtree(out_dir / name)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / MARKER).write_text("written by autograde/grade.py; safe to delete\n")


def kernel_problem() -> str | None:
    """None when the 'python3' kernel the grader runs resolves to this environment."""
    env = worker_env()
    code = ("from jupyter_client.kernelspec import KernelSpecManager as K; import sys; "
            "s=K().get_kernel_spec('python3'); print(s.argv[0])")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        return ("no 'python3' Jupyter kernel in this environment; run: "
                f"{sys.executable} -m ipykernel install --sys-prefix --name python3")
    return None


def load_settings(cell_timeout: float | None = None, **kwargs) -> Settings:
    """Defaults from autograde/nbgrader_config.py (per-cell timeout), overridden by explicit values."""
    cfg = course_config(config.NBGRADER_CONFIG.parent) if cell_timeout is None else None
    if cfg is not None:
        cell_timeout = float(cfg.Execute.get("timeout", 120))
    return Settings(cell_timeout=float(cell_timeout), **kwargs)

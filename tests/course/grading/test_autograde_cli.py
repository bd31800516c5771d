"""grade.py's own checks, without running any notebook: user mistakes give one line and no traceback, deleted
cells go back where they were, stripped metadata is refused, feedback sanitising removes what could leak."""

import copy
import subprocess
import sys

import nbformat
import pytest

from tools.course import config
from tools.course.grading import feedback as fb
from tools.course.grading import MARKER, Settings, SubmissionProblem, prepare_out_dir, read_submission, restore_cells

pytestmark = pytest.mark.nbgrader  # real nbgrader / grade.py / kernels: left out by -m "not nbgrader"

GRADE = [sys.executable, str(config.REPO_ROOT / "autograde" / "grade.py")]


def _run(*args, cwd=None):
    return subprocess.run([*GRADE, *map(str, args)], capture_output=True, text=True, timeout=120, cwd=cwd)


@pytest.mark.parametrize("case", ["missing", "file", "foreign_out", "out_inside", "bad_timeout", "no_out"])
def test_user_mistakes_get_one_line_and_no_traceback(tmp_path, case):
    subs = tmp_path / "subs"
    subs.mkdir()
    out = tmp_path / "out"
    if case == "missing":
        args, needle = (tmp_path / "nope", "--out", out), "does not exist"
    elif case == "file":
        (tmp_path / "f.txt").write_text("x")
        args, needle = (tmp_path / "f.txt", "--out", out), "is not a folder"
    elif case == "foreign_out":
        out.mkdir()
        (out / "thesis.tex").write_text("precious")
        args, needle = (subs, "--out", out), "not written by grade.py"
    elif case == "out_inside":
        args, needle = (subs, "--out", subs / "results"), "is inside the submissions folder"
    elif case == "bad_timeout":
        args, needle = (subs, "--out", out, "--cell-timeout", "0"), "--cell-timeout must be > 0"
    else:
        args, needle = (subs,), "--out"
    proc = _run(*args)
    assert proc.returncode == 1, proc.stderr  # bad input: exit 1, as every command of the project
    assert needle in proc.stderr
    assert "Traceback" not in proc.stderr
    if case == "foreign_out":
        assert (out / "thesis.tex").read_text() == "precious"


@pytest.fixture(scope="module")
def release():
    return nbformat.read(config.RELEASE_NOTEBOOK, as_version=4)


def _ids(nb):
    return [c.get("id") for c in nb.cells]


def test_deleted_cells_go_back_where_they_were(release):
    nb = copy.deepcopy(release)
    removed = {"test-ex1-visible", "hidden-ex0-speed", "hidden-ex3-thresholds", "step1", "setup"}
    nb.cells = [c for c in nb.cells if c.get("id") not in removed]
    restored, notes = restore_cells(nb, release)
    assert _ids(restored) == _ids(release)
    assert any("deleted test cells restored: test-ex1-visible, hidden-ex0-speed, hidden-ex3-thresholds" in n
               for n in notes)


def test_student_cells_stay_and_solutions_are_never_replaced(release):
    nb = copy.deepcopy(release)
    solution = next(c for c in nb.cells if c.get("id") == "ex2-compare")
    nb.cells.remove(solution)
    mine = nbformat.v4.new_code_cell("def compare_prefix_cache_to_baseline(b, c):\n    return {}")
    nb.cells.insert(3, mine)
    restored, notes = restore_cells(nb, release)
    assert "ex2-compare" not in _ids(restored)
    assert mine.source in [c.source for c in restored.cells]
    assert any("solution cells without nbgrader metadata: ex2-compare" in n for n in notes)


def test_stripped_metadata_is_refused_before_grading(release):
    nb = copy.deepcopy(release)
    for cell in nb.cells:
        cell.metadata.pop("nbgrader", None)
    with pytest.raises(SubmissionProblem, match="nbgrader metadata missing"):
        restore_cells(nb, release)


def test_corrupted_metadata_is_reported(release):
    nb = copy.deepcopy(release)
    cell = next(c for c in nb.cells if c.get("id") == "test-ex0-visible")
    cell.metadata["nbgrader"]["points"] = "lots"
    with pytest.raises(SubmissionProblem, match="corrupted"):
        restore_cells(nb, release)


@pytest.mark.parametrize("content, needle", [
    (b"\xff\xfe not text", "not UTF-8"),
    (b"[1, 2, 3]", "not a Jupyter notebook"),
    (b'{"cells": "nope", "metadata": {}, "nbformat": 4, "nbformat_minor": 5}', "not a valid notebook"),
    (b'{"cells": [', "invalid JSON at line 1"),
])
def test_unreadable_files_are_reported(tmp_path, content, needle):
    path = tmp_path / config.NOTEBOOK_FILE
    path.write_bytes(content)
    with pytest.raises(SubmissionProblem, match=needle):
        read_submission(path, Settings())


def test_oversized_file_is_not_read(tmp_path):
    path = tmp_path / config.NOTEBOOK_FILE
    path.write_bytes(b" " * (2 * 2**20))
    with pytest.raises(SubmissionProblem, match="over the 1 MB limit"):
        read_submission(path, Settings(max_notebook_mb=1))


def test_sanitize_drops_everything_that_could_carry_hidden_data(release):
    source = nbformat.read(config.SOURCE_NOTEBOOK, as_version=4)
    graded = copy.deepcopy(source)  # stands in for an autograded notebook: full hidden source, outputs below
    hidden_ids = {c.id for c in source.cells if fb.HIDDEN_BEGIN in c.source}
    hints = set().union(*(fb.hint_strings(c.source) for c in source.cells))
    cells = {c.id: c for c in graded.cells}
    out = nbformat.v4.new_output
    cells["hidden-ex0-keys"].outputs = [out("stream", name="stdout", text="captured [[1, 1, 2, 2], [3, 3]]\n"),
                                        out("error", ename="AssertionError", evalue=sorted(hints)[0], traceback=["tb"])]
    cells["hidden-ex0-blocks"].outputs = [out("error", ename="ValueError", evalue="inputs were [[5, 6, 7]]",
                                              traceback=["_r = simulate_prefix_cache([[5, 6, 7, 8, 9, 10]])"])]
    spy = nbformat.v4.new_code_cell("print(LOG)")
    spy.outputs = [out("stream", name="stdout", text="[[5, 6, 7, 8, 9, 10], [5, 6, 7, 8, 9, 10]]\n")]
    graded.cells.append(spy)  # a student cell after the hidden tests that prints what they recorded
    cells["test-ex0-visible"].outputs = [out("stream", name="stdout", text="x" * 100_000)]
    safe = fb.sanitize(graded, release, hidden_ids, hints, max_chars=1000)
    by_id = {c.get("id"): c for c in safe.cells}
    keys_text = by_id["hidden-ex0-keys"].outputs[0]["text"]
    assert sorted(hints)[0] in keys_text and "captured" not in keys_text
    blocks_text = by_id["hidden-ex0-blocks"].outputs[0]["text"]
    assert "ValueError" in blocks_text and "inputs were" not in blocks_text
    assert "[[5, 6" not in str(safe.cells[-1].outputs)
    assert len(by_id["test-ex0-visible"].outputs[0]["text"]) < 2000
    assert fb.notebook_leaks(safe, fb.hidden_lines(source)) == []
    assert fb.notebook_leaks(graded, fb.hidden_lines(source)) != []  # the check does see the unsanitised copy


def test_an_out_dir_written_by_grade_py_is_reused_and_cleared(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    prepare_out_dir(out, subs)
    assert (out / MARKER).is_file()
    (out / "feedback" / "old_student").mkdir(parents=True)
    (out / "work" / "old_student").mkdir(parents=True)
    (out / "grades.csv").write_text("old\n")
    prepare_out_dir(out, subs)  # a second run: allowed, and yesterday's per-student folders are gone
    assert not (out / "feedback").exists() and not (out / "work").exists()
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    with pytest.raises(SubmissionProblem, match="not written by grade.py"):
        prepare_out_dir(foreign, subs)


def test_colab_saved_notebook_without_cell_ids_is_accepted(release, tmp_path):
    """Colab saves nbformat 4.0 (no cell ids): reading upgrades it, so restored cells (with ids) still validate."""
    import json

    data = json.loads(nbformat.writes(release))
    data["nbformat_minor"] = 0
    for cell in data["cells"]:
        cell.pop("id", None)
    data["cells"] = [c for c in data["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") != "hidden-ex0-keys"]
    data["cells"].append(copy.deepcopy(data["cells"][3]))  # a duplicated cell, as copy-paste makes
    path = tmp_path / config.NOTEBOOK_FILE
    path.write_text(json.dumps(data))
    nb = read_submission(path, Settings())
    restored, notes = restore_cells(nb, release)
    assert any("hidden-ex0-keys" in n for n in notes)
    nbformat.validate(nbformat.reads(nbformat.writes(restored), as_version=4))
    ids = [c.get("id") for c in restored.cells]
    assert len(ids) == len(set(ids)) and all(ids)


def test_solutions_that_lean_on_the_reference_library_are_flagged(release):
    from tools.course.grading import library_use

    assert library_use(release) == []
    nb = copy.deepcopy(release)
    cell = next(c for c in nb.cells if c.get("id") == "ex0-simulate")
    cell.source = ("from tools.prefixbench import simulate_prefix_cache as lib\n"
                   "def simulate_prefix_cache(seqs, block_size=4, capacity_blocks=8):\n"
                   "    return lib(seqs, block_size, capacity_blocks)\n")
    patch = nbformat.v4.new_code_cell("import tools.prefixbench as p\np.simulate_prefix_cache = simulate_prefix_cache")
    nb.cells.append(patch)
    locked = next(c for c in nb.cells if c.get("id") == "self-check")  # read-only: restored by nbgrader anyway
    assert "check_against_library" in locked.source  # the course's own use of the library, in a read-only cell
    assert library_use(nb) == ["ex0-simulate", f"cell {patch.get('id')}"]
    mentions = copy.deepcopy(release)  # naming the library in a docstring or a comment is not using it
    cell = next(c for c in mentions.cells if c.get("id") == "ex0-simulate")
    cell.source = ('def simulate_prefix_cache(seqs, block_size=4, capacity_blocks=8):\n'
                   '    """Like tools.prefixbench, without None."""\n    # tools.prefixbench does it too\n'
                   '    return {}\n%time 1\n')
    assert library_use(mentions) == []
    cell.source += 'exec("import tools.prefixbench")\n'  # a string that is run is code
    assert library_use(mentions) == ["ex0-simulate"]


def test_submission_folders_are_listed_with_unusable_ones_reported(tmp_path):
    """Every student-looking entry is a student to grade or a row with a reason; only other files are warnings
    (tests/course/grading/test_grading_faults.py has the near misses)."""
    from tools.course.grading import find_submissions

    for name in ("alice", "bob", "bad name!", ".hidden", ".ipynb_checkpoints"):
        (tmp_path / name).mkdir()
    (tmp_path / "alice" / config.NOTEBOOK_FILE).write_text("{}")
    (tmp_path / "stray.ipynb").write_text("{}")
    (tmp_path / "class-list.txt").write_text("alice\nbob\n")
    found, bad, warnings = find_submissions(tmp_path)
    assert [tuple(entry[:2]) for entry in found] == [("alice", tmp_path / "alice" / config.NOTEBOOK_FILE),
                                                      ("stray", tmp_path / "stray.ipynb")]
    assert "graded it as student 'stray'" in found[1].note
    reasons = {r.student_id: r.reason for r in bad}
    assert sorted(reasons) == [".hidden", "bad name!", "bob"]
    assert "not a usable student id" in reasons["bad name!"] and "a hidden folder" in reasons[".hidden"]
    assert reasons["bob"] == f"missing {config.NOTEBOOK_FILE}: the folder is empty"
    assert len(warnings) == 1 and "class-list.txt" in warnings[0]


def test_the_diagnosis_run_gives_each_solution_cell_the_cell_timeout(release, tmp_path):
    """A solution cell that loops at definition time is abandoned after the per-cell timeout (as nbgrader does),
    the other functions are still probed, and the run ends well before any submission limit."""
    import time

    from tools.course.diagnosis import graded as gd
    from course_fixtures.make_class import _append_to, with_solutions

    looping = _append_to(with_solutions(release, {}), "ex1-summarize",
                         "while True:\n    try:\n        pass\n    except Exception:\n        pass", prepend=True)
    folder, cells = gd.stage(tmp_path, gd.solution_sources(looping, release))
    started = time.monotonic()
    proc = subprocess.run(gd.boot_command(sys.executable, folder, cells, 2), capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(config.REPO_ROOT), "PATH": "/usr/bin:/bin"})
    report = gd.parse_report(proc.stdout)
    assert time.monotonic() - started < 60
    assert {(f["exercise"], f["code"]) for f in report} == {("summarize_prefix_cache", "missing_function")}
    skipped = gd.solution_sources(looping, release, skip={"ex1-summarize"})
    assert len(skipped) == len(gd.solution_sources(looping, release)) - 1


def _boot_capping(monkeypatch, per_cell: int, per_notebook: int) -> tuple[dict, list]:
    """The capping part of the sandboxed kernel's boot code (kernel_boot.KERNEL_BOOT), run here with the real
    ipykernel classes but writes and publishes recorded instead of sent."""
    from tools.course.sandbox.kernel_boot import KERNEL_BOOT

    boot = KERNEL_BOOT.split("iostream.OutStream.write = _capped")[0]  # not the patching, not the kernel start
    boot = boot.replace('sys.modules["debugpy"] = None', "")  # a kernel-process setting, not for this one
    monkeypatch.setattr(sys, "argv", ["kernel", str(per_cell), str(per_notebook)])
    namespace: dict = {}
    exec(compile(boot, "KERNEL_BOOT", "exec"), namespace)  # noqa: S102 - the project's own boot code
    sent: list[tuple[str, object]] = []
    cell = lambda stream: getattr(stream, "parent_header", {}).get("msg_id")  # noqa: E731
    namespace["_write"] = lambda stream, text: sent.append((cell(stream), text))
    namespace["_publish"] = lambda stream, data, metadata=None, **kw: sent.append((cell(stream), data))
    namespace["_result"] = lambda hook, data, md=None: sent.append((cell(hook), data))
    return namespace, sent


def test_rich_output_is_capped_whole_within_the_same_allowance(monkeypatch):
    """display() and a cell's result count against the same allowance as print, and go whole or not at all."""
    namespace, sent = _boot_capping(monkeypatch, per_cell=10, per_notebook=100)

    class Stream:
        parent_header = {"msg_id": "cell-1"}

    stream = Stream()
    namespace["_capped_publish"](stream, {"text/plain": "12345"})
    namespace["_capped_publish"](stream, {"text/plain": "1234567890"})  # does not fit in what is left: dropped
    namespace["_capped"](stream, "abc")  # the cell's allowance is spent: dropped, no second note
    stream.parent_header = {"msg_id": "cell-2"}
    namespace["_capped_result"](stream, {"text/plain": "x" * 50, "text/html": "<b>x</b>"})
    namespace["_capped_result"](stream, {})  # a cell with no result is not a cut
    bundles = [data for _, data in sent if isinstance(data, dict)]
    notes = [text for _, text in sent if isinstance(text, str)]
    assert bundles[0] == {"text/plain": "12345"}
    assert len(notes) == 1 and "rest of this cell" in notes[0]
    assert bundles[1] == {"text/plain": "[输出超过单元格上限，其余丢弃 | output limit reached: the rest of this cell's "
                                        "output is dropped]"}
    assert bundles[2] == {} and len(bundles) == 3


def test_kernel_output_cap_is_per_cell_with_a_notebook_total(monkeypatch):
    """The capping write the sandboxed kernel boots with (kernel_boot.KERNEL_BOOT), run on a stand-in stream:
    each cell gets its own allowance, the notebook a total, and each cut is said once."""
    namespace, sent = _boot_capping(monkeypatch, per_cell=10, per_notebook=25)

    class Stream:
        parent_header = {"msg_id": "cell-1"}

    stream = Stream()
    capped = namespace["_capped"]
    assert capped(stream, "abcdef") == 6 and capped(stream, "ghijkl") == 6  # the caller always sees success
    assert capped(stream, "more") == 4
    stream.parent_header = {"msg_id": "cell-2"}
    assert capped(stream, "0123456789xyz") == 13
    stream.parent_header = {"msg_id": "cell-3"}
    capped(stream, "ABCDEFGH")
    capped(stream, "after the total")
    by_cell: dict[str, str] = {}
    for cell, text in sent:
        by_cell[cell] = by_cell.get(cell, "") + text
    assert by_cell["cell-1"].startswith("abcdefghij") and by_cell["cell-1"].count("output limit reached") == 1
    assert "rest of this cell" in by_cell["cell-1"] and "more" not in by_cell["cell-1"]
    assert by_cell["cell-2"].startswith("0123456789") and "xyz" not in by_cell["cell-2"]
    assert by_cell["cell-3"].startswith("ABCDE") and "notebook output limit reached" in by_cell["cell-3"]
    assert "F" not in by_cell["cell-3"].split("\n")[0] and "after the total" not in by_cell["cell-3"]


def test_processes_left_by_a_submission_are_found_by_its_work_folder(tmp_path):
    """A crashed worker's kernel is adopted by init: the grader still finds it, by the work folder its command
    line names, and leaves other processes alone."""
    import psutil

    from tools.course.grading import kill_strays

    work, other = tmp_path / "work" / "bob", tmp_path / "work" / "bobby"
    sleep = "import time; time.sleep(120)"
    mine = subprocess.Popen([sys.executable, "-c", sleep, str(work / "sandbox" / "connection.json")])
    theirs = subprocess.Popen([sys.executable, "-c", sleep, str(other / "sandbox" / "connection.json")])
    try:
        assert kill_strays(work) == 1
        assert not psutil.pid_exists(mine.pid)  # killed and reaped
        assert psutil.Process(theirs.pid).is_running() and theirs.poll() is None
    finally:
        for proc in (mine, theirs):
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("status, reason, expected, unexpected", [
    ("not_graded", "nbgrader metadata missing: every cell", ["怎么办 | What to do", "Jupyter", "Colab", "重新提交",
                                                             "download a fresh copy of the released notebook"],
     ["grader's side"]),
    ("not_graded", "69_prefix_cache_benchmark.ipynb is not a notebook (invalid JSON at line 1, column 2)",
     ["is not a usable .ipynb", "Submit that .ipynb file again"], ["fresh copy"]),
    ("not_graded", "the kernel died while running the notebook (os._exit, exit(), a crash or the memory limit)",
     ["exits the kernel (sys.exit, os._exit)", "What to do"], ["fresh copy"]),
    ("error", "grader error: OSError: disk", ["评分出错 | grader error", "problem on the grader's side"],
     ["What to do"]),
    ("graded", "feedback withheld: the rendered page shows hidden-test text", ["已评分 | graded", "3 / 26",
                                                                               "ask your teacher"], ["What to do"]),
])
def test_a_student_without_a_feedback_page_is_told_what_happened_and_what_to_do(tmp_path, status, reason,
                                                                                  expected, unexpected):
    from tools.course.grading import Result, write_note

    write_note(tmp_path, Result("ada", status, 3.0 if status == "graded" else None, 26.0, reason=reason))
    note = (tmp_path / "feedback" / "ada" / "README.txt").read_text(encoding="utf-8")
    assert f"原因 | reason: {reason}\n" in note
    for text in expected:
        assert text in note, (text, note)
    for text in unexpected:
        assert text not in note, (text, note)

"""The student distribution (``release --student-dir``): self-contained, no solution, hidden test, hidden probe,
course source or grading code; the check catches each kind of leak; the notebook runs from it alone."""

import json
import os
import shutil
import subprocess
import sys

import nbformat
import pytest
from nbclient import NotebookClient

from tools.course import config
from tools.course.build import release, student
from tools.course.content import lesson

from course_fixtures.variants import REFERENCE

pytestmark = pytest.mark.nbgrader  # real nbgrader / grade.py / kernels: left out by -m "not nbgrader"


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return student.build_tree(tmp_path_factory.mktemp("student") / "tree")


def _files(root):
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_tree_is_clean_and_has_what_the_notebook_needs(tree):
    assert student.problems(tree) == []
    files = _files(tree)
    for needed in (f"notebooks/{config.NOTEBOOK_FILE}", f"notebooks/en/{config.NOTEBOOK_FILE}", "tools/prefixbench/__init__.py",
                   "tools/inference_project_runtime.py", "tools/course/diagnosis/engine/visible_probes.py",
                   "benchmarks/workloads/prefix_reuse.jsonl", "requirements.txt", "README.md", "colab_links.md"):
        assert needed in files, needed
    course = [f for f in files if f.startswith("tools/course/")]
    assert not [f for f in course if "/content/" in f or "/grading/" in f or "/build/" in f or "/sandbox/" in f
                or f.endswith(("hidden_probes.py", "graded.py", "config.py", "release.py"))], course
    assert not [f for f in files if f.split("/")[0] in ("solutions", "autograde", "tests", "docs")]
    assert (tree / "notebooks" / config.NOTEBOOK_FILE).read_bytes() == config.RELEASE_NOTEBOOK.read_bytes()


def _leaky(tree, tmp_path, name, edit):
    copy = shutil.copytree(tree, tmp_path / name)
    edit(copy)
    return student.problems(copy)


def _append(path, text):
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


@pytest.mark.parametrize("name, edit, expected", [
    ("solution-in-library", lambda t: _append(t / "tools/prefixbench/cache/blocks.py",
                                               "\n#    victim, _ = evictable.popitem(last=False)\n"), "solution/hidden line"),
    ("hidden-test-in-readme", lambda t: _append(t / "README.md",
                                                 '\n_r = simulate_prefix_cache([], block_size=4, capacity_blocks=2)\n'),
     "solution/hidden line"),
    ("hidden-probe-id", lambda t: _append(t / "colab_links.md", "\nsee simulate.hidden.partial_tail\n"),
     "hidden-probe text"),
    ("hidden-probe-file", lambda t: shutil.copyfile(config.REPO_ROOT / student.HIDDEN_PROBES_FILE,
                                                    t / student.HIDDEN_PROBES_FILE), "hidden probes"),
    ("course-source", lambda t: shutil.copytree(config.REPO_ROOT / "tools/course/content", t / "tools/course/content",
                                                ignore=shutil.ignore_patterns("__pycache__")), "course source"),
    ("solutions", lambda t: shutil.copytree(config.SOLUTIONS_DIR, t / "solutions"), "solutions/"),
    ("marker-in-notebook", lambda t: _plant_in_notebook(t, "### BEGIN HIDDEN TESTS"), "marker"),
    ("hidden-line-in-output", lambda t: _plant_in_notebook(
        t, "print(1)", output="_rng = _random.Random(69_2025)"), "solution/hidden line"),
])
def test_each_kind_of_leak_is_caught(tree, tmp_path, name, edit, expected):
    found = _leaky(tree, tmp_path, name, edit)
    assert any(expected in p for p in found), found


def _plant_in_notebook(tree, source, output=None):
    path = tree / "notebooks" / config.NOTEBOOK_FILE
    nb = nbformat.read(path, as_version=4)
    cell = nbformat.v4.new_code_cell(source)
    if output:
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=output + "\n")]
    nb.cells.append(cell)
    nbformat.write(nb, path)


def test_tree_imports_its_own_copy_and_has_visible_probes_only(tree):
    code = ("import json, tools.prefixbench as p, tools.course.diagnosis as d\n"
            "try:\n    d.diagnose({}, ('visible', 'hidden'))\n    refused = False\n"
            "except ValueError:\n    refused = True\n"
            "print(json.dumps([p.__file__, sorted({x.visibility for x in d.PROBES}), d.HIDDEN_AVAILABLE, refused]))")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", code], cwd=tree, env=env, capture_output=True, text=True, check=True)
    library, visibilities, hidden_available, refused = json.loads(out.stdout)
    assert library.startswith(str(tree)), library
    assert visibilities == ["visible"] and hidden_available is False and refused is True


def test_student_dir_keeps_git_refuses_foreign_folders(tmp_path, capsys):
    dest = tmp_path / "clone"
    (dest / ".git").mkdir(parents=True)
    (dest / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    assert release.main(["--student-dir", str(dest)]) == 0
    assert (dest / ".git" / "HEAD").is_file() and (dest / student.MARKER_FILE).is_file()
    (dest / "stale.txt").write_text("from an older release")
    student.write(dest)  # its own tree: rewritten, the stale file gone
    assert not (dest / "stale.txt").exists() and (dest / ".git" / "HEAD").is_file()
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    capsys.readouterr()
    assert release.main(["--student-dir", str(foreign)]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(foreign) in err and "Traceback" not in err, err
    assert (foreign / "notes.txt").read_text() == "mine"
    assert release.main(["--student-dir", str(config.REPO_ROOT / "student-copy")]) == 1
    assert "inside the course repository" in capsys.readouterr().err


def test_notebook_runs_from_the_tree_alone(tree, tmp_path):
    """The release notebook, answers filled in, run inside a copy of the tree (no PREFIXBENCH_REPO, no
    PYTHONPATH): setup finds the tree, the visible tests and the self-checks pass against its library."""
    copy = shutil.copytree(tree, tmp_path / "tree")
    nb = nbformat.read(copy / "notebooks" / config.NOTEBOOK_FILE, as_version=4)
    keep = ["setup", "exercise-imports", *REFERENCE, "test-ex0-visible", "test-ex1-visible", "test-ex2-visible",
            "test-ex3-visible", "test-seed-template", "diagnose", "self-check"]
    cells = {c.id: c for c in nb.cells}
    nb.cells = [cells[i] for i in keep]
    for grade_id, source in REFERENCE.items():
        cells[grade_id].source = source
    nb.cells.append(nbformat.v4.new_code_cell("import tools.prefixbench, tools.course.diagnosis as d\n"
                                              "print(tools.prefixbench.__file__, d.HIDDEN_AVAILABLE)"))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PREFIXBENCH_REPO", "NBGRADER_EXECUTION")}
    env.update({"MPLBACKEND": "agg", "HOME": str(tmp_path)})
    NotebookClient(nb, timeout=60, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(copy / "notebooks")}}).execute(env=env)
    errors = {c.id: o.get("evalue") for c in nb.cells for o in c.outputs if o.output_type == "error"}
    assert errors == {}, errors
    last = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    assert last.startswith(str(copy)) and last.strip().endswith("False"), last
    assert lesson.source("exercise-imports").strip() in cells["exercise-imports"].source

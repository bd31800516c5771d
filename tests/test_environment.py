"""environment.yml (conda) and the pip requirements files must pin the same packages."""

import re
from pathlib import Path

import yaml

REQUIREMENT_FILES = ("requirements.txt", "requirements-dev.txt", "requirements-backend.txt")


def _pins(lines):
    pins = {}
    for line in lines:
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue  # options such as -r FILE or --extra-index-url
        match = re.fullmatch(r"([A-Za-z0-9_.\-\[\]]+)==([^\s;]+)", line)
        assert match, f"unpinned requirement: {line!r}"
        pins[match.group(1).lower().replace("_", "-")] = match.group(2)
    return pins


def test_every_requirement_is_pinned_and_matches_environment_yml(repo_root):
    pip_pins = {}
    for name in REQUIREMENT_FILES:
        for package, version in _pins((repo_root / name).read_text().splitlines()).items():
            assert package not in pip_pins, f"{package} pinned twice"
            pip_pins[package] = version
    env = yaml.safe_load((repo_root / "environment.yml").read_text())
    pip_section = next(item["pip"] for item in env["dependencies"] if isinstance(item, dict))
    assert _pins(pip_section) == pip_pins
    assert "python=3.11" in env["dependencies"]


def test_readme_starts_with_the_two_commands_and_ci_runs_the_test_one(repo_root):
    readme = (repo_root / "README.md").read_text()
    commands = re.findall(r"^(bash tools/run\.sh \w+)", readme, flags=re.M)
    assert commands[:2] == ["bash tools/run.sh main", "bash tools/run.sh test"]
    assert readme.index("bash tools/run.sh test") < 1500  # they open the README
    assert "bash tools/run.sh test" in (repo_root / ".ci" / "run").read_text()


def _pyproject(repo_root):
    import tomllib

    return tomllib.loads((repo_root / "pyproject.toml").read_text())["project"]


def test_pyproject_groups_name_the_pinned_requirements(repo_root):
    project = _pyproject(repo_root)
    groups = project["optional-dependencies"]
    files = {"student": "requirements.txt", "instructor": "requirements-dev.txt",
             "backend": "requirements-backend.txt"}
    for group, name in files.items():
        assert _pins(groups[group]) == _pins((repo_root / name).read_text().splitlines()), group
    assert _pins(project["dependencies"]) == _pins(groups["student"])  # a plain install is the student side


def test_the_console_script_runs_the_same_subcommands_as_python_m(repo_root):
    import subprocess
    import sys

    script = Path(sys.executable).with_name("prefixbench")
    assert script.is_file(), "tools/setup.sh installs the project itself (pip install -e .)"
    assert _pyproject(repo_root)["scripts"]["prefixbench"] == "tools.prefixbench.cli:main"
    args = ["simulate", "--block-size", "128", "--last-token-rule", "--json"]
    by_script = subprocess.run([str(script), *args], capture_output=True, text=True, cwd="/", timeout=120)
    by_module = subprocess.run([sys.executable, "-m", "tools.prefixbench", *args], capture_output=True,
                               text=True, cwd="/", timeout=120)
    assert by_script.returncode == by_module.returncode == 0, by_script.stderr + by_module.stderr
    assert by_script.stdout == by_module.stdout and '"reused_tokens": 18432' in by_script.stdout
    bad = subprocess.run([str(script), "simulate", "--policy", "fifo"], capture_output=True, text=True, cwd="/")
    assert bad.returncode == 1 and bad.stderr.strip().splitlines() == ["error: policy: unknown policy 'fifo'; "
                                                                        "choose one of lru, seed"]


def test_the_main_command_reads_relative_paths_from_the_callers_folder(repo_root, tmp_path):
    """``bash /path/to/tools/run.sh main --out results`` from another folder writes ``./results`` there, not inside
    the repository (run.sh changes to the repository for its setup, then back for the run: a review helper's
    finding). Servers the test started stand in for vLLM (``--g0-endpoint`` / ``--g1-endpoint``)."""
    import json
    import subprocess

    from backend_fixtures import two_fake_servers, write_workload

    write_workload(tmp_path / "w.jsonl", 3, max_tokens=2)
    with two_fake_servers() as (g0, g1):
        done = subprocess.run(["bash", str(repo_root / "tools" / "run.sh"), "main", "--model", "m", "--warmup", "0",
                               "--g0-endpoint", g0.base_url, "--g1-endpoint", g1.base_url,
                               "--workload", "w.jsonl", "--out", "results", "--json"],
                              cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 2), done.stderr[-2000:]
    summary = json.loads((tmp_path / "results" / "69_prefix_cache.json").read_text())
    assert summary["config"]["workload"] == "w.jsonl" and summary["config"]["num_prompts"] == 3
    assert not (repo_root / "results").exists()

"""environment.yml (conda) and the pip requirements files must pin the same packages."""

import re

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

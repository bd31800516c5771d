"""What the sandbox hides, decided on the grader's side (no namespaces needed): every top-level folder but the
system ones, links followed, so a copy of the course anywhere on the machine stays out of reach."""

from __future__ import annotations

import os
from pathlib import Path

from tools.course.sandbox import host


def test_every_top_level_folder_but_the_system_ones_is_hidden(tmp_path):
    root = tmp_path / "root"
    for name in ("usr/lib", "etc", "work/main", "check/work/main", "opt", "srv"):
        (root / name).mkdir(parents=True)
    (root / "lib").symlink_to("usr/lib")  # a merged /usr: stays visible with its target
    (root / "data").symlink_to("srv")  # a link to a hidden folder hides that folder
    (root / "dangling").symlink_to("nowhere")
    (root / ".dockerenv").write_text("")  # files at the top cannot be covered and hold no course
    found = host.outside_system_roots(root)
    assert found == sorted({(root / n).resolve() for n in ("check", "opt", "srv", "work")}), found


def test_the_real_layout_hides_the_repository_and_keeps_the_python_installation():
    from tools.course.config import REPO_ROOT

    kept, hidden = host._layout([], [])
    assert str(REPO_ROOT.resolve()) in hidden or any(REPO_ROOT.resolve().is_relative_to(h) for h in hidden)
    tops = {str(Path("/", d).resolve()) for d in os.listdir("/") if Path("/", d).is_dir()}
    visible = tops - set(hidden)
    assert visible <= {str(Path("/", s).resolve()) for s in host.SYSTEM_ROOTS} | {"/"}, visible
    assert str(Path(os.sys.prefix)) in kept

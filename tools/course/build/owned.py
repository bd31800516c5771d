"""Folders a course command may empty or replace: only one it wrote itself, and never one that holds, is, or sits
inside what must survive (the course repository, the submissions, the slices being merged).

Every command that removes files (``release --student-dir``, ``grade.py``, ``grade.py merge``) asks two things
first, on real paths (links resolved, so a second spelling of a folder is the same folder):

- ``clash``: is the target at, inside, or around a protected path? Removing a folder that holds the repository
  or the class deletes them; writing inside them mixes outputs into inputs.
- ``ownership_problem``: is the target empty, or marked by a marker file that records the target's own real
  path? A marker copied or moved along with a folder's contents (into a workspace that holds other things)
  names another path, so it does not make the new place ours. The marker holds a SHA-256 digest of the path,
  not the path: the student tree's marker is published, and an instructor's home folder is nobody's business.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

from tools.prefixbench.core.files import atomic_write_json

MARKER_BYTES = 4096
"""A marker is a line of JSON; a larger file is not one of ours."""


def real(path: str | os.PathLike) -> Path:
    """The path with every link resolved and made absolute (it need not exist)."""
    return Path(os.path.realpath(os.fspath(path)))


def _within(inner: Path, outer: Path) -> bool:
    return inner == outer or outer in inner.parents


def clash(target: str | os.PathLike, protected: dict[str, Path], may_be_inside: frozenset[str] = frozenset()
          ) -> str | None:
    """How ``target`` touches the first protected path it touches ("is the course repository (/r)", "holds the
    submissions folder (/s)", "is inside ..."), or None. ``may_be_inside``: labels a target may sit inside."""
    mine = real(target)
    for label, path in protected.items():
        theirs = real(path)
        if mine == theirs:
            return f"is {label} ({theirs})"
        if _within(theirs, mine):
            return f"holds {label} ({theirs})"
        if _within(mine, theirs) and label not in may_be_inside:
            return f"is inside {label} ({theirs})"
    return None


def folder_digest(folder: str | os.PathLike) -> str:
    """What a marker records of the folder it was written for: a digest of its real path."""
    return "sha256:" + hashlib.sha256(os.fsencode(real(folder))).hexdigest()


def write_marker(folder: Path, name: str, written_by: str) -> Path:
    """Mark ``folder`` as written by ``written_by``, for this very folder (a digest of its real path)."""
    return atomic_write_json(Path(folder) / name, {"written_by": written_by, "folder": folder_digest(folder)})


def _marker_data(path: Path) -> Any:
    """The marker's JSON, read without following a link; None when it is not a small regular file of JSON."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > MARKER_BYTES:
            return None
        try:
            return json.loads(handle.read(MARKER_BYTES).decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return None


def marker_problem(folder: Path, name: str) -> str | None:
    """None when ``folder`` holds the marker ``name`` and it records ``folder``'s own real path; else why not."""
    path = Path(folder) / name
    if not os.path.lexists(path):
        return f"holds no {name}"
    data = _marker_data(path)
    if not isinstance(data, dict) or not isinstance(data.get("folder"), str):
        return f"holds a {name} that records no folder (an older version wrote it, or it is not ours)"
    if data["folder"] != folder_digest(folder):
        return f"holds a {name} written for another folder (copied or moved here?)"
    return None


def ownership_problem(folder: Path, name: str, keep: frozenset[str] = frozenset()) -> str | None:
    """None when ``folder`` is missing, empty but for ``keep``, or marked as ours for this path; else why not."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    if all(entry.name in keep for entry in folder.iterdir()):
        return None
    return marker_problem(folder, name)

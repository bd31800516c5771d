"""Reading a file that someone else laid out (a submission in the class folder, a page in a slice being merged)
without being led outside it.

The grader runs trusted, so whatever it reads it may copy into a row, a work folder or the merged feedback. A
path inside the class could be a symbolic link to ``solutions/`` or to another student's notebook, a folder on the
way could be a link, a FIFO would block the read, a device could be anything. So a file is read only when it is
reached from the root through real folders, every component opened with ``O_NOFOLLOW`` relative to the one
before (a link swapped in after a check is refused by the open itself), and is a regular file with one name.

The rule for hard links: a regular file with more than one name (``st_nlink > 1``) is refused too. Its other name
may be outside the class (a hard link to the solutions), and telling "outside" from "inside" would mean searching
the file system for the other name; a file handed in has one name. A class copied with ``cp -al`` or a
hard-linking backup tool is refused as a whole, each row saying why; copy it with ``cp -r`` instead.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePath
from typing import BinaryIO

NOT_REGULAR = "not a regular file inside the class folder"
"""What a row says of an entry that is not read (followed by what it is)."""
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY  # O_NONBLOCK: a FIFO never blocks the open


class NotRegular(Exception):
    """The path is not a regular file reached without links; the message says what it is instead."""


class Missing(NotRegular):
    """Nothing at all is at the path (or on the way to it)."""


def kind(mode: int) -> str:
    """What a non-regular entry is, in words."""
    for test, words in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
                        (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"), (stat.S_ISDIR, "a folder"),
                        (stat.S_ISREG, "a file")):
        if test(mode):
            return words
    return "of an unknown kind"


def _parts(root: Path, path: Path) -> tuple[str, ...]:
    try:
        parts = PurePath(path).relative_to(root).parts
    except ValueError:
        raise NotRegular(f"outside {root}") from None
    if not parts or any(part in ("..", ".") for part in parts):
        raise NotRegular(f"outside {root}")
    return parts


def _open_dir(name: str, dir_fd: int | None, shown: str) -> int:
    """A folder on the way, opened without following a link."""
    try:
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        raise Missing(f"{shown} does not exist") from None
    if not stat.S_ISDIR(info.st_mode):
        raise NotRegular(f"{shown} is {kind(info.st_mode)}")
    return os.open(name, _DIR_FLAGS, dir_fd=dir_fd)


def _checked(fd: int, shown: str) -> None:
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        raise NotRegular(f"{shown} is {kind(info.st_mode)}")
    if info.st_nlink > 1:
        raise NotRegular(f"{shown} is a hard link (the file has {info.st_nlink} names, perhaps outside)")


def _dir_fd(root: Path, parts: tuple[str, ...]) -> int:
    """The folder ``root/parts...`` opened, each component without following a link (NotRegular otherwise)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for depth, part in enumerate(parts):
            next_fd = _open_dir(part, fd, "/".join(parts[:depth + 1]))
            os.close(fd)
            fd = next_fd
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_file(dir_fd: int, name: str, shown: str) -> int:
    try:
        return os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except FileNotFoundError:
        raise Missing(f"{shown} does not exist") from None
    except OSError:  # ELOOP: a link; ENXIO and others: a socket, a device that refuses
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        raise NotRegular(f"{shown} is {kind(info.st_mode)}") from None


def open_inside(root: str | os.PathLike, path: str | os.PathLike) -> BinaryIO:
    """``path`` (under ``root``) opened for reading, or NotRegular: a link on the way or at the end, a FIFO,
    a device, a socket, a folder, a file with several names, a path outside ``root``. ``root`` itself may be a
    link (the user named it)."""
    root, path = Path(root), Path(path)
    parts = _parts(root, path)
    dir_fd = _dir_fd(root, parts[:-1])
    try:
        fd = _open_file(dir_fd, parts[-1], "/".join(parts))
    finally:
        os.close(dir_fd)
    try:
        _checked(fd, "/".join(parts))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def real_folder_problem(root: str | os.PathLike, path: str | os.PathLike) -> str | None:
    """None when ``path`` is a folder reached from ``root`` through real folders (no link on the way or at the
    end); else what it is instead."""
    root, path = Path(root), Path(path)
    try:
        os.close(_dir_fd(root, _parts(root, path)))
    except NotRegular as exc:
        return str(exc)
    return None

"""Every file the project writes or reads line by line: atomic writes, strict JSON, checked output paths.

- A write goes to a temporary file in the same folder and is renamed into place: readers see the old file or
  the whole new one, never a torn one.
- JSON is strict: a non-finite float (``NaN``, ``Infinity``) is not JSON, so ``to_strict_json`` refuses it
  instead of writing it; code that can meet one turns it into ``null`` with a reason first.
- ``check_outputs`` runs before any work: an output that is a folder, sits under a file, cannot be written, or
  names one of the inputs is bad input (exit 1), not a traceback after the work is done.
- JSON is shallow: a document nested deeper than ``MAX_JSON_DEPTH`` is bad input, found before it is parsed,
  so no recursive reader meets it.
- ``keep_previous`` copies an existing result aside before a rerun overwrites it, so a failed or interrupted
  rerun never leaves less than there was; ``keep_name`` is where, and ``check_keep_target`` refuses to replace a
  file there that the project did not write. ``set_aside`` does the same for a folder (a sweep's ``points/``),
  after ``check_removable`` made sure the folder is the project's own (its marker names it) and holds no input.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from itertools import accumulate
from pathlib import Path
from typing import Any, Iterator, Mapping, NoReturn

from .errors import InputError

MAX_JSON_DEPTH = 64
"""Deeper JSON is refused at load: nothing the project reads nests past a dozen levels, and a document nested
200,000 deep would overflow a recursive reader (``RecursionError``) instead of naming the file."""

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def to_strict_json(data: Any, *, indent: int | None = 2) -> str:
    """``json.dumps`` that refuses NaN / Infinity and text that cannot be UTF-8 (a lone surrogate)."""
    text = json.dumps(data, ensure_ascii=False, indent=indent, allow_nan=False,
                      separators=None if indent else (",", ":"))
    text.encode("utf-8")  # raises UnicodeEncodeError on a lone surrogate before anything is written
    return text


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` so that readers see the old file or the whole new one, never a torn one."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """``atomic_write_text`` for bytes (a rendered PNG): a temporary file in the same folder, renamed into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; results and workloads are meant to be shared
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def atomic_write_json(path: str | os.PathLike, data: Any) -> Path:
    return atomic_write_text(path, to_strict_json(data) + "\n")


def read_jsonl(path: str | os.PathLike) -> Iterator[tuple[str, dict]]:
    """Yield ``(where, object)`` per non-blank line; ``where`` is ``file:line`` for error messages."""
    path = Path(path)
    if not path.is_file():
        raise InputError(str(path), "file not found" if not path.exists() else "is not a regular file")
    try:
        with path.open("r", encoding="utf-8") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                where = f"{path.name}:{number}"
                check_depth(where, line)
                try:
                    obj = json.loads(line, parse_constant=_refuse_constant)
                except (json.JSONDecodeError, ValueError, RecursionError) as exc:
                    detail = (f"{exc.msg} at column {exc.colno}" if isinstance(exc, json.JSONDecodeError)
                              else f"nested more than {MAX_JSON_DEPTH} levels deep"
                              if isinstance(exc, RecursionError) else exc)
                    raise InputError(where, f"not valid JSON ({detail})") from None
                if not isinstance(obj, dict):
                    raise InputError(where, f"each line must be a JSON object, got {type(obj).__name__}")
                yield where, obj
    except UnicodeDecodeError as exc:
        raise InputError(str(path), f"is not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset "
                                    f"{exc.start})") from None
    except OSError as exc:
        raise InputError(str(path), f"cannot be read ({exc.strerror or exc})") from None


def read_json(path: str | os.PathLike) -> Any:
    """One strict JSON document (NaN / Infinity refused, at most ``MAX_JSON_DEPTH`` deep), or an ``InputError``
    naming the file."""
    path = Path(path)
    text = _read_text(path)
    check_depth(str(path), text)
    try:
        return json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise InputError(str(path), f"nested more than {MAX_JSON_DEPTH} levels deep") from None
    except ValueError as exc:
        raise InputError(str(path), f"not a readable JSON result ({exc})") from None


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(str(path), "file not found") from None
    except IsADirectoryError:
        raise InputError(str(path), "is a folder, not a file") from None
    except UnicodeDecodeError:
        raise InputError(str(path), "is not UTF-8 text") from None
    except OSError as exc:
        raise InputError(str(path), f"cannot be read ({exc.strerror or exc})") from None


def json_depth(text: str) -> int:
    """How deep ``[`` and ``{`` nest outside strings, without parsing (no recursion, C-speed scans)."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0)


def check_depth(where: str, text: str) -> None:
    """``InputError`` when ``text`` nests deeper than ``MAX_JSON_DEPTH``; a text with fewer brackets than that
    cannot, so most lines cost two ``count`` calls."""
    if text.count("[") + text.count("{") > MAX_JSON_DEPTH and json_depth(text) > MAX_JSON_DEPTH:
        raise InputError(where, f"nested more than {MAX_JSON_DEPTH} levels deep")


def _refuse_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def check_output_file(field: str, path: str | os.PathLike) -> Path:
    """``path`` can be written as a file: not a folder, not under a file, its folder writable or creatable."""
    path = Path(path)
    if path.is_dir():
        raise InputError(field, f"{path} is a folder; give a file name")
    if path.exists() and not os.access(path, os.W_OK):
        raise InputError(field, f"{path} is not writable")
    _check_folder(field, path.parent)
    return path


def check_output_folder(field: str, path: str | os.PathLike) -> Path:
    """``path`` is a folder (or can be created as one) that files can be written into."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise InputError(field, f"{path} is a file, not a folder")
    _check_folder(field, path)
    return path


def _check_folder(field: str, folder: Path) -> None:
    existing = folder
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(field, f"{folder} cannot be created: {existing} is a file")
    if not os.access(existing, os.W_OK | os.X_OK) or _read_only_mount(existing):
        raise InputError(field, f"{existing} is not writable")


def _read_only_mount(folder: Path) -> bool:
    """``os.access`` says yes to root on a read-only file system; ``statvfs`` knows better."""
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def check_outputs_spare_inputs(outputs: Mapping[str, str | os.PathLike | None],
                               inputs: Mapping[str, str | os.PathLike | None]) -> None:
    """No output may be one of the inputs (or another output): writing it would destroy what it reads."""
    seen: dict[Path, str] = {}
    for field, path in inputs.items():
        if path is not None:
            seen.setdefault(_identity(path), field)
    for field, path in outputs.items():
        if path is None:
            continue
        key = _identity(path)
        if key in seen:
            raise InputError(field, f"{path} is also {seen[key]}; writing it would destroy that file")
        seen[key] = field


def _identity(path: str | os.PathLike) -> Path:
    return Path(os.path.realpath(Path(path).expanduser()))


def keep_name(path: str | os.PathLike) -> Path:
    """Where a rerun keeps the previous ``NAME.json``: ``NAME.previous.json`` beside it."""
    path = Path(path)
    return path.with_name(f"{path.stem}.previous{path.suffix}")


def check_keep_target(field: str, path: str | os.PathLike) -> None:
    """Before any work: when ``path`` exists, a rerun replaces ``keep_name(path)`` with its copy, so a file there
    must be one the project wrote (a JSON object whose ``schema`` is ``prefixbench.*``), never someone's file
    that happens to share the name. Refusing is one line; guessing would lose that file."""
    path, kept = Path(path), keep_name(path)
    if not path.is_file() or not (kept.exists() or kept.is_symlink()):
        return
    check_output_file(field, kept)
    try:
        data = read_json(kept)
    except InputError:
        data = None
    if kept.is_symlink() or not (isinstance(data, dict) and str(data.get("schema", "")).startswith("prefixbench.")):
        raise InputError(field, f"{kept} is not a result this project kept, and the rerun would replace it with "
                                f"the copy of {path.name}: move it away first")


def keep_previous(path: str | os.PathLike) -> Path | None:
    """Copy an existing ``path`` to ``keep_name(path)`` before a rerun overwrites it; the copy's path."""
    path = Path(path)
    if not path.is_file():
        return None
    kept = keep_name(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{kept.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        shutil.copy2(path, tmp)
        os.replace(tmp, kept)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return kept


FOLDER_MARKER = ".prefixbench-folder.json"
"""Written into each folder the project fills with files of its own (a sweep's ``points/``), naming the folder:
only a folder whose marker names the expected path may later be moved aside or removed."""

SCHEMA_FOLDER = "prefixbench.folder/1"


def mark_folder(folder: str | os.PathLike, written_by: str) -> Path:
    """Create ``folder`` (if needed) and claim it with ``FOLDER_MARKER``, before the first file goes in."""
    folder = Path(folder)
    marker = folder / FOLDER_MARKER
    if not marker.is_file():
        atomic_write_json(marker, {"schema": SCHEMA_FOLDER, "written_by": written_by,
                                   "folder": str(_identity(folder))})
    return folder


def aside_name(folder: str | os.PathLike) -> Path:
    """Where ``set_aside`` moves a folder: ``NAME.previous`` beside it."""
    folder = Path(folder)
    return folder.with_name(folder.name + ".previous")


def check_removable(field: str, target: str | os.PathLike, written_as: str | os.PathLike,
                    protected: Mapping[str, str | os.PathLike | None]) -> None:
    """Before any work: ``target`` (moved aside or removed by the run) is absent, or a real folder whose marker
    names ``written_as`` (the path this project wrote it at), holding none of ``protected`` (the inputs, the
    repository). Anything else is one line, and nothing is touched."""
    target = Path(target)
    if not (target.exists() or target.is_symlink()):
        return
    if target.is_symlink() or not target.is_dir():
        raise InputError(field, f"{target} is in the way and is not a folder this project wrote: move it away")
    try:
        marker = read_json(target / FOLDER_MARKER)
    except InputError:
        marker = None
    if not isinstance(marker, dict) or marker.get("schema") != SCHEMA_FOLDER or \
            marker.get("folder") != str(_identity(written_as)):
        raise InputError(field, f"{target} was not written here by this project (no {FOLDER_MARKER} naming "
                                f"{written_as}), and the run would move or remove it: move it away first")
    real = _identity(target)
    for name, path in protected.items():
        if path is not None and _identity(path).is_relative_to(real):
            raise InputError(field, f"{target} holds {name} ({path}), and the run would move or remove it")


def set_aside(folder: str | os.PathLike) -> Path | None:
    """Move ``folder`` to ``aside_name(folder)`` (an older copy there is removed last) so a rerun that fails
    leaves the whole previous result; the new path. Both were cleared by ``check_removable`` first."""
    folder = Path(folder)
    if not folder.is_dir():
        return None
    aside, older = aside_name(folder), None
    if aside.is_dir():
        older = Path(tempfile.mkdtemp(prefix=f".{aside.name}.", dir=folder.parent))
        os.replace(aside, older / aside.name)
    os.replace(folder, aside)
    if older is not None:
        shutil.rmtree(older)
    return aside

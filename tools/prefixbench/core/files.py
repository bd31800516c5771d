"""Every file the project writes or reads line by line: atomic writes, strict JSON, checked output paths.

- A write goes to a temporary file in the same folder and is renamed into place: readers see the old file or
  the whole new one, never a torn one.
- JSON is strict: a non-finite float (``NaN``, ``Infinity``) is not JSON, so ``to_strict_json`` refuses it
  instead of writing it; code that can meet one turns it into ``null`` with a reason first.
- ``check_outputs`` runs before any work: an output that is a folder, sits under a file, cannot be written, or
  names one of the inputs is bad input (exit 1), not a traceback after the work is done.
- ``keep_previous`` copies an existing result aside before a rerun overwrites it, so a failed or interrupted
  rerun never leaves less than there was.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterator, Mapping

from .errors import InputError


def to_strict_json(data: Any, *, indent: int | None = 2) -> str:
    """``json.dumps`` that refuses NaN / Infinity and text that cannot be UTF-8 (a lone surrogate)."""
    text = json.dumps(data, ensure_ascii=False, indent=indent, allow_nan=False,
                      separators=None if indent else (",", ":"))
    text.encode("utf-8")  # raises UnicodeEncodeError on a lone surrogate before anything is written
    return text


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` so that readers see the old file or the whole new one, never a torn one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
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
                try:
                    obj = json.loads(line, parse_constant=_refuse_constant)
                except (json.JSONDecodeError, ValueError) as exc:
                    detail = f"{exc.msg} at column {exc.colno}" if isinstance(exc, json.JSONDecodeError) else exc
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
    """One strict JSON document (NaN / Infinity refused), or an ``InputError`` naming the file."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"), parse_constant=_refuse_constant)
    except FileNotFoundError:
        raise InputError(str(path), "file not found") from None
    except IsADirectoryError:
        raise InputError(str(path), "is a folder, not a file") from None
    except UnicodeDecodeError:
        raise InputError(str(path), "is not UTF-8 text") from None
    except (OSError, ValueError) as exc:
        raise InputError(str(path), f"not a readable JSON result ({exc})") from None


def _refuse_constant(name: str):
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


def keep_previous(path: str | os.PathLike) -> Path | None:
    """Copy an existing ``path`` to ``<stem>.previous<suffix>`` before a rerun overwrites it; the copy's path."""
    path = Path(path)
    if not path.is_file():
        return None
    kept = path.with_name(f"{path.stem}.previous{path.suffix}")
    fd, tmp = tempfile.mkstemp(prefix=f".{kept.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        shutil.copy2(path, tmp)
        os.replace(tmp, kept)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return kept

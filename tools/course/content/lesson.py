"""Chapter 69, "Prefix Caching Benchmark | 前缀缓存基准", as an ordered list of notebook cells.

The one source of truth for solutions/69_prefix_cache_benchmark.ipynb and solutions/en/... (written by
tools/course/build/notebook.py). The cells are files: ``cells/manifest.toml`` orders them and says each one's
id (= nbgrader grade id), kind, role, points and edition; ``cells/NN_<id>.py`` is a code cell (Python, as the
notebook runs it), ``cells/NN_<id>.zh.md`` / ``.en.md`` a markdown cell in each edition, ``cells/NN_<id>.en.py``
an exercise's English head. The one substitution is ``<<NAME>>`` (``placeholders``).

The lesson follows measure -> compare -> decide. After the exercises it runs on the student's own functions
(figures, policy comparison, decision, the GPU section's prediction); the library's simulator and decision
functions appear only inside the self-check (tools.course.diagnosis). The four exercises are self-contained, as
students write them: everything between ``### BEGIN SOLUTION`` / ``### END SOLUTION`` becomes the seed's stub
in the student release; everything between ``### BEGIN HIDDEN TESTS`` / ``### END HIDDEN TESTS`` is removed
from the release and only runs at grading time. Hidden-test messages are constant strings on purpose: grading
feedback shows a hidden test's failure message only when it is one of these authored hints (see
tools/course/grading/feedback.py), never data from the test.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .. import config
from .cell import KINDS, ROLES, Cell

CELL_DIR = Path(__file__).resolve().with_name("cells")
MANIFEST = CELL_DIR / "manifest.toml"
PARTS = CELL_DIR / "parts"
PLACEHOLDER = re.compile(r"<<([A-Z][A-Z0-9_]*)>>")
SOLUTION_START = "    ### BEGIN SOLUTION"
EDITIONS = {"own": "markdown", "shared": "code", "head": "code"}
"""A cell's ``edition`` and the kind it goes with: ``own`` (a file per edition), ``shared`` (one file, the
English edition rewrites the lines of [[en_code_line]]), ``head`` (an exercise: the edition's own head, one
solution region)."""


class ManifestError(ValueError):
    """cells/manifest.toml or a cell file disagrees with what the lesson needs; the message names the file."""


@dataclass(frozen=True)
class Entry:
    """One cell of the manifest: what it is, and the stem of its files (``NN_<id>``)."""

    id: str
    kind: str
    role: str
    edition: str
    points: int
    stem: str

    def path(self, suffix: str) -> Path:
        return CELL_DIR / f"{self.stem}{suffix}"

    def files(self) -> list[Path]:
        """The files this cell is read from, for every edition."""
        if self.edition == "own":
            return [self.path(f".{lang}.md") for lang in config.LANGUAGES]
        heads = [self.path(f".{lang}.py") for lang in config.LANGUAGES if lang != "zh"] if self.edition == "head" \
            else []
        return [self.path(".py"), *heads]


@cache
def _manifest() -> dict:
    with MANIFEST.open("rb") as handle:
        return tomllib.load(handle)


def _entry(index: int, raw: dict) -> Entry:
    where = f"{MANIFEST.name}: cell {index} ({raw.get('id')!r})"
    unknown = set(raw) - {"id", "kind", "role", "edition", "points"}
    if unknown:
        raise ManifestError(f"{where}: unknown keys {sorted(unknown)}")
    cell_id, kind, role, edition = (raw.get(key) for key in ("id", "kind", "role", "edition"))
    points = raw.get("points", 0)
    if not isinstance(cell_id, str) or not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", cell_id):
        raise ManifestError(f"{where}: id must be lower-case words joined by '-'")
    if kind not in KINDS or role not in ROLES or not isinstance(edition, str) or EDITIONS.get(edition) != kind:
        raise ManifestError(f"{where}: kind {kind!r}, role {role!r}, edition {edition!r} do not go together")
    if (edition == "head") != (role == "solution") or (kind == "markdown") != (role == "readonly" and
                                                                               edition == "own"):
        raise ManifestError(f"{where}: an exercise (role solution) and only it has edition 'head'; markdown "
                            "is readonly")
    if not isinstance(points, int) or isinstance(points, bool) or (points > 0) != (role == "test"):
        raise ManifestError(f"{where}: a test cell, and only a test cell, has points > 0")
    return Entry(cell_id, kind, role, edition, points, f"{index:02d}_{cell_id}")


@cache
def entries() -> tuple[Entry, ...]:
    """The manifest's cells, in notebook order, checked; their ids unique."""
    found = tuple(_entry(i, raw) for i, raw in enumerate(_manifest()["cells"], 1))
    ids = [entry.id for entry in found]
    duplicated = sorted({i for i in ids if ids.count(i) > 1})
    if duplicated:
        raise ManifestError(f"{MANIFEST.name}: cell ids must be unique, duplicated: {', '.join(duplicated)}")
    return found


def en_code_lines() -> dict[str, str]:
    """Whole lines of the shared code cells and their English edition ([[en_code_line]] of the manifest)."""
    return {line["zh"]: line["en"] for line in _manifest().get("en_code_line", [])}


def english_code(source: str) -> str:
    """A shared code cell as the English edition has it: each line of en_code_lines() in English."""
    lines = en_code_lines()
    return "\n".join(lines.get(line, line) for line in source.split("\n"))


def read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ManifestError(f"{path.relative_to(CELL_DIR)}: missing (named by {MANIFEST.name})") from None


def fill(text: str, values: dict[str, str], where: str) -> str:
    """``<<NAME>>`` -> ``values[NAME]``, in one pass (a value is not read again); an unknown name is an error."""
    def value(match: re.Match) -> str:
        if match.group(1) not in values:
            raise ManifestError(f"{where}: unknown placeholder {match.group(0)} (known: {', '.join(values)})")
        return values[match.group(1)]

    return PLACEHOLDER.sub(value, text)


def notebook_path(lang: str = config.DEFAULT_LANGUAGE) -> str:
    """The edition's notebook path inside the repository students clone (the same in the course repository)."""
    return config.release_notebook(lang).relative_to(config.REPO_ROOT).as_posix()


def placeholders(lang: str) -> dict[str, str]:
    """Every ``<<NAME>>`` a cell file may use, as the edition has it: the published repository (config.py) and
    the texts of parts/ (the Colab / ModelScope links, the chapter map)."""
    path = notebook_path(lang)
    links = {"COLAB_URL": config.colab_url(path), "CLONE_URL": config.clone_url(),
             "CLONE_PATH": f"{config.REPO_SLUG.split('/')[-1]}/{path}"}
    part = PARTS / f"links.{lang}.md"
    return {"REPO_SLUG": config.REPO_SLUG, "LINKS": fill(read(part).strip("\n"), links, part.name),
            "CHAPTER_MAP": read(PARTS / "chapter-map.md").strip("\n")}


def _text(entry: Entry, lang: str) -> str:
    """The cell's text in one edition, before its placeholders are filled."""
    if entry.edition == "own":
        return read(entry.path(f".{lang}.md"))
    source = read(entry.path(".py"))
    if lang == config.DEFAULT_LANGUAGE:
        return source
    if entry.edition == "shared":
        return english_code(source)
    head = read(entry.path(f".{lang}.py"))
    if SOLUTION_START not in source:
        raise ManifestError(f"{entry.stem}.py: an exercise needs a '### BEGIN SOLUTION' region")
    if head.split("\n", 1)[0] != source.split("\n", 1)[0]:
        raise ManifestError(f"{entry.stem}: the {lang} edition's signature differs from the Chinese one")
    return head + source[source.index(SOLUTION_START):]


def cells(lang: str = config.DEFAULT_LANGUAGE) -> list[Cell]:
    """The notebook's cells in one edition (``"zh"``, the default, or ``"en"``): the same ids, roles, points
    and code in both; the prose and the exercise docstrings in the edition's language."""
    if lang not in config.LANGUAGES:
        raise ValueError(f"lang must be one of {config.LANGUAGES}, got {lang!r}")
    values = placeholders(lang)
    return [Cell(entry.id, entry.kind, entry.role, fill(_text(entry, lang), values, entry.stem).strip("\n"),
                 entry.points) for entry in entries()]


def source(cell_id: str) -> str:
    """A code cell's file as it is (the default edition, placeholders filled): what a test runs on its own."""
    entry = next((e for e in entries() if e.id == cell_id), None)
    if entry is None or entry.kind != "code":
        raise KeyError(f"no code cell {cell_id!r} in {MANIFEST.name}")
    return fill(read(entry.path(".py")), placeholders(config.DEFAULT_LANGUAGE), entry.stem)


CELLS: list[Cell] = cells()
"""The default (Chinese) edition's cells."""
GPU = source("gpu-backend")
"""The optional GPU cell (tests/prefixbench/run/test_backend_seed_cell.py runs it on its own)."""

"""Hostile submissions for the sandbox tests: the reference solution plus one cell that attacks the grader.

Every attack is bounded so it cannot hurt the test machine even if the sandbox were missing: the memory grab is
refused by the address-space limit before it is touched, the fork bomb's children sleep (and are capped by the
process limit), and the output flood stops after 2 GB of attempts, almost all of it dropped at the source.
"""

from __future__ import annotations

from pathlib import Path

import nbformat

from tools.course import config

from .make_class import _insert_after, with_solutions

LOOT = "loot.txt"


def _snoop(roots: list[str]) -> str:
    return f'''\
import os
SECRETS = ("BEGIN HIDDEN TESTS", "BEGIN SOLUTION", "gradebook")
found, seen = [], 0
# every top-level folder but the system ones: a copy of the course may lie anywhere on the machine
tops = [os.path.join("/", d) for d in sorted(os.listdir("/"))
        if d not in ("usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "proc", "dev", "sys")]
for root in {roots!r} + [os.getcwd(), os.path.expanduser("~"), "/tmp", "/work", "/root", "/home"] + tops:
    for folder, dirs, files in os.walk(root):
        # installed libraries hold no course secrets; walking them (some 40,000 files) only races the cell timeout
        dirs[:] = [d for d in dirs if d not in (".git", "proc", "sys", "node_modules", "__pycache__", "site-packages")]
        for name in files:
            seen += 1
            if seen > 40000:
                break
            path = os.path.join(folder, name)
            if name.endswith((".ipynb", ".db", ".py")):
                try:
                    text = open(path, errors="replace").read(2_000_000)
                except OSError:
                    continue
                if any(s in text for s in SECRETS) or name == "gradebook.db":
                    found.append(path)
                    if "BEGIN HIDDEN TESTS" in text:
                        print(text[text.index("BEGIN HIDDEN TESTS"):][:3000])
with open("{LOOT}", "w") as handle:
    handle.write("\\n".join(found))
print("SNOOP found", len(found), "files of", seen)
'''


def _rewrite_gradebooks(roots: list[str]) -> str:
    return f'''\
import glob, os, sqlite3
changed = 0
for root in {roots!r} + [os.getcwd(), "/tmp", "/work"]:
    for path in glob.glob(os.path.join(root, "**", "gradebook.db"), recursive=True):
        try:
            db = sqlite3.connect(path)
            changed += db.execute("UPDATE grade SET auto_score = 1000, manual_score = 1000").rowcount
            db.commit()
        except Exception as exc:
            print("denied", type(exc).__name__)
print("GRADEBOOK rows changed:", changed)
'''


def _read_other(victim: Path) -> str:
    return f'''\
try:
    text = open({str(victim)!r}).read()
    print("OTHER read", len(text), "characters; first solution line:", text[text.find("def "):][:80])
except OSError as exc:
    print("OTHER denied:", type(exc).__name__)
'''


FORK_BOMB = '''\
import os, time
children = 0
try:
    while True:
        if os.fork() == 0:
            time.sleep(3600)
            os._exit(0)
        children += 1
except OSError as exc:
    print("FORK refused after", children, "children:", type(exc).__name__)
'''

MEMORY_HOG = '''\
try:
    hoard = bytearray(1 << 40)  # 1 TiB: far more than any machine here
    print("MEMORY got it")
except MemoryError:
    print("MEMORY refused")
'''

FLOOD_REPORT = "flood_report.txt"

OUTPUT_FLOOD = f'''\
import os
report = open("{FLOOD_REPORT}", "w")  # what happened, where the output cap cannot drop it
print("FLOOD starts")
chunk = "x" * (1 << 20)
for _ in range(2048):  # 2 GiB through print: the kernel drops everything past its output limit
    print(chunk)
written = 0
try:
    for _ in range(2048):  # 2 GiB straight to the process's stdout file: the file-size limit stops it
        written += os.write(1, chunk.encode())
except OSError as exc:
    print("FLOOD stdout refused after", written >> 20, "MiB:", type(exc).__name__, file=report, flush=True)
try:
    with open("flood.bin", "wb") as handle:
        for _ in range(2048):
            handle.write(chunk.encode())
except OSError as exc:
    print("FLOOD file refused:", type(exc).__name__, file=report, flush=True)
os.remove("flood.bin")
from IPython.display import display
for _ in range(512):  # 512 MiB of rich output: display() shares the cell's allowance, all of it dropped
    display({{"text/plain": chunk}}, raw=True)
print("FLOOD display done", file=report, flush=True)
report.close()
'''

FLOOD_AFTER = 'print("FLOOD after: the next cell still shows its output")'

HOSTILE = ("snoop", "gradebook_rewrite", "read_other", "fork_bomb", "memory_hog", "output_flood")


def build_hostile_class(dest: Path, out_dir: Path) -> list[str]:
    """reference, stub and the hostile students in ``dest``; returns their ids."""
    release = nbformat.read(config.RELEASE_NOTEBOOK, as_version=4)
    dest, out_dir = Path(dest), Path(out_dir)
    roots = [str(config.REPO_ROOT), str(out_dir), str(dest)]
    attacks = {"snoop": _snoop(roots), "gradebook_rewrite": _rewrite_gradebooks(roots),
               "read_other": _read_other(dest / "reference" / config.NOTEBOOK_FILE), "fork_bomb": FORK_BOMB,
               "memory_hog": MEMORY_HOG, "output_flood": OUTPUT_FLOOD}
    class_ = {"reference": with_solutions(release, {}), "stub": release}
    for name, attack in attacks.items():
        nb = with_solutions(release, {})
        if name == "output_flood":  # the cell after the flood: its output must survive the flood's cap
            nb = _insert_after(nb, "ex3-recommend", FLOOD_AFTER)
        class_[name] = _insert_after(nb, "ex3-recommend", attack)
    for name, nb in class_.items():
        (dest / name).mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, dest / name / config.NOTEBOOK_FILE)
    return list(class_)

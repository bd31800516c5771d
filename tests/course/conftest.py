"""The course tests: one folder per package of tools/course (content, release = build, sandbox, diagnosis,
grading; pytest never collects a folder named ``build``, hence ``release/``).

The class fixtures are the package ``course_fixtures`` beside this file, imported by that name from every
subfolder (and by benchmarks/bench_grading.py), so this folder goes on sys.path.
"""

import sys
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
if HERE not in sys.path:
    sys.path.insert(0, HERE)

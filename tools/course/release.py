"""``python -m tools.course.release [--check]``: the command stays here; the work is in build/release.py."""

import sys

from .build.release import main

if __name__ == "__main__":
    sys.exit(main())

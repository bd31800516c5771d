"""nbgrader's region markers and the text that only appears inside them.

One definition for the release check, the grader and the feedback sanitiser, so that they agree on what is
secret: a line that occurs only inside a ``### BEGIN SOLUTION`` or ``### BEGIN HIDDEN TESTS`` region.
"""

from __future__ import annotations

import re
from typing import Iterable

SOLUTION, HIDDEN_TESTS = "SOLUTION", "HIDDEN TESTS"
HIDDEN_BEGIN = f"### BEGIN {HIDDEN_TESTS}"
HIDDEN_MARKERS = (f"BEGIN {HIDDEN_TESTS}", f"END {HIDDEN_TESTS}")
MARKERS = (f"BEGIN {SOLUTION}", f"END {SOLUTION}", *HIDDEN_MARKERS)
"""Any of these in a release or a feedback page means a region leaked."""


def region_pattern(*kinds: str) -> re.Pattern:
    """``### BEGIN <kind>`` ... ``### END <kind>``; group 1 is the kind, group 2 the region's body."""
    alternatives = "|".join(re.escape(kind) for kind in kinds)
    return re.compile(rf"^[ \t]*### BEGIN ({alternatives})[ \t]*$(.*?)^[ \t]*### END \1[ \t]*$", re.M | re.S)


SECRET_REGIONS = region_pattern(SOLUTION, HIDDEN_TESTS)
HIDDEN_REGIONS = region_pattern(HIDDEN_TESTS)


def regions(source: str, pattern: re.Pattern = HIDDEN_REGIONS) -> list[str]:
    """The bodies of the regions of ``source`` that ``pattern`` matches."""
    return [match.group(2) for match in pattern.finditer(source)]


def lines_only_inside(sources: Iterable[str], pattern: re.Pattern, min_length: int = 12) -> set[str]:
    """Stripped lines that occur inside the matched regions of ``sources`` and nowhere outside them
    (short lines are dropped: ``pass`` or ``)`` is no secret)."""
    inside: set[str] = set()
    outside: set[str] = set()
    for source in sources:
        for body in regions(source, pattern):
            inside.update(line.strip() for line in body.splitlines())
        outside.update(line.strip() for line in pattern.sub("", source).splitlines())
    return {line for line in inside - outside if len(line) >= min_length}

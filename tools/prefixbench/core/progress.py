"""Progress bars (tqdm) in one place: shown on a terminal when asked for, silent otherwise."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterable, Iterator, TypeVar

T = TypeVar("T")


@contextmanager
def progress_bar(total: int, label: str | None) -> Iterator[Callable[[], None]]:
    """Yield a function to call once per finished item; ``label=None`` (or empty) shows nothing."""
    if not label:
        yield lambda: None
        return
    from tqdm import tqdm

    bar = tqdm(total=total, desc=label, unit="req", leave=False)
    try:
        yield lambda: bar.update(1)
    finally:
        bar.close()


def track(items: Iterable[T], label: str | None, unit: str = "req") -> Iterable[T]:
    """``items`` with a bar while they are iterated (``label=None``: ``items`` unchanged)."""
    if not label:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, desc=label, unit=unit, leave=False)

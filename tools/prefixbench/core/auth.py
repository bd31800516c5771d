"""The API key a server may want (vLLM started with ``--api-key``, a gateway that wants a bearer token).

Why an environment variable and no flag: a command line shows in ``ps`` and in shell history. Why not
``OPENAI_API_KEY``: a key set for another service would go to every server a run is pointed at. The key is sent as
``Authorization: Bearer`` to every address of a run (completions, models, metrics, cache reset) and never written
into a result.
"""

from __future__ import annotations

import os
from typing import Sequence

from .errors import InputError

API_KEY_ENV = "PREFIXBENCH_API_KEY"
SECRET_FLAGS = ("--api-key",)
"""Flags of ``vllm serve`` and ``vllm-router`` whose value is a secret: a recorded command line shows ``<redacted>``."""


def auth_headers() -> dict[str, str]:
    """``{"Authorization": "Bearer KEY"}`` when ``$PREFIXBENCH_API_KEY`` is set, else ``{}``; a key no HTTP header
    can carry (a pasted curly quote, a newline) is one error that does not repeat it."""
    key = os.environ.get(API_KEY_ENV, "").strip()
    if not key:
        return {}
    if not (key.isascii() and key.isprintable()):
        raise InputError(API_KEY_ENV, "holds a character an HTTP header cannot carry (a key is printable ASCII)")
    return {"Authorization": f"Bearer {key}"}


def redacted(argv: Sequence[str]) -> list[str]:
    """``argv`` as a result may record it: the value of every ``SECRET_FLAGS`` flag (``--api-key K`` or
    ``--api-key=K``) is ``<redacted>``."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        flag, eq, _ = arg.partition("=")
        if hide_next:
            out.append("<redacted>")
        elif eq and flag in SECRET_FLAGS:
            out.append(f"{flag}=<redacted>")
        else:
            out.append(arg)
        hide_next = not eq and arg in SECRET_FLAGS
    return out

"""The API key a server may want (vLLM started with ``--api-key``, a gateway that wants a bearer token).

Why an environment variable and no flag: a command line shows in ``ps`` and in shell history. Why not
``OPENAI_API_KEY``: a key set for another service would go to every server a run is pointed at. The key is sent as
``Authorization: Bearer`` to every address of a run (completions, models, metrics, cache reset) and never written
into a result.
"""

from __future__ import annotations

import os

API_KEY_ENV = "PREFIXBENCH_API_KEY"


def api_key_set() -> bool:
    return bool(os.environ.get(API_KEY_ENV, "").strip())


def auth_headers() -> dict[str, str]:
    """``{"Authorization": "Bearer KEY"}`` when ``$PREFIXBENCH_API_KEY`` is set, else ``{}``."""
    key = os.environ.get(API_KEY_ENV, "").strip()
    return {"Authorization": f"Bearer {key}"} if key else {}

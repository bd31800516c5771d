"""Emptying a running server's prefix cache: vLLM's ``/reset_prefix_cache`` and SGLang's ``/flush_cache``.

Both refuse while requests still hold blocks, so both are retried until the cache is really empty.
"""

from __future__ import annotations

import time
from typing import Any, Callable

import requests

from ..core.auth import auth_headers


RESET_TIMEOUT_S = 30.0
"""How long one reset POST may take; a run's deadline (``ends_at``) shortens it."""


def _post_until_done(url: str, done: Callable[[requests.Response], bool], *, attempts: int, delay_s: float, timeout_s: float = RESET_TIMEOUT_S,
                     ends_at: float | None = None) -> dict:
    """POST ``url`` until ``done(response)`` says the cache is empty; 404 / 405 mean no such endpoint.

    ``ends_at`` (``time.monotonic()``) bounds every attempt and the retries: past it the reset has failed."""
    detail = None
    for attempt in range(1, attempts + 1):
        left = timeout_s if ends_at is None else min(timeout_s, ends_at - time.monotonic())
        if left <= 0:
            return {"status": "failed", "detail": "the run's deadline passed before the cache was reset",
                    "attempts": attempt - 1}
        try:
            response = requests.post(url, timeout=left, headers=auth_headers())
        except requests.RequestException as exc:
            return {"status": "failed", "detail": f"{type(exc).__name__}: {exc}"[:300], "attempts": attempt}
        if response.status_code in (404, 405):
            return {"status": "unavailable", "detail": f"HTTP {response.status_code}", "attempts": attempt}
        detail = response.text[:300]
        if response.status_code == 200 and done(response):
            return {"status": "ok", "detail": detail, "attempts": attempt}
        time.sleep(delay_s)
    return {"status": "failed", "detail": detail, "attempts": attempts}


def _vllm_reset_succeeded(response: requests.Response) -> bool:
    try:
        return bool(response.json().get("success", True))
    except ValueError:
        return True  # older servers answer 200 with an empty body


def reset_prefix_cache(base_url: str, *, attempts: int = 20, delay_s: float = 0.5, **limits: Any) -> dict:
    """Empty the server's prefix cache. vLLM answers ``{"success": false}`` while blocks are in use: retry.

    Returns ``{"status": "ok" | "unavailable" | "failed", "detail": ...}``; ``unavailable`` means the server
    has no such endpoint (vLLM without ``VLLM_SERVER_DEV_MODE=1`` answers 404).
    """
    return _post_until_done(base_url.rstrip("/") + "/reset_prefix_cache", _vllm_reset_succeeded,
                            attempts=attempts, delay_s=delay_s, **limits)


def flush_sglang_cache(base_url: str, *, attempts: int = 20, delay_s: float = 0.5, **limits: Any) -> dict:
    """SGLang's reset: ``POST /flush_cache`` (200 when flushed, 400 while requests are running: retried)."""
    return _post_until_done(base_url.rstrip("/") + "/flush_cache", lambda response: True,
                            attempts=attempts, delay_s=delay_s, **limits)


def reset_any_prefix_cache(base_url: str, **retry: Any) -> dict:
    """Empty the prefix cache of a vLLM (``/reset_prefix_cache``) or SGLang (``/flush_cache``) server.

    Tries vLLM's endpoint first, SGLang's when it is missing. ``endpoint`` says which one answered;
    ``unavailable`` means neither exists, so the cache may still hold earlier traffic.
    """
    vllm = reset_prefix_cache(base_url, **retry)
    if vllm["status"] != "unavailable":
        return {**vllm, "endpoint": "/reset_prefix_cache"}
    sglang = flush_sglang_cache(base_url, **retry)
    if sglang["status"] != "unavailable":
        return {**sglang, "endpoint": "/flush_cache"}
    return {"status": "unavailable", "endpoint": None, "attempts": vllm["attempts"] + sglang["attempts"],
            "detail": f"/reset_prefix_cache {vllm['detail']}, /flush_cache {sglang['detail']}"}



"""Where a running server is: its base URL, its Prometheus endpoints, and whether it serves the model asked for.

These check user input (``--endpoint``, ``--metrics-endpoint``, ``--model``) against the server before
anything is sent, so a typo is a one-line error, not a failed run.
"""

from __future__ import annotations

from typing import Any, Sequence

from urllib.parse import urlsplit

import requests

from ..core.auth import API_KEY_ENV, auth_headers
from ..core.errors import InputError


def check_url(field: str, url: object) -> str:
    """``url`` if it is ``http(s)://host[:port][/path]`` with a host and a port in 1..65535, else one error."""
    if not isinstance(url, str) or not url.startswith(("http://", "https://")) or any(c.isspace() for c in url):
        raise InputError(field, f"must be an http(s) URL, got {url!r}")
    try:
        parts = urlsplit(url)
        port = parts.port  # raises ValueError when out of range or not a number
    except ValueError as exc:
        raise InputError(field, f"{url!r} is not a usable URL ({exc})") from None
    if parts.username is not None or parts.password is not None:  # not repeated: the URL holds a secret
        raise InputError(field, "holds a user name or password, which every result would record: give a key "
                                "through PREFIXBENCH_API_KEY (sent as a bearer token, never written)")
    if not parts.hostname:
        raise InputError(field, f"{url!r} names no host")
    if port == 0:
        raise InputError(field, f"{url!r}: port 0 is not a server's port")
    if parts.query or parts.fragment:
        raise InputError(field, f"{url!r}: a query or fragment has no meaning here")
    return url


def base_url_of(endpoint: str) -> str:
    """``http://host:8000/v1`` or ``.../v1/completions`` -> ``http://host:8000`` (the client adds the path)."""
    url = check_url("--endpoint", endpoint).rstrip("/")
    for suffix in ("/v1/chat/completions", "/v1/completions", "/v1"):
        if url.endswith(suffix):
            return url[: -len(suffix)]
    return url


def metrics_endpoints(values: Sequence[str] | None, base_url: str) -> list[dict]:
    """``[LABEL=]URL`` values to ``[{"label", "url"}]``; none given: the endpoint's own ``/metrics``."""
    if not values:
        return [{"label": "server", "url": base_url + "/metrics"}]
    out: list[dict] = []
    for i, value in enumerate(values):
        label, sep, url = value.partition("=")
        if not sep or label.startswith(("http://", "https://")):
            label, url = f"endpoint{i}" if len(values) > 1 else "server", value
        if not url.startswith(("http://", "https://")):
            raise InputError("--metrics-endpoint", f"must be [LABEL=]http(s)://..., got {value!r}")
        check_url("--metrics-endpoint", url)
        if any(e["label"] == label for e in out):
            raise InputError("--metrics-endpoint", f"label {label!r} is used twice")
        out.append({"label": label, "url": url})
    return out


def check_model(base_url: str, model: str, timeout_s: float = 10.0) -> dict:
    """Ask ``/v1/models`` whether ``model`` is served: a wrong name is a bad argument, not a failed run."""
    headers = auth_headers()
    try:
        response = requests.get(base_url + "/v1/models", timeout=timeout_s, headers=headers)
    except requests.RequestException as exc:
        return {"reachable": False, "detail": f"cannot reach {base_url}: {type(exc).__name__}"}
    if response.status_code in (401, 403):  # every request would be refused the same way: bad input, not a run
        if headers:
            raise InputError(API_KEY_ENV, f"{base_url} refused the key (HTTP {response.status_code} from /v1/models)")
        raise InputError(API_KEY_ENV, f"{base_url} wants an API key (HTTP {response.status_code} from /v1/models): "
                                      f"set {API_KEY_ENV}, sent as a bearer token")
    if response.status_code != 200:
        return {"reachable": True, "served_models": None, "detail": f"/v1/models answered HTTP {response.status_code}"}
    served = _served_ids(response)
    if served is None:
        return {"reachable": True, "served_models": None,
                "detail": "/v1/models did not answer with a list of models (the check is advisory: going on)"}
    if served and model not in served:
        raise InputError("--model", f"{base_url} serves {', '.join(map(str, served))}, not {model!r}")
    return {"reachable": True, "served_models": served, "detail": None}


def _served_ids(response: Any) -> list[str] | None:
    """The model ids of an OpenAI ``/v1/models`` answer, or ``None`` when it is not that shape."""
    try:
        data = response.json().get("data", [])
    except (ValueError, AttributeError):
        return None
    if not isinstance(data, list):
        return None
    ids = [m.get("id") for m in data if isinstance(m, dict)]
    return [i for i in ids if isinstance(i, str)] or None


def server_version(base_url: str, timeout_s: float = 5.0) -> str | None:
    """vLLM's ``/version`` (``{"version": "0.32.0"}``), or ``None`` when the server does not say."""
    try:
        response = requests.get(base_url.rstrip("/") + "/version", timeout=timeout_s, headers=auth_headers())
        version = response.json().get("version") if response.ok else None
    except (requests.RequestException, ValueError, AttributeError):
        return None
    return version if isinstance(version, str) and 0 < len(version) <= 64 else None


class RunningServer:
    """A server someone else started and keeps running (``g0g1 --g1-endpoint URL``): an experiment measures it,
    never starts or stops it, and cannot sample its memory or read its log (those stay null, with the reason)."""

    process = None
    exit_code = None
    startup_s = None
    log_path = None

    def __init__(self, endpoint: str, field: str = "--endpoint"):
        self.base_url = base_url_of(check_url(field, endpoint))
        self.port = urlsplit(self.base_url).port
        self.field = field

    def pids(self) -> list[int]:
        return []

    def start(self) -> RunningServer:
        """Already running (the user's)."""
        return self

    def stop(self) -> None:
        """Left running: the user started it."""

    def log_tail(self, lines: int = 40) -> None:
        return None

    def describe(self) -> dict:
        return {"base_url": self.base_url, "port": self.port, "pid": None, "started_by": "the user (" + self.field +
                ")", "vllm_version": server_version(self.base_url), "log_path": None,
                "memory_reason": "not started by this process: its memory is not sampled"}

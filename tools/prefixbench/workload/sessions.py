"""Multi-turn sessions as token ids: chat conversations and agent loops, where every turn resends the history.

A session's turn ``t`` prompt is its turn ``t-1`` prompt, plus the tokens the server generated for it (recorded
from the stream, so the history is exactly what a client would resend), plus a new message. Every user shares
one system prompt. The new message is a user message (``chat``), or for ``agent`` sessions a task on the first
turn and a long tool output on every later one, behind a long shared system prompt, as a coding agent does.

All content is seeded: the same plan gives the same messages; only the generated tokens come from the server.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass
from typing import TypedDict

from ..core.errors import InputError

KINDS = ("chat", "agent")
VOCAB = (10, 1000)
"""Token ids of generated content, inside every local model's vocabulary (as ``workload.generate``)."""


class _KindDefaults(TypedDict):
    """A kind's default lengths (``session_plan`` fills the ones left ``None`` from them)."""

    system_prompt_len: int
    user_len: int
    tool_output_len: int | None


DEFAULTS: dict[str, _KindDefaults] = {
    "chat": {"system_prompt_len": 256, "user_len": 64, "tool_output_len": None},
    "agent": {"system_prompt_len": 1024, "user_len": 64, "tool_output_len": 256}}


@dataclass(frozen=True)
class SessionPlan:
    """What the sessions send: ``users`` x ``turns`` requests, each turn's new message as long as below."""

    kind: str
    users: int
    turns: int
    system_prompt_len: int
    user_len: int
    output_len: int
    tool_output_len: int | None = None
    seed: int = 0

    def to_dict(self) -> dict:
        return asdict(self)


def session_plan(*, kind: str = "chat", users: int, turns: int, system_prompt_len: int | None = None,
                 user_len: int | None = None, output_len: int = 16, tool_output_len: int | None = None,
                 seed: int = 0) -> SessionPlan:
    """A validated plan; lengths left ``None`` take the kind's defaults (``DEFAULTS``)."""
    if kind not in KINDS:
        raise InputError("--kind", f"must be one of {', '.join(KINDS)}, got {kind!r}")
    if kind == "chat" and tool_output_len is not None:
        raise InputError("--tool-output-len", "applies to --kind agent only")
    defaults = DEFAULTS[kind]
    return SessionPlan(kind, users, turns,
                       defaults["system_prompt_len"] if system_prompt_len is None else system_prompt_len,
                       defaults["user_len"] if user_len is None else user_len, output_len,
                       defaults["tool_output_len"] if kind == "agent" and tool_output_len is None else tool_output_len,
                       seed)


def _tokens(seed: tuple, count: int) -> list[int]:
    rng = random.Random(repr(seed))
    return [rng.randrange(*VOCAB) for _ in range(count)]


def system_prompt(plan: SessionPlan) -> list[int]:
    return _tokens((plan.seed, "system"), plan.system_prompt_len)


def new_message(plan: SessionPlan, user: int, turn: int) -> list[int]:
    """What turn ``turn`` (0-based) of ``user`` adds after the history: a user message, or an agent's tool output."""
    if plan.kind == "agent" and turn > 0:
        return _tokens((plan.seed, "tool", user, turn), plan.tool_output_len or 0)
    return _tokens((plan.seed, "user", user, turn), plan.user_len)


def first_prompt(plan: SessionPlan, user: int) -> list[int]:
    return system_prompt(plan) + new_message(plan, user, 0)


def next_prompt(plan: SessionPlan, user: int, turn: int, previous_prompt: list[int],
                generated: list[int]) -> list[int]:
    """Turn ``turn``'s prompt: the previous prompt, what the server generated for it, the new message."""
    return list(previous_prompt) + list(generated) + new_message(plan, user, turn)


def longest_prompt(plan: SessionPlan) -> int:
    """Tokens of the last turn's prompt (for the context-length check before anything is sent)."""
    later = plan.tool_output_len if plan.kind == "agent" else plan.user_len
    return plan.system_prompt_len + plan.user_len + (plan.turns - 1) * ((later or 0) + plan.output_len)

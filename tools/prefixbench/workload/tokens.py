"""Token ids in, validated and packed: the one check every prompt passes, wherever it comes from.

A prompt is a list of non-negative integer token ids (``bool`` is refused, numpy integers are accepted). Packing
them as native 8-byte ids lets the block model slice and hash whole blocks at C speed.
"""

from __future__ import annotations

import operator
from array import array
from typing import Sequence, SupportsIndex, cast

import numpy as np

from ..core.errors import InputError


MAX_TOKEN_ID = 2**63 - 1
TOKEN_BYTES = array("Q").itemsize


def _token_id(field: str, value: object) -> int:
    if isinstance(value, bool):
        raise InputError(field, f"token ids must be integers, got bool {value!r}")
    try:
        # accepts numpy integers, refuses floats and strings: the call is the check (cast: any object may come)
        token = operator.index(cast(SupportsIndex, value))
    except TypeError:
        raise InputError(field, f"token ids must be integers, got {type(value).__name__} {value!r}") from None
    if not 0 <= token <= MAX_TOKEN_ID:
        raise InputError(field, f"token ids must be in [0, 2**63), got {token}")
    return token


def pack_tokens(tokens: Sequence[int], field: str = "tokens") -> bytes:
    """The prompt as native 8-byte ids: validated and packed at C speed on the common path.

    ``array('Q')`` already refuses floats, strings, ``None`` and negative ids; ``bool`` would slip through
    as 0 / 1, so the elements that packed to 0 or 1 are checked one by one (the rest cannot be bools).
    """
    try:
        packed = array("Q", tokens)
        view = np.frombuffer(packed, dtype=np.uint64)
        # ids 0 and 1 may be bools in disguise: look at those few elements only
        fast = not packed or int(view.min()) > 1 or not any(
            isinstance(tokens[int(j)], bool) for j in np.flatnonzero(view <= 1))
    except (TypeError, OverflowError, IndexError, KeyError):
        fast = False
    if not fast:
        packed = array("Q", [_token_id(f"{field}[{j}]", t) for j, t in enumerate(tokens)])
    return packed.tobytes()


def pack_sequences(token_sequences: object, field: str = "token_sequences") -> list[bytes]:
    """Validate and pack every prompt; errors name the element, e.g. ``token_sequences[3][17]``."""
    if isinstance(token_sequences, (str, bytes)) or not isinstance(token_sequences, Sequence):
        raise InputError(field, f"must be a list of token-id lists, got {type(token_sequences).__name__}")
    packed = []
    for i, tokens in enumerate(token_sequences):
        if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Sequence):
            raise InputError(f"{field}[{i}]", f"must be a list of token ids, got {type(tokens).__name__}")
        packed.append(pack_tokens(tokens, f"{field}[{i}]"))
    return packed


def validate_token_sequences(token_sequences: object, field: str = "token_sequences") -> list[list[int]]:
    """The sequences as lists of plain ints, or an error naming the first bad element."""
    lists = []
    for packed in pack_sequences(token_sequences, field):
        ids = array("Q")
        ids.frombytes(packed)
        lists.append(ids.tolist())
    return lists

"""Tenant salts in the block model: vLLM keys a request's blocks by its ``cache_salt`` too.

vLLM v1 puts the salt into the extra keys of a request's first block only; since every later block's hash
chains on its parent, the salt changes every block of the request, and two requests share cached blocks only
when they carry the same salt (or both none). The block model here (``cache.blocks.BlockKeys``) names a block by
its token prefix, so the salt enters as the first token's identity: ``SaltSpace.tokens`` moves a salted
prompt's first token into a range no real token id reaches (``salt number << SALT_SHIFT``). The prediction then
stays exact with no change to the cache model: same salt, same keys; other salt or none, other keys.
"""

from __future__ import annotations

from typing import Sequence

from ..core.errors import InputError

SALT_SHIFT = 40
"""Real token ids stay below ``2**SALT_SHIFT`` (vocabularies have < 10**7 entries); salt numbers go above."""


class SaltSpace:
    """Numbers the salts in order of first use and gives each salted prompt its block-model token ids."""

    def __init__(self) -> None:
        self._numbers: dict[str, int] = {}

    def number(self, salt: str) -> int:
        return self._numbers.setdefault(salt, len(self._numbers) + 1)

    def tokens(self, prompt: Sequence[int], salt: str | None) -> list[int]:
        """The prompt as the block model sees it: unchanged without a salt, first token moved with one."""
        tokens = list(prompt)
        if salt is None or not tokens:
            return tokens
        if not isinstance(salt, str) or not salt:
            raise InputError("cache_salt", f"must be a non-empty string, got {salt!r}")
        if tokens[0] >= 1 << SALT_SHIFT:
            raise InputError("prompt_token_ids[0]", f"token id {tokens[0]} is too large to carry a salt")
        tokens[0] += self.number(salt) << SALT_SHIFT
        return tokens


def salted_prompts(prompts: Sequence[Sequence[int]], salts: Sequence[str | None]) -> list[list[int]]:
    """Each prompt with its salt (``None``: none), in one salt space, for ``simulate.predict``."""
    space = SaltSpace()
    return [space.tokens(p, s) for p, s in zip(prompts, salts, strict=True)]

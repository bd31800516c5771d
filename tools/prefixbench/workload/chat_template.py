"""What a tokenizer's chat template would add to token-id prompts (they are sent without one)."""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from ..core.errors import InputError
from ..core.live_records import ChatTemplateNote


def chat_template_note(tokenizer: str | None, requests: Sequence[dict]) -> ChatTemplateNote:
    """With ``--tokenizer``: check the ids fit its vocabulary and say what a chat template would add.

    The benchmark sends token ids to ``/v1/completions``, so nothing is added; through a chat endpoint the
    template's leading tokens would shift every prefix (moving block boundaries) and its trailing tokens would
    lengthen every prompt. Those counts are approximate (the template is rendered as text, then tokenized).
    """
    if not tokenizer:
        return ChatTemplateNote(None, reason="no --tokenizer given; prompts are token ids sent as they are")
    try:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(tokenizer)
    except Exception as exc:  # a wrong path or an offline hub id: the benchmark itself does not need it
        return ChatTemplateNote(tokenizer, reason=f"could not load it: {type(exc).__name__}: {str(exc)[:200]}")
    vocab = len(tok)
    highest = max(max(r["prompt_token_ids"]) for r in requests)
    if highest >= vocab:
        raise InputError("--tokenizer", f"the workload uses token id {highest}, beyond the vocabulary ({vocab})")
    note = ChatTemplateNote(tokenizer, vocab_size=vocab, highest_token_id=highest,
                            sent_as="token ids to /v1/completions: no chat template, no re-tokenization")
    if not getattr(tok, "chat_template", None):
        return replace(note, chat_template=False, reason="the tokenizer has no chat template")
    marker = "PREFIXBENCH_MARKER"
    try:
        text = tok.apply_chat_template([{"role": "user", "content": marker}], tokenize=False,
                                       add_generation_prompt=True)
    except Exception as exc:
        return replace(note, chat_template=True, reason=f"the template failed to render: {exc}")
    assert isinstance(text, str)  # tokenize=False renders the one conversation as text
    head, _, tail = text.partition(marker)
    lead = len(tok(head, add_special_tokens=False)["input_ids"])
    trail = len(tok(tail, add_special_tokens=False)["input_ids"])
    return replace(note, chat_template=True, leading_template_tokens=lead, trailing_template_tokens=trail,
                   explanation=f"through /v1/chat/completions each prompt would gain about {lead} tokens before it "
                               f"and {trail} after; the leading ones shift every shared prefix by {lead} tokens, "
                               "which moves the block boundaries (and are themselves shared, so they add hits)")

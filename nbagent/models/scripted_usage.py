"""What a scripted reply would have cost a real model, so a walkthrough or a test that plays
one sees the numbers a real server reports rather than zeros.

A token is counted as four characters of what was sent or said (what OpenAI's tokenizers give
for English prose and JSON, within a factor that does not matter here). The prompt cache holds
the previous request's prompt in whole blocks of ``CACHE_BLOCK`` tokens, as a provider's cache
serves a thread whose every request starts with the one before it.
"""

from __future__ import annotations

import json
from typing import Any

CHARS_PER_TOKEN = 4
CACHE_BLOCK = 64


def tokens_in(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


def sent_chars(instructions: str | None, texts: list[str], tools: list[Any]) -> int:
    """The size of a request: its instructions, each item's words and each tool's definition."""
    return len(instructions or "") + sum(len(t) + 16 for t in texts) + sum(len(json.dumps(t, default=str)) for t in tools)


class ScriptedMeter:
    """The usage of each reply of one scripted model, in order (the cache is this model's)."""

    def __init__(self) -> None:
        self._last_input = 0

    def usage(self, sent: int, said: str, reasoning: str = "") -> dict[str, int]:
        """Codex's ``TokenUsage`` counts for a request of ``sent`` characters answered with ``said``."""
        input_tokens = -(-sent // CHARS_PER_TOKEN)
        cached = min(self._last_input, input_tokens) // CACHE_BLOCK * CACHE_BLOCK
        self._last_input = input_tokens
        thought = tokens_in(reasoning)
        output = tokens_in(said) + thought
        return {"input_tokens": input_tokens, "cached_input_tokens": cached, "output_tokens": output,
                "reasoning_output_tokens": thought, "total_tokens": input_tokens + output}

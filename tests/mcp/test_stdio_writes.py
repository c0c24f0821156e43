"""Requests reach a stdio server whole and in order, even when many are written at once.

Each request is written to the server's stdin by the caller itself (no writer task between), so
requests larger than the pipe's buffer, sent concurrently, must still never interleave.
"""

from __future__ import annotations

import asyncio

from nbagent.protocol import TextBlock
from tests.mcp.conftest import Harness, call_info


async def test_concurrent_large_requests_each_get_their_own_answer(harness: Harness) -> None:
    manager = await harness.start({"echo": harness.cfg("echo.py")})
    spec = next(s for s in manager.list_tools() if s.raw_name == "echo")
    # 200 KB each: over the 64 KB a pipe holds, so writes wait for the server while others queue.
    texts = [f"{i:03d}" + chr(ord("a") + i % 26) * 200_000 for i in range(12)]
    async with asyncio.timeout(60):  # a garbled request is never answered: fail, do not hang
        results = await asyncio.gather(
            *(manager.call_tool(spec, {"text": text}, call_info(f"call_{i}")) for i, text in enumerate(texts))
        )
    for text, result in zip(texts, results, strict=True):
        assert not result.is_error, str(result.content)[:300]
        assert "".join(b.text for b in result.content if isinstance(b, TextBlock)) == text
    # The connection is still sound afterwards.
    again = await manager.call_tool(spec, {"text": "after"}, call_info("call_after"))
    assert not again.is_error and again.structured == {"result": "after"}

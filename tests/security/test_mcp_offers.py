"""``%agent resources`` / ``%agent prompts`` show what a hostile MCP server offers without
obeying it: escapes, bidi overrides and zero-width characters are made visible, a huge resource
is cut, a hung read ends at the server's timeout. Real server over stdio, real manager."""

from __future__ import annotations

import pytest

from nbagent.mcp import offers
from tests.mcp.conftest import Harness, harness  # noqa: F401  (the real MCP manager harness)

HIDDEN = ("\x1b", "\x07", "\u202e", "\u200b")


def _inert(text: str) -> None:
    assert not any(ch in text for ch in HIDDEN), repr(text)


async def _offers(harness: Harness):  # noqa: F811
    return await harness.start({"offers": harness.cfg("offers.py", tool_timeout_sec=2.0)})


async def test_listed_resources_and_prompts_show_hidden_characters(harness: Harness) -> None:  # noqa: F811
    manager = await _offers(harness)
    listing = await offers.resources(manager, [])
    _inert(listing)
    assert "offers: 4 resource(s)" in listing and "note://trap" in listing
    assert "<U+001B>]52;c;" in listing and "<U+202E>harmless<U+200B>" in listing
    prompts = await offers.prompts(manager, [])
    _inert(prompts)
    assert "review code=… [style=…]" in prompts and "<U+001B>" in prompts


async def test_read_resource_and_prompt_text_show_hidden_characters(harness: Harness) -> None:  # noqa: F811
    manager = await _offers(harness)
    text = await offers.resources(manager, ["offers", "note://trap"])
    _inert(text)
    assert text.startswith("line one<U+001B>]52;c;") and "line <U+202E>two" in text
    filled = await offers.prompts(manager, ["offers", "review", "code=x = 1", "style=long"])
    _inert(filled)
    assert filled.startswith("user: Review (long):<U+202E>\nx = 1<U+001B>")


async def test_binary_huge_and_hung_resources_stay_bounded(harness: Harness) -> None:  # noqa: F811
    manager = await _offers(harness)
    assert "[image/png data," in await offers.resources(manager, ["offers", "data://pixel"])
    huge = await offers.resources(manager, ["offers", "note://huge"])
    assert len(huge) < offers.MAX_SHOWN + 100 and huge.endswith("[... 30000 more characters not shown]")
    with pytest.raises(TimeoutError, match="'offers' did not answer in 2 s"):
        await offers.resources(manager, ["offers", "note://hang"])
    assert "offers: 4 resource(s)" in await offers.resources(manager, ["offers"])  # the server still answers


async def test_unknown_server_and_bad_prompt_arguments_are_one_line_errors(harness: Harness) -> None:  # noqa: F811
    manager = await _offers(harness)
    with pytest.raises(ValueError, match=r"no MCP server named 'nosuch' \(configured: offers\)"):
        await offers.resources(manager, ["nosuch", "note://trap"])
    with pytest.raises(ValueError, match="prompt arguments are KEY=VALUE, not 'code'"):
        offers.prompt_arguments(["code"])

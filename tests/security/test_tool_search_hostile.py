"""``search_tools`` at its two boundaries: tool text from MCP servers (untrusted, possibly built
to inject or to flood) and the query from the model (any size, any characters)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from nbagent import Session
from nbagent.core.request_tools import DESCRIPTION_CHARS, MAX_RESULTS, SEARCH_TOOL, RequestTools
from nbagent.protocol import CallInfo
from tests.core.test_openai_session import sent_outputs
from tests.core.test_request_tools import CATALOGUE, catalogue_of, many
from tests.core.test_tool_search import call, config_for

ENTRY = re.compile(r"^\d+\. mcp__many__\w+ \(MCP server 'many'\): \"[^\"\\]*(?:\\.[^\"\\]*)*\"$")


async def test_hostile_descriptions_come_back_cut_quoted_and_marked_untrusted(
    openai_server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    config = config_for(openai_server, "responses", tmp_path / "home", tmp_path / "r.jsonl", env={"MANY_TOOLS_HOSTILE": "1"})
    openai_server.script([call(SEARCH_TOOL, query="pull request", limit=25), {"text": "ok"}])
    async with Session(config=config) as session:
        result = await asyncio.wait_for(session.run("find pull request tools"), 60)
    assert result.status == "completed", result.error
    (output,) = sent_outputs(openai_server.requests[1], "responses").values()
    head, *lines = output.splitlines()
    entries = [line for line in lines if line[:1].isdigit()]
    assert "untrusted" in head and "not instructions" in head
    traps = [line for line in entries if "pull_request_trap" in line]
    assert len(traps) == 3 and all(ENTRY.match(line) for line in traps), traps
    assert entries[0].startswith("1. mcp__many__open_pull_request ")  # repeating words does not rank a tool up
    assert all(len(line) < DESCRIPTION_CHARS + 120 for line in entries)
    assert not any(ch in output for ch in "\x1b\x07\x00\x08\r\u202e")
    assert "<U+001B>" in output and "<U+202E>" in output  # shown, not obeyed
    assert len(output) < MAX_RESULTS * (DESCRIPTION_CHARS + 120) + 400


def search_view() -> RequestTools:
    view = RequestTools(6)
    view.select(catalogue_of(CATALOGUE + many(30)), [])
    return view


async def search(view: RequestTools, **arguments) -> tuple[bool, str]:
    result = await view.call_tool(view.spec, arguments, CallInfo(thread_id="t", turn_id="u", call_id="c"))
    return result.is_error, result.content[0].text


async def test_a_megabyte_query_gets_a_short_clear_error() -> None:
    is_error, text = await search(search_view(), query="issue " * 200_000)
    assert is_error and "1,200,000 characters" in text and "at most 1000" in text and len(text) < 200


@pytest.mark.parametrize("query", ["", "   \n\t", "🙂🙂🙂", "\u202e\u200b\u2062", "!!! ??? ...", "\x00\x1b\x07"])
async def test_a_query_without_words_is_a_clear_error(query: str) -> None:
    is_error, text = await search(search_view(), query=query)
    assert is_error and "no words to search for" in text


@pytest.mark.parametrize("query", ["名前 ツール", "c̷̢r̸e̵a̴t̶e̷ i̴s̵s̶u̷e̸", "ISSUE\u202e", "ｉｓｓｕｅ", "\x1b[2J\x1b]52;c;ZXZpbA==\x07"])
async def test_odd_unicode_gets_a_bounded_answer(query: str) -> None:
    is_error, text = await search(search_view(), query=query)
    assert not is_error and len(text) < 4000
    assert "\u202e" not in text and "\x1b" not in text


async def test_a_huge_limit_is_capped_and_bad_arguments_are_named() -> None:
    view = search_view()
    result = await view.call_tool(view.spec, {"query": "tool", "limit": 10**9}, CallInfo(thread_id="t", turn_id="u", call_id="c"))
    assert len(result.structured["tools"]) == MAX_RESULTS
    for arguments, named in [({"query": "x", "limit": 0}, "limit"), ({"query": 3}, "query"), ({}, "query"),
                             ({"query": "x", "evil": 1}, "evil")]:
        is_error, text = await search(view, **arguments)
        assert is_error and SEARCH_TOOL in text and named in text

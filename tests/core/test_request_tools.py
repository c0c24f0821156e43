"""The ranking of ``search_tools`` and the tools each request carries past the cap."""

from __future__ import annotations

from types import MappingProxyType

from nbagent.core.function_tools import FunctionTools
from nbagent.core.request_tools import SEARCH_TOOL, RequestTools, ToolIndex, words
from nbagent.protocol import CallInfo, FunctionCall, FunctionCallOutput, ToolSpec, UserMessage

INFO = CallInfo(thread_id="t", turn_id="u", call_id="c")


def mcp(server: str, raw: str, description: str = "", title: str | None = None) -> ToolSpec:
    return ToolSpec(name=f"mcp__{server}__{raw}", raw_name=raw, server=server, source="mcp",
                    description=description, title=title)


CATALOGUE = [
    mcp("github", "create_issue", "Create a new issue in a repository."),
    mcp("github", "list_issues", "List the issues of a repository, filtered by state."),
    mcp("github", "create_pull_request", "Open a pull request from a branch."),
    mcp("jira", "create_ticket", "Create a Jira ticket in a project."),
    mcp("files", "read_file", "Read a file from disk and return its text.", title="Read file"),
    mcp("files", "write_file", "Write text to a file on disk."),
    mcp("slack", "postMessage", "Post a message to a channel."),
]


def ranked(query: str, limit: int = 3) -> list[str]:
    return [spec.raw_name for spec, _ in ToolIndex(CATALOGUE).search(query, limit)]


def test_the_obvious_tool_ranks_first_for_its_own_words() -> None:
    assert ranked("create issue")[0] == "create_issue"
    assert ranked("list issues")[0] == "list_issues"
    assert ranked("pull request")[0] == "create_pull_request"
    assert ranked("read a file")[0] == "read_file"
    assert ranked("post message")[0] == "postMessage"  # camelCase is split
    assert ranked("jira")[0] == "create_ticket"  # the server's name counts


def test_a_rare_word_outweighs_a_common_one() -> None:
    assert ranked("create ticket")[0] == "create_ticket"


def test_no_shared_word_finds_nothing() -> None:
    assert ranked("kubernetes") == []


def test_words_are_case_folded_split_and_normalised() -> None:
    assert words("List_GitHub-Issues ｆｕｌｌ") == ["list", "git", "hub", "issue", "full"]


def catalogue_of(specs: list[ToolSpec], native: int = 2) -> MappingProxyType:
    functions = FunctionTools()
    for n in range(native):
        functions.register(lambda: None, name=f"native_{n}")
    return MappingProxyType({spec.name: (spec, functions) for spec in [*functions.list_tools(), *specs]})


def many(n: int) -> list[ToolSpec]:
    return [mcp("srv", f"tool_{i}", f"Tool number {i}.") for i in range(n)]


def called(name: str, call_id: str) -> FunctionCall:
    return FunctionCall(call_id=call_id, name=name, arguments="{}")


def test_under_the_cap_the_catalogue_goes_as_it_is() -> None:
    catalogue = catalogue_of(many(6))
    merged, tools = RequestTools(8).select(catalogue, [])
    assert merged is catalogue and [t.name for t, _ in tools] == list(catalogue)


def test_past_the_cap_native_tools_then_search_then_what_is_in_view_newest_first() -> None:
    catalogue = catalogue_of(many(50))
    items = [UserMessage(text="go"), called("mcp__srv__tool_3", "a"), called("mcp__srv__tool_9", "b"),
             called("mcp__srv__gone", "c"), called("native_0", "d")]
    merged, tools = RequestTools(6).select(catalogue, items)
    assert [t.name for t, _ in tools] == ["native_0", "native_1", SEARCH_TOOL, "mcp__srv__tool_9", "mcp__srv__tool_3"]
    assert SEARCH_TOOL in merged and "mcp__srv__tool_40" in merged  # every tool stays callable


def test_when_more_are_in_view_than_fit_the_oldest_drop_out() -> None:
    catalogue = catalogue_of(many(50))
    items = [called(f"mcp__srv__tool_{i}", f"c{i}") for i in range(10)]
    view = RequestTools(5)
    _, tools = view.select(catalogue, items)
    assert [t.name for t, _ in tools] == ["native_0", "native_1", SEARCH_TOOL, "mcp__srv__tool_9", "mcp__srv__tool_8"]
    items.append(called("mcp__srv__tool_0", "again"))  # called again: newest now
    _, tools = view.select(catalogue, items)
    assert [t.name for t, _ in tools][3:] == ["mcp__srv__tool_0", "mcp__srv__tool_9"]


async def test_a_search_puts_its_results_in_view_best_first() -> None:
    catalogue = catalogue_of(CATALOGUE + many(30))
    view = RequestTools(6)
    merged, _ = view.select(catalogue, [])
    result = await merged[SEARCH_TOOL][1].call_tool(view.spec, {"query": "issue", "limit": 2}, INFO)
    assert result.structured == {"tools": ["mcp__github__create_issue", "mcp__github__list_issues"]}
    items = [called(SEARCH_TOOL, "s"), FunctionCallOutput(call_id="s", output="...", structured=result.structured)]
    _, tools = view.select(catalogue, items)
    assert [t.name for t, _ in tools][3:] == ["mcp__github__create_issue", "mcp__github__list_issues"]


async def test_a_structured_part_of_another_tool_puts_nothing_in_view() -> None:
    catalogue = catalogue_of(many(30))
    items = [called("native_1", "x"), FunctionCallOutput(call_id="x", output="", structured={"tools": ["mcp__srv__tool_7"]})]
    _, tools = RequestTools(6).select(catalogue, items)
    assert "mcp__srv__tool_7" not in [t.name for t, _ in tools]


def test_the_index_is_built_once_per_catalogue() -> None:
    catalogue = catalogue_of(many(30))
    view = RequestTools(6)
    view.select(catalogue, [])
    view.search("tool", 3)
    index = view._index
    view.select(catalogue, [])
    view.search("number", 3)
    assert view._index is index
    view.select(catalogue_of(many(31)), [])
    view.search("tool", 3)
    assert view._index is not index


def test_a_python_tool_named_search_tools_does_not_shadow_the_search_past_the_cap() -> None:
    catalogue = catalogue_of(many(30), native=0)
    functions = FunctionTools()
    functions.register(lambda: "mine", name=SEARCH_TOOL)
    catalogue = MappingProxyType({SEARCH_TOOL: (functions.list_tools()[0], functions), **catalogue})
    view = RequestTools(5)
    merged, tools = view.select(catalogue, [])
    assert [t.name for t, _ in tools] == [SEARCH_TOOL] and merged[SEARCH_TOOL][1] is view


def test_python_tools_that_alone_fill_the_cap_are_named_once_and_come_into_view_when_found() -> None:
    catalogue = catalogue_of(many(3), native=8)
    view = RequestTools(5)
    _, tools = view.select(catalogue, [])
    assert [t.name for t, _ in tools] == ["native_0", "native_1", "native_2", SEARCH_TOOL]  # one slot kept for view
    said = view.left_out()
    assert said is not None and "5 native and Python tools" in said
    assert "native_3, native_4, native_5, native_6, native_7" in said and "max_model_tools" in said
    view.select(catalogue, [])
    assert view.left_out() is None  # once per catalogue, not on every request
    items = [called(SEARCH_TOOL, "s"), FunctionCallOutput(call_id="s", output="", structured={"tools": ["native_6", "native_1"]})]
    _, tools = view.select(catalogue, items)
    assert [t.name for t, _ in tools] == ["native_0", "native_1", "native_2", SEARCH_TOOL, "native_6"]
    items.append(called("native_1", "again"))  # newest in view, but carried already: not twice
    _, tools = view.select(catalogue, items)
    assert [t.name for t, _ in tools][4:] == ["native_6"]


def test_when_the_own_tools_fit_nothing_is_said() -> None:
    view = RequestTools(5)
    view.select(catalogue_of(many(30), native=4), [])
    assert view.left_out() is None

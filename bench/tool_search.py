"""Tools past the request's cap: what picking one request's tools costs, what building the search
index and one ``search_tools`` query cost, at 5,000 and 50,000 MCP tools.

The baseline is what every request paid before the cap, side by side in the same process: the
whole catalogue as the tool list, and ``tools_tokens`` over it.

Run: ``python bench/tool_search.py [--quick]``.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path
from types import MappingProxyType

sys.path.insert(0, str(Path(__file__).resolve().parent))

from catalogue import _ident, _words  # noqa: E402  (the same realistic tool text)

from nbagent.core.context import tools_tokens  # noqa: E402
from nbagent.core.function_tools import FunctionTools  # noqa: E402
from nbagent.core.request_tools import SEARCH_TOOL, RequestTools  # noqa: E402
from nbagent.core.router import ToolRouter  # noqa: E402
from nbagent.protocol import FunctionCall, FunctionCallOutput, Item, ToolSpec, UserMessage  # noqa: E402

QUERIES = ("create pull request", "list repository branch", "delete bucket object", "read file content")


def catalogue(n: int, rng: random.Random) -> MappingProxyType:
    provider = FunctionTools()
    specs = [
        ToolSpec(name=f"mcp__s{i // 50}__{_ident(rng)}_{i}", raw_name=f"{_ident(rng)}_{i}", server=f"s{i // 50}",
                 source="mcp", description=_words(rng, rng.randint(8, 40)).capitalize() + ".")
        for i in range(n)
    ]
    return MappingProxyType({spec.name: (spec, provider) for spec in specs})


def thread(names: list[str], rng: random.Random, size: int) -> list[Item]:
    items: list[Item] = [UserMessage(text="go")]
    while len(items) < size:
        call_id = f"c{len(items)}"
        if rng.random() < 0.2:
            found = rng.sample(names, 10)
            items += [FunctionCall(call_id=call_id, name=SEARCH_TOOL, arguments="{}"),
                      FunctionCallOutput(call_id=call_id, output="...", structured={"tools": found})]
        else:
            items += [FunctionCall(call_id=call_id, name=rng.choice(names), arguments="{}"),
                      FunctionCallOutput(call_id=call_id, output="ok")]
    return items


def median_ms(fn, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def run(n: int, rounds: int) -> None:
    rng = random.Random(n)
    cat = catalogue(n, rng)
    names = list(cat)
    items = thread(names, rng, 2000)
    view = RequestTools(128)
    view.select(cat, items)

    def before() -> None:
        tools = [spec for spec, _ in cat.values()]
        tools_tokens(tools)

    def after() -> None:  # one request: two items more, then the pick and what it costs in tokens
        items.extend(thread(names, rng, 3)[1:])
        _, carried = view.select(cat, items)
        tools_tokens(ToolRouter.for_model(carried))

    old, new = median_ms(before, rounds), median_ms(after, rounds)
    start = time.perf_counter()
    view.search(QUERIES[0], 10)
    build = (time.perf_counter() - start) * 1000
    search = statistics.median(median_ms(lambda q=q: view.search(q, 10), rounds) for q in QUERIES)
    print(f"{n:>6} tools: per request {new:.3f} ms (all tools in the request: {old:.2f} ms, ratio {new / old:.3f}); "
          f"index built on the first search {build:.0f} ms; one search {search:.2f} ms")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    args = parser.parse_args(argv)
    for n in (5_000, 50_000):
        run(n, 5 if args.quick else 30)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

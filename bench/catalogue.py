"""Catalogue benchmarks: building the model-visible catalogue of many realistic MCP tools, and
reading it per model request, printed as ratios against the targets and against a baseline
checkout of the code (run interleaved, each round in a fresh process, so both see the same
machine load).

A catalogue with more MCP tools than ``max_model_tools`` is built *deferred*: its schemas are
sanitised as their tools first go into a model request, which carries at most that many. The
targets apply to that build (the one a catalogue of 5,000 or 50,000 tools gets); the eager build
is printed beside it, and the time to complete one request's tools after it.

Run: ``python bench/catalogue.py [--baseline /path/to/old/worktree] [--quick]``. Without
``--baseline`` only the targets are compared. The baseline worktree needs only the same public
function, ``nbagent.mcp.catalog.build_catalog(servers)``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TOOLS_PER_SERVER = 50
SHARED_SERVERS = 0.2
"""Share of servers that are another server configured a second time (same tools, same schemas)."""
SHARED_SCHEMAS = 0.1
"""Share of a server's tools that reuse a schema of the same server (pagination, id lookups)."""

REQUEST_TOOLS = 128
"""Tools one model request carries at most (``max_model_tools``'s default): a deferred build
completes these for its first request."""

_WORDS = (
    "issue pull request repository branch commit label milestone project board card column user team org "
    "member comment review thread file path content encoding sha ref tag release asset workflow run job "
    "step artifact secret variable environment deployment status check page cursor limit offset sort order "
    "query filter field value table schema index row record document collection bucket object key region "
    "zone cluster node pod service namespace volume image container port host address email phone name"
).split()


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n))


def _ident(rng: random.Random) -> str:
    return "_".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 3)))


def _leaf(rng: random.Random) -> dict[str, Any]:
    kind = rng.random()
    desc = {"description": _words(rng, rng.randint(4, 14)).capitalize() + "."}
    if kind < 0.35:
        out: dict[str, Any] = {"type": "string", **desc}
        if rng.random() < 0.2:
            out["format"] = rng.choice(["date-time", "uri", "email", "uuid"])
        if rng.random() < 0.15:
            out["pattern"] = "^[A-Za-z0-9_.-]+$"
        if rng.random() < 0.2:
            out["maxLength"] = rng.choice([64, 256, 1024])
        return out
    if kind < 0.55:
        return {"type": "integer", "minimum": 0, "maximum": rng.choice([100, 1000, 10_000]), **desc}
    if kind < 0.65:
        return {"type": "boolean", "default": False, **desc}
    if kind < 0.85:
        values = sorted({_ident(rng) for _ in range(rng.randint(3, 30))})
        return {"type": "string", "enum": values, **desc}
    return {"type": "array", "items": {"type": "string"}, "maxItems": 100, **desc}


def _object(rng: random.Random, depth: int, width: int) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for _ in range(width):
        name = _ident(rng)
        if depth > 0 and rng.random() < 0.25:
            child = _object(rng, depth - 1, rng.randint(2, 5))
            props[name] = child if rng.random() < 0.5 else {"type": "array", "items": child}
        else:
            props[name] = _leaf(rng)
    required = [k for k in props if rng.random() < 0.4]
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    if rng.random() < 0.5:
        out["additionalProperties"] = False
    return out


def flat_schema(rng: random.Random) -> dict[str, Any]:
    """The everyday tool: a handful of described scalars."""
    props = {
        _ident(rng): {"type": rng.choice(["string", "integer", "boolean"]), "description": _words(rng, 8)}
        for _ in range(rng.randint(1, 6))
    }
    return {"type": "object", "properties": props, "required": list(props)[:1]}


def nested_schema(rng: random.Random) -> dict[str, Any]:
    """A hand-written API schema: nested objects and arrays of objects, enums, bounds, formats."""
    out = _object(rng, 2, rng.randint(3, 8))
    out["$schema"] = "http://json-schema.org/draft-07/schema#"
    return out


def pydantic_schema(rng: random.Random) -> dict[str, Any]:
    """What pydantic / FastMCP emit: ``$defs`` + ``$ref``, ``anyOf`` with null for optionals,
    titles on everything, defaults, and enums as their own definitions."""
    defs: dict[str, Any] = {}
    for _ in range(rng.randint(1, 3)):
        name = _ident(rng).title().replace("_", "")
        model = _object(rng, 0, rng.randint(2, 5))
        model["title"] = name
        defs[name] = model
    enum_name = _ident(rng).title().replace("_", "") + "Kind"
    defs[enum_name] = {"type": "string", "enum": sorted({_ident(rng) for _ in range(rng.randint(3, 12))}),
                       "title": enum_name}  # fmt: skip
    props: dict[str, Any] = {}
    for i in range(rng.randint(3, 7)):
        name = _ident(rng)
        roll = rng.random()
        if roll < 0.3:
            props[name] = {"$ref": f"#/$defs/{rng.choice(list(defs))}"}
        elif roll < 0.55:
            target = {"$ref": f"#/$defs/{rng.choice(list(defs))}"} if rng.random() < 0.5 else _leaf(rng)
            props[name] = {"anyOf": [target, {"type": "null"}], "default": None, "title": name.title()}
        elif roll < 0.7:
            props[name] = {"type": "array", "items": {"$ref": f"#/$defs/{enum_name}"}, "title": name.title()}
        else:
            props[name] = {**_leaf(rng), "title": name.title()}
        if i == 0:
            props[name].pop("default", None)
    return {"type": "object", "properties": props, "required": list(props)[:2], "$defs": defs,
            "title": "Arguments"}  # fmt: skip


_KINDS = ((flat_schema, 0.3), (nested_schema, 0.35), (pydantic_schema, 0.35))


def realistic_tools(rng: random.Random, n: int) -> list[dict[str, Any]]:
    """``n`` tool definitions as a server lists them (JSON, as they come off the wire)."""
    tools: list[dict[str, Any]] = []
    names: set[str] = set()
    while len(tools) < n:
        name = _ident(rng) + f"_{len(tools)}"
        names.add(name)
        if tools and rng.random() < SHARED_SCHEMAS:
            schema = json.loads(json.dumps(rng.choice(tools)["inputSchema"]))
        else:
            make = rng.choices([k for k, _ in _KINDS], [w for _, w in _KINDS])[0]
            schema = make(rng)
        tool: dict[str, Any] = {"name": name, "description": _words(rng, rng.randint(8, 40)).capitalize() + ".",
                                "inputSchema": schema}  # fmt: skip
        if rng.random() < 0.5:
            tool["annotations"] = {"readOnlyHint": rng.random() < 0.5, "title": name.replace("_", " ").title()}
        tools.append(tool)
    return tools


def realistic_servers(n_tools: int, seed: int = 0) -> dict[str, list[dict[str, Any]]]:
    """Servers of ``TOOLS_PER_SERVER`` tools each; some are another server configured twice."""
    rng = random.Random(seed)
    servers: dict[str, list[dict[str, Any]]] = {}
    count = 0
    while count < n_tools:
        n = min(TOOLS_PER_SERVER, n_tools - count)
        name = f"srv{len(servers):04d}"
        same = [s for s, tools in servers.items() if len(tools) == n]
        if same and rng.random() < SHARED_SERVERS:
            servers[name] = json.loads(json.dumps(servers[rng.choice(same)]))
        else:
            servers[name] = realistic_tools(rng, n)
        count += n
    return servers


# ----- one measurement, in a fresh process (the worker) ------------------------------------


def _as_sdk(servers: dict[str, list[dict[str, Any]]]) -> dict[str, tuple[Any, list[Any]]]:
    import mcp_types as types

    from nbagent.config import McpServerConfig

    cfg = McpServerConfig(command="true")
    return {name: (cfg, [types.Tool.model_validate(t) for t in tools]) for name, tools in servers.items()}


def _worker(args: argparse.Namespace) -> None:
    """Print one JSON line of timings for the nbagent found on ``sys.path``; ``--defer``: the
    build a catalogue over ``max_model_tools`` makes, then completing the tools of one request."""
    from nbagent.mcp.catalog import build_catalog

    servers = _as_sdk(realistic_servers(args.tools, args.seed))
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    specs, _warnings = build_catalog(servers, defer=True) if args.defer else build_catalog(servers)
    build, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert len(specs) == args.tools, len(specs)
    out = {"build": build, "cpu": cpu}
    if args.defer:
        from nbagent.mcp.catalog import Completer

        completer = Completer()
        t0 = time.perf_counter()
        shown = [completer.complete(spec) for spec in specs[:REQUEST_TOOLS]]
        out["complete"] = time.perf_counter() - t0
        assert not any(spec.deferred for spec in shown)
    print(json.dumps(out))


# ----- in-process figures of this checkout ---------------------------------------------------


def _catalogue_per_call(n_tools: int, calls: int) -> tuple[float, float]:
    """Seconds per ``router.catalogue()`` on an unchanged catalogue: this checkout, then a
    rebuild-every-call merge (what the router did before memoising) as the baseline."""
    from nbagent.core.provider import ToolProvider
    from nbagent.core.router import ToolRouter
    from nbagent.mcp.catalog import build_catalog

    specs, _ = build_catalog(_as_sdk(realistic_servers(n_tools)))

    class Fixed(ToolProvider):
        generation = 0

        def list_tools(self) -> list[Any]:
            return specs

        async def call_tool(self, *a: Any, **k: Any) -> Any:  # pragma: no cover - never called
            raise NotImplementedError

    router = ToolRouter()
    router.add(Fixed())
    router.catalogue()

    def merged() -> dict[str, Any]:
        out: dict[str, Any] = {}
        for spec in specs:
            out.setdefault(spec.name, spec)
        return out

    mine: list[float] = []
    naive: list[float] = []
    for _ in range(calls):
        t0 = time.perf_counter()
        router.catalogue()
        mine.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        merged()
        naive.append(time.perf_counter() - t0)
    return statistics.median(mine), statistics.median(naive)


def _one_server_change(n_tools: int) -> tuple[float, float, int]:
    """A rebuild after one server's tools changed: seconds, the cold build's seconds, and how many
    of the other servers' ToolSpec objects were rebuilt (should be none)."""
    from nbagent.mcp.catalog import CatalogBuilder

    servers = _as_sdk(realistic_servers(n_tools))
    builder = CatalogBuilder()
    keyed = {name: (("g", 1), cfg, tools) for name, (cfg, tools) in servers.items()}
    t0 = time.perf_counter()
    before, _ = builder.build(keyed)
    cold = time.perf_counter() - t0
    changed = next(iter(keyed))
    cfg, tools = servers[changed]
    fresh = [t.model_copy(update={"description": (t.description or "") + " (v2)"}) for t in tools]
    keyed[changed] = (("g", 2), cfg, fresh)
    t0 = time.perf_counter()
    after, _ = builder.build(keyed)
    warm = time.perf_counter() - t0
    old = {id(s) for s in before if s.server != changed}
    rebuilt = sum(1 for s in after if s.server != changed and id(s) not in old)
    return warm, cold, rebuilt


class _Standin:
    """What the manager reads of a connection to build its catalogue: a ready server's config
    and listed tools (the bench measures the build, not stdio)."""

    def __init__(self, name: str, cfg: Any, tools: list[Any]) -> None:
        self.name, self.cfg, self.state, self.generation = name, cfg, "ready", 1
        self.info = type("Info", (), {"tools": tools})()


def _loop_stall(n_tools: int) -> tuple[float, float]:
    """Longest event-loop stall while the manager builds a catalogue of ``n_tools`` tools, and
    how long the build took: it runs in a worker thread, so the loop keeps ticking."""
    import asyncio

    from nbagent.mcp.manager import McpConnectionManager

    servers = _as_sdk(realistic_servers(n_tools))

    async def run() -> tuple[float, float]:
        manager = McpConnectionManager({}, lambda e: None, lambda e: None, Path("/tmp"))
        stalls: list[float] = []
        done = asyncio.Event()

        async def tick() -> None:
            last = time.perf_counter()
            while not done.is_set():
                await asyncio.sleep(0.001)
                now = time.perf_counter()
                stalls.append(now - last)
                last = now

        ticker = asyncio.create_task(tick())
        await asyncio.sleep(0.01)
        t0 = time.perf_counter()
        manager._conns.update({name: _Standin(name, cfg, tools) for name, (cfg, tools) in servers.items()})  # type: ignore[misc]
        before = manager.generation
        manager.list_tools()  # starts the build
        while manager.generation == before:
            await asyncio.sleep(0.005)
        took = time.perf_counter() - t0
        done.set()
        await ticker
        assert len(manager.list_tools()) == n_tools
        return max(stalls) - 0.001, took

    return asyncio.run(run())


# ----- the driver ----------------------------------------------------------------------------


def _python_for(root: Path) -> str:
    venv = root / ".venv" / "bin" / "python"
    return str(venv) if venv.exists() else sys.executable


def _run_worker(root: Path, tools: int, seed: int, *, defer: bool = False) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    command = [_python_for(root), str(Path(__file__).resolve()), "--worker", "--tools", str(tools), "--seed", str(seed)]
    out = subprocess.run(
        command + (["--defer"] if defer else []), env=env, cwd=root, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="a worktree of the code to compare against")
    parser.add_argument("--quick", action="store_true", help="fewer rounds, no 50,000-tool baseline")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--tools", type=int, default=5000, help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--defer", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        _worker(args)
        return 0

    here = Path(__file__).resolve().parents[1]
    print(f"load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}, "
          f"{os.cpu_count()} cores")  # fmt: skip
    sample = [t["inputSchema"] for tools in realistic_servers(5000).values() for t in tools]
    print(f"tools: {TOOLS_PER_SERVER} per server, {len({json.dumps(x) for x in sample}) / len(sample):.0%} of schemas "
          f"distinct, {statistics.mean(len(json.dumps(x)) for x in sample):,.0f} bytes of schema on average")  # fmt: skip
    ok = True
    for n, target, rounds, base_rounds in (
        (5000, 0.250, 2 if args.quick else 3, 2 if args.quick else 3),
        (50_000, 3.0, 1 if args.quick else 2, 0 if args.quick else 1),
    ):
        mine: list[dict[str, float]] = []
        deferred: list[dict[str, float]] = []
        base: list[dict[str, float]] = []
        for r in range(rounds):
            mine.append(_run_worker(here, n, r))
            deferred.append(_run_worker(here, n, r, defer=True))
            if args.baseline is not None and r < base_rounds:
                base.append(_run_worker(args.baseline, n, r))
        best, cpu = min(m["build"] for m in mine), min(m["cpu"] for m in mine)
        line = f"cold build {n:>6,} tools   {best * 1e3:9.1f} ms  ({best / n * 1e6:5.1f} µs/tool, CPU {cpu * 1e3:,.0f} ms)" \
               f"  every schema sanitised (a catalogue within max_model_tools)"
        if base:
            b_wall, b_cpu = min(m["build"] for m in base), min(m["cpu"] for m in base)
            line += f"\n{'':23}baseline {b_wall * 1e3:9.1f} ms (CPU {b_cpu * 1e3:,.0f} ms): ratio {best / b_wall:.3f} " \
                    f"wall, {cpu / b_cpu:.3f} CPU"
        d_best, d_cpu = min(m["build"] for m in deferred), min(m["cpu"] for m in deferred)
        first = min(m["complete"] for m in deferred)
        ok &= d_best <= target
        line += f"\n{'':11}deferred  {d_best * 1e3:9.1f} ms  ({d_best / n * 1e6:5.1f} µs/tool, CPU {d_cpu * 1e3:,.0f} ms)" \
                f"  target {target * 1e3:,.0f} ms: ratio {d_best / target:.2f} {'OK' if d_best <= target else 'MISSED'}" \
                f"; its first request's {REQUEST_TOOLS} schemas {first * 1e3:.1f} ms"
        print(line, flush=True)

    per_call, naive = _catalogue_per_call(5000, 200 if args.quick else 1000)
    print(f"router.catalogue() at 5,000 tools  {per_call * 1e6:8.2f} µs per call; rebuilding per call "
          f"{naive * 1e6:8.1f} µs: ratio {per_call / naive:.4f}")  # fmt: skip
    if not args.quick:
        per_call_big, naive_big = _catalogue_per_call(50_000, 200)
        print(f"router.catalogue() at 50,000 tools {per_call_big * 1e6:8.2f} µs per call; rebuilding per call "
              f"{naive_big * 1e6:8.1f} µs: ratio {per_call_big / naive_big:.4f}")  # fmt: skip
    warm, cold, rebuilt = _one_server_change(5000)
    print(f"one server of 100 changes (5,000 tools) {warm * 1e3:7.1f} ms rebuild vs {cold * 1e3:7.1f} ms cold: "
          f"ratio {warm / cold:.3f}; other servers' tool objects rebuilt: {rebuilt}")  # fmt: skip
    ok &= rebuilt == 0
    stall, took = _loop_stall(5000 if args.quick else 50_000)
    n = 5000 if args.quick else 50_000
    print(f"event loop while {n:,} tools are applied: longest stall {stall * 1e3:6.1f} ms "
          f"during a {took * 1e3:7.1f} ms build: ratio {stall / took:.3f}")  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Long sessions stay inside the model's context window: the view is compacted, the rollout
keeps everything, and a resumed thread sends what it sent before. Real ``openai`` client, real
HTTP, the project's fake server refusing over-long bodies as a real one does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from nbagent import Session
from nbagent.config import Config, ModelProviderConfig
from nbagent.core.context import COMPACT_INSTRUCTIONS, SUMMARY_PREFIX, ContextBudget
from nbagent.protocol import Compact, ContextCompacted, Event
from tests.trusting import clean_environ

WINDOW = 6_000
CHUNK = "lorem ipsum dolor sit amet " * 45  # ~1,200 characters, ~300 tokens


def config_for(server: Any, home: Path, **extra: Any) -> Config:
    config = Config(model="test-model", model_provider="local", approval_policy="full-auto", home=str(home),
                    max_tool_rounds=250, model_providers={"local": ModelProviderConfig(
                        base_url=server.base_url, wire_api="chat", request_max_retries=0)}, **extra)
    config.api_key = "sk-test"
    return config


def tokens(body: dict[str, Any]) -> int:
    return len(json.dumps(body)) // 4


def is_summary_request(body: dict[str, Any]) -> bool:
    return body["messages"][0] == {"role": "system", "content": COMPACT_INSTRUCTIONS}


def model_rounds(rounds: int, calls: int, final: str = "All chunks read."):
    """A model that calls ``read`` ``calls`` times per response for ``rounds`` responses, then
    answers; it reports the request's real size, and summarises when asked to."""
    state = {"round": 0, "summaries": 0}

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        usage = {"input_tokens": tokens(body), "output_tokens": 20}
        if is_summary_request(body):
            state["summaries"] += 1
            return {"text": f"Summary {state['summaries']}: the user wants every chunk read; reading goes on.",
                    "usage": usage}
        state["round"] += 1
        if state["round"] > rounds:
            return {"text": final, "usage": usage}
        base = (state["round"] - 1) * calls
        return {"usage": usage, "tool_calls": [
            {"name": "read", "arguments": {"n": base + i}, "call_id": f"c{base + i}"} for i in range(calls)]}

    return respond, state


async def test_two_thousand_calls_never_pass_the_window_and_the_rollout_keeps_them_all(openai_server, home: Path) -> None:
    respond, state = model_rounds(rounds=200, calls=10)
    openai_server.respond = respond
    openai_server.context_window = WINDOW
    events: list[Event] = []
    async with Session(config=config_for(openai_server, home, model_context_window=WINDOW)) as session:
        session.register_tool(lambda n: f"chunk {n}: {CHUNK}", name="read", read_only=True)
        session.subscribe(events.append)
        result = await session.run("read chunks 0 to 1999")
    kinds = [e.msg.type for e in events]
    assert "turn_completed" in kinds and result.text == "All chunks read.", [e.msg for e in events if e.msg.type == "turn_failed"]
    assert "turn_failed" not in kinds
    sizes = [tokens(body) for body in openai_server.requests]
    assert max(sizes) <= WINDOW, "a request passed the window"
    compactions = [e.msg for e in events if e.msg.type == "context_compacted"]
    assert any(c.shortened for c in compactions) and any(c.summarized for c in compactions)
    assert all(c.tokens_after < c.tokens_before for c in compactions)
    assert state["summaries"] == sum(1 for c in compactions if c.summarized)
    lines = [json.loads(line) for line in (home / "threads" / f"{result.thread_id}.jsonl").read_text().splitlines()]
    outputs = [ln["item"] for ln in lines if ln.get("type") == "item" and ln["item"]["type"] == "function_call_output"]
    assert len(outputs) == 2_000 and all(CHUNK in o["output"] for o in outputs)
    assert sum(1 for ln in lines if ln.get("type") == "item" and ln["item"]["type"] == "compaction") == len(compactions)


async def test_a_context_length_refusal_compacts_once_and_the_turn_goes_on(openai_server, home: Path) -> None:
    respond, _ = model_rounds(rounds=4, calls=5, final="Done.")
    openai_server.respond = respond
    openai_server.context_window = 3_000  # the server's real limit is far below what config says
    events: list[Event] = []
    async with Session(config=config_for(openai_server, home, model_context_window=100_000)) as session:
        session.register_tool(lambda n: f"chunk {n}: {CHUNK}", name="read", read_only=True)
        session.subscribe(events.append)
        result = await session.run("read a few chunks")
    compactions = [e.msg for e in events if e.msg.type == "context_compacted"]
    assert result.text == "Done." and "turn_completed" in [e.msg.type for e in events]
    assert compactions[0].reason == "context_length"
    assert {c.reason for c in compactions[1:]} <= {"limit"}  # the refusal taught the budget
    refused = [b for b in openai_server.requests if tokens(b) > 3_000]
    assert len(refused) == 1


RUN_FIRST_TURN = """
import asyncio, json, sys
from nbagent import Session
async def main():
    async with Session(cwd=sys.argv[1], policy="full-auto") as session:
        session.register_tool(lambda n: "chunk %d: " % n + "lorem ipsum dolor sit amet " * 45, name="read", read_only=True)
        result = await session.run("read chunks")
        print(json.dumps({"thread": result.thread_id, "compacted": sum(1 for i in session._thread.items if i.type == "compaction")}))
asyncio.run(main())
"""


async def test_a_compacted_thread_resumed_in_a_new_process_sends_the_same_view(openai_server, home: Path, tmp_path: Path) -> None:
    respond, _ = model_rounds(rounds=12, calls=4, final="Read them.")
    openai_server.respond = respond
    openai_server.context_window = WINDOW
    (tmp_path / "nbagent.toml").write_text(
        f'model = "test-model"\nmodel_provider = "local"\nmodel_context_window = {WINDOW}\nhome = "{home}"\n'
        f'max_tool_rounds = 50\n[model_providers.local]\nbase_url = "{openai_server.base_url}"\nwire_api = "chat"\n')
    env = clean_environ() | {"OPENAI_API_KEY": "sk-test"}
    done = subprocess.run([sys.executable, "-c", RUN_FIRST_TURN, str(tmp_path)], env=env, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    first = json.loads(done.stdout.splitlines()[-1])
    assert first["compacted"] >= 1
    before = [b for b in openai_server.requests if not is_summary_request(b)][-1]["messages"]

    openai_server.respond = lambda body: {"text": "Still here.", "usage": {"input_tokens": tokens(body)}}
    async with Session(cwd=tmp_path, thread=first["thread"], policy="full-auto") as session:
        await session.run("and now?")
    after = openai_server.requests[-1]["messages"]
    assert after[0]["content"].startswith("You are an agent")
    assert any("dropped to fit the context window" in str(m.get("content")) for m in after)
    assert after[:len(before)] == before
    assert after[len(before)] == {"role": "assistant", "content": "Read them."}
    assert after[-1] == {"role": "user", "content": "and now?"}


async def test_asked_compaction_summarises_offline_with_the_replay_script(tmp_path: Path) -> None:
    script = tmp_path / "replay.json"
    script.write_text(json.dumps({"responses": [{"text": "one"}, {"text": "two"}, {"text": "three"}],
                                  "summaries": ["The user said hello twice."]}))
    async with Session(model=f"replay:{script}", home=tmp_path / "home", cwd=tmp_path) as session:
        await session.run("hello")
        await session.run("hello again")
        event = await session.perform(Compact())
        view = list(session._thread.context.sync(session._thread.items))
        await session.run("what did I say?")
        items = session._thread.items
    assert isinstance(event, ContextCompacted) and event.summarized == 4 and event.reason == "asked"
    assert [getattr(i, "text", "") for i in view] == [SUMMARY_PREFIX + "The user said hello twice."]
    assert [i.type for i in items].count("user_message") == 3  # nothing left the record


def test_the_window_comes_from_config_then_the_provider_then_known_models() -> None:
    assert ContextBudget.of(Config(), "gpt-4o-mini") == ContextBudget(128_000, 115_200)
    assert ContextBudget.of(Config(), "llama3.2") == ContextBudget(None, None)
    assert ContextBudget.of(Config(model_context_window=8_000), "llama3.2") == ContextBudget(8_000, 7_200)
    config = Config(model_provider="local", model_context_window=8_000, model_auto_compact_token_limit=5_000,
                    model_providers={"local": ModelProviderConfig(model_context_window=32_000)})
    assert ContextBudget.of(config, "anything") == ContextBudget(32_000, 5_000)


async def test_a_local_server_that_reports_its_window_is_kept_inside_it(openai_server, home: Path) -> None:
    respond, _ = model_rounds(rounds=6, calls=5, final="Done.")
    openai_server.respond = respond
    openai_server.context_window = 4_000
    openai_server.models = [{"id": "test-model", "object": "model", "owned_by": "vllm", "max_model_len": 4_000}]
    events: list[Event] = []
    async with Session(config=config_for(openai_server, home)) as session:  # no window in config
        session.register_tool(lambda n: f"chunk {n}: {CHUNK}", name="read", read_only=True)
        session.subscribe(events.append)
        result = await session.run("read some chunks")
    reasons = [e.msg.reason for e in events if e.msg.type == "context_compacted"]
    assert result.text == "Done." and reasons and set(reasons) == {"limit"}  # never refused first
    assert max(tokens(b) for b in openai_server.requests) <= 4_000

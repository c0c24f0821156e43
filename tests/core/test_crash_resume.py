"""A kernel killed mid-turn: the next process resumes the thread, valid and complete."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

CHILD = textwrap.dedent(
    """
    import asyncio, sys, time
    from nbagent import Session

    async def main(model):
        async with Session(model=model, policy="full-auto", thread_name="crashy") as session:
            def step(n: int) -> int:
                return n
            def hang() -> None:
                print("HANGING", session._thread.id, flush=True)
                time.sleep(600)
            session.register_tool(step)
            session.register_tool(hang)
            await session.run("work then hang")

    asyncio.run(main(sys.argv[1]))
    """
)

RESUME = textwrap.dedent(
    """
    import asyncio, json, sys
    from nbagent import Session
    from nbagent.store import ThreadStore

    async def main(model):
        async with Session(model=model, thread="crashy") as session:
            before = [item.model_dump(mode="json") for item in session._thread.items]
            result = await session.run("are you there?")
            store = ThreadStore(session._config.home_path)
            rebuilt = store.rebuild_index()
            row = store.list_threads()[0]
            print(json.dumps({"before": before, "text": result.text, "rebuilt": rebuilt,
                              "row_items": row.items, "history": len(session._thread.items)}))

    asyncio.run(main(sys.argv[1]))
    """
)


def test_sigkill_mid_turn_then_resume_in_a_new_process(home: Path, script, tmp_path: Path) -> None:
    steps = [{"tool_calls": [{"name": "step", "arguments": {"n": n}}]} for n in range(5)]
    first = script(*steps, {"text": "about to hang", "tool_calls": [{"name": "hang", "arguments": {}}]})
    env = {**os.environ, "NBAGENT_HOME": str(home)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, first], stdout=subprocess.PIPE, text=True, env=env)
    try:
        line = child.stdout.readline()  # the tool runs only after everything before it was flushed
        assert line.startswith("HANGING"), line
        thread_id = line.split()[1]
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
    rollout = [json.loads(x) for x in (home / "threads" / f"{thread_id}.jsonl").read_text().splitlines()]
    written = [x["item"]["id"] for x in rollout if x["type"] == "item"]

    proc = subprocess.run(
        [sys.executable, "-c", RESUME, script({"text": "still here"})],
        capture_output=True, text=True, env=env, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    before_ids = [item["id"] for item in report["before"]]
    assert before_ids[: len(written)] == written  # every complete item came back, in order
    calls = [i["call_id"] for i in report["before"] if i["type"] == "function_call"]
    outputs = {i["call_id"]: i for i in report["before"] if i["type"] == "function_call_output"}
    assert len(calls) == 6 and set(calls) == set(outputs)
    assert outputs[calls[-1]]["status"] == "aborted"
    assert report["text"] == "still here"
    assert report["rebuilt"] == 1 and report["row_items"] == report["history"]

"""``nbagent compact THREAD`` from a shell: the model's view of a saved thread becomes a summary,
the record keeps every item, and the next turn starts from the summary."""

from __future__ import annotations

import json
from pathlib import Path

from nbagent import Session
from nbagent.core.context import SUMMARY_PREFIX
from tests.cli.proc import nbagent


async def test_compact_a_saved_thread_then_resume_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    script = tmp_path / "replay.json"
    script.write_text(json.dumps({"responses": [{"text": "Noted: plot by month."}, {"text": "By month, as asked."}],
                                  "summaries": ["The user wants the sales plotted by month."]}))
    async with Session(model=f"replay:{script}", home=home, cwd=tmp_path, thread_name="sales") as session:
        await session.run("plot sales by month")
        thread = session._thread.id
    done = nbagent("compact", "sales", "-m", f"replay:{script}", home=home, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "context compacted (asked)" in done.stdout and "2 items summarised" in done.stdout
    lines = (home / "threads" / f"{thread}.jsonl").read_text().splitlines()
    kinds = [json.loads(line).get("item", {}).get("type") for line in lines]
    assert kinds.count("user_message") == 1 and kinds.count("assistant_message") == 1 and kinds.count("compaction") == 1
    async with Session(model=f"replay:{script}", home=home, cwd=tmp_path, thread="sales") as session:
        view = list(session._thread.context.sync(session._thread.items))
    assert [getattr(i, "text", None) for i in view] == [SUMMARY_PREFIX + "The user wants the sales plotted by month."]


def test_compact_names_a_thread_that_does_not_exist(tmp_path: Path) -> None:
    done = nbagent("compact", "nope", "-m", "replay:x.json", home=tmp_path / "home", cwd=tmp_path)
    assert done.returncode != 0 and "nope" in done.stderr and "Traceback" not in done.stderr

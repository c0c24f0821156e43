"""Child process of the crash-safety test: writes a thread forever-ish, confirming each line.

Usage: ``python crash_child.py HOME THREAD_ID MODE`` where MODE is ``fast`` (append as fast as
possible) or ``hang`` (stop inside a tool call, as a long-running call would). Prints
``ITEM <kind> <id>`` after each append returned, i.e. after the line is flushed to the OS.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from nbagent.protocol.items import AssistantMessage, FunctionCall, FunctionCallOutput, UserMessage
from nbagent.protocol.rollout import ItemRecord, ThreadMeta, TurnRecord
from nbagent.store import ThreadStore

MAX_TURNS = 5000  # bounded: the parent kills us long before this
HANG_AFTER_CALLS = 7


def main() -> None:
    home, thread_id, mode = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    store = ThreadStore(home)
    writer = store.create(ThreadMeta(thread_id=thread_id, name="crashy", model="replay:x"), secrets=["sk-child-secret"])
    out = sys.stdout

    def confirm(kind: str, ident: str) -> None:
        out.write(f"ITEM {kind} {ident}\n")
        out.flush()

    calls = 0
    for t in range(MAX_TURNS):
        turn = f"turn_{t}"
        writer.append(TurnRecord(turn_id=turn, status="started"))
        msg = UserMessage(turn_id=turn, text=f"step {t}: use sk-child-secret")
        writer.append(ItemRecord(item=msg))
        confirm("user_message", msg.id)
        for c in range(3):
            call = FunctionCall(
                turn_id=turn, call_id=f"call_{t}_{c}", name="run_cell", arguments=json.dumps({"code": f"x = {c}"})
            )
            writer.append(ItemRecord(item=call))
            confirm("function_call", call.id)
            calls += 1
            if mode == "hang" and calls == HANG_AFTER_CALLS:
                out.write("HANGING\n")
                out.flush()
                time.sleep(60)  # a slow tool call; the parent kills us here
                sys.exit(3)
            res = FunctionCallOutput(turn_id=turn, call_id=call.call_id, output=f"{c}\n" * 20, duration_ms=1.0)
            writer.append(ItemRecord(item=res))
            confirm("function_call_output", res.id)
        reply = AssistantMessage(turn_id=turn, text="done " * 30)
        writer.append(ItemRecord(item=reply))
        confirm("assistant_message", reply.id)
        writer.append(TurnRecord(turn_id=turn, status="completed"))
    writer.close()


if __name__ == "__main__":
    main()

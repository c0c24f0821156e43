"""A hostile elicitation form cannot freeze the kernel when the user presses Accept.

Checking a multi-select answer costs the square of the options chosen, so a server that offers
thousands of options makes one direct check hold the kernel's event loop for tens of seconds.
The form checks with the session's bounded check instead: Accept is refused within its bound,
saying why, and nothing is sent. The form runs in a child process of its own, so the checks
still working on their worker threads end with it.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

OPTIONS = 6_000
"""Chosen all at once: one direct check runs ten seconds or more (the bound is 2 s)."""
FROZEN = 90.0
"""Seconds without an answer from Accept that count as a frozen kernel."""

FORM = f"""
import json, os
from nbagent.notebook.elicitation import ElicitationForm
from nbagent.protocol import ElicitationRequested

def ask(schema):
    sent = []
    event = ElicitationRequested(request_id="r1", server="hostile", message="pick", requested_schema=schema)
    return ElicitationForm(event, sent.append), sent

form, sent = ask({{"type": "object", "properties": {{"tags": {{"type": "array", "items": {{"enum": list(range({OPTIONS}))}}}}}}}})
form.inputs["tags"].index = tuple(range({OPTIONS}))
hostile = {{"accepted": form.respond("accept"), "sent": len(sent), "problems": form.problems.value}}
small, small_sent = ask({{"type": "object", "properties": {{"tags": {{"type": "array", "items": {{"enum": ["a", "b"]}}}}}}}})
small.inputs["tags"].index = (0, 1)
valid = {{"accepted": small.respond("accept"), "content": small_sent[0].content if small_sent else None}}
print(json.dumps({{"hostile": hostile, "valid": valid}}), flush=True)
os._exit(0)  # the checks still running on daemon threads end here
"""


def test_accept_on_a_form_too_costly_to_check_is_refused_within_the_bound() -> None:
    try:
        proc = subprocess.run([sys.executable, "-c", FORM], capture_output=True, text=True, timeout=FROZEN)
    except subprocess.TimeoutExpired:
        pytest.fail(f"Accept on a {OPTIONS}-option multi-select gave no answer within {FROZEN:.0f} s: the kernel froze")
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.splitlines()[-1])
    hostile, valid = seen["hostile"], seen["valid"]
    assert hostile["accepted"] is False and hostile["sent"] == 0
    assert "could not be checked within" in hostile["problems"] and "refused" in hostile["problems"]
    assert valid == {"accepted": True, "content": {"tags": ["a", "b"]}}  # a valid answer still goes

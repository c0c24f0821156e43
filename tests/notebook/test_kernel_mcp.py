"""``%agent mcp add / restart / remove`` in a real kernel: what the next turn can call changes.

The evidence is the servers' own execution records (with the pid of the process that ran the
call) and the tool outputs in the thread history; bad sub-commands print a usage line.
"""

from __future__ import annotations

import sys

import pytest

from tests.mcp.conftest import http_server  # noqa: F401  (the real streamable-HTTP test server)
from tests.notebook.harness import SERVERS, call, executions, outputs_of

pytestmark = pytest.mark.timeout(180)

RUN = "%%agent --wait --policy full-auto\n"


def test_add_restart_remove_a_stdio_server(make_kernel, tmp_path):
    rec = tmp_path / "feat.jsonl"
    kernel, _ = make_kernel(
        call("mcp__feat__read_note", key="k1"), {"text": "Read it."},
        call("mcp__feat__read_note", key="k2"), {"text": "Read it again."},
        call("mcp__feat__read_note", key="k3"), {"text": "Gone."},
    )
    msg_id, _ = kernel.run(f"%agent mcp add feat --env RECORD_FILE={rec} -- {sys.executable} {SERVERS / 'features.py'}")
    assert "mcp server feat: ready (" in kernel.wait_output(msg_id, "mcp server feat:")
    _, listing = kernel.run("%agent mcp")
    assert "mcp__feat__read_note" in listing and "feat/read_note" in listing
    assert "feat: ready" in listing

    kernel.run(RUN + "Read note k1")
    (first,) = executions(rec)
    assert first["tool"] == "read_note" and first["key"] == "k1"
    assert outputs_of(kernel)[-1]["output"] == "note k1"

    msg_id, _ = kernel.run("%agent mcp restart feat")
    assert "(restarted)" in kernel.wait_output(msg_id, "mcp server feat: ready")
    kernel.run(RUN + "Read note k2")
    second = executions(rec)[-1]
    assert second["key"] == "k2" and second["process"] != first["process"]  # a new server process ran it

    msg_id, _ = kernel.run("%agent mcp remove feat")
    kernel.wait_output(msg_id, "mcp server feat removed")
    _, listing = kernel.run("%agent mcp")
    assert "mcp__feat__" not in listing and "mcp__demo__write_note" in listing
    kernel.run(RUN + "Read note k3")
    assert len(executions(rec)) == 2  # nothing ran the removed tool
    last = outputs_of(kernel)[-1]
    assert last["is_error"] and "unknown tool 'mcp__feat__read_note'" in last["output"]


def test_resources_and_prompts_a_server_offers_are_listed_and_read(make_kernel, tmp_path):
    kernel, _ = make_kernel({"text": "unused"})
    msg_id, _ = kernel.run(f"%agent mcp add feat -- {sys.executable} {SERVERS / 'features.py'}")
    kernel.wait_output(msg_id, "mcp server feat: ready")
    msg_id, _ = kernel.run("%agent resources")
    listing = kernel.wait_output(msg_id, "feat: 1 resource(s)")
    assert "note://hello  hello_note — A greeting note" in listing
    msg_id, _ = kernel.run("%agent resources feat note://hello")
    kernel.wait_output(msg_id, "hello from a resource")
    msg_id, _ = kernel.run("%agent prompts feat")
    assert "review code=…" in kernel.wait_output(msg_id, "feat: 1 prompt(s)")
    msg_id, _ = kernel.run("%agent prompts feat review 'code=x = 1'")
    assert "user: Please review:\nx = 1" in kernel.wait_output(msg_id, "x = 1")
    for line in ("%agent resources a b c", "%agent prompts feat review code", "%agent resources nosuch"):
        _, out = kernel.run(line)
        assert "%agent: " in out and "usage: %agent" in out and "Traceback" not in out, (line, out)


def test_add_a_streamable_http_server_with_a_bearer_token(http_server, make_kernel):  # noqa: F811  (kernel closes first)
    kernel, _ = make_kernel(call("mcp__web__add", a=2, b=3), {"text": "Five."}, env={"WEB_TOKEN": http_server.token})
    msg_id, _ = kernel.run(f"%agent mcp add web --url {http_server.url} --bearer-token-env-var WEB_TOKEN")
    assert "mcp server web: ready (2 tools)" in kernel.wait_output(msg_id, "mcp server web:")
    _, listing = kernel.run("%agent mcp")
    assert "web: ready (http" in listing and "mcp__web__add" in listing
    kernel.run(RUN + "Add 2 and 3")
    assert [(r["tool"], r["a"], r["b"]) for r in executions(http_server.record)] == [("add", 2, 3)]
    assert outputs_of(kernel)[-1]["output"].splitlines()[0] == "5"
    assert http_server.token not in kernel.eval("open(__import__('glob').glob('home/threads/*.jsonl')[0]).read()")


def test_a_server_without_its_token_fails_visibly(http_server, make_kernel):  # noqa: F811
    kernel, _ = make_kernel({"text": "unused"})
    msg_id, _ = kernel.run(f"%agent mcp add web --url {http_server.url}")
    out = kernel.wait_output(msg_id, "mcp server web:")
    assert "mcp server web: failed" in out and "Traceback" not in out
    _, status = kernel.run("%agent")
    assert "web failed" in status


BAD = [
    "%agent mcp add",
    "%agent mcp add --url http://127.0.0.1:1/mcp",
    "%agent mcp add x",
    "%agent mcp add x --url",
    "%agent mcp add x --",
    "%agent mcp add x --env A -- python s.py",
    "%agent mcp add x --url http://127.0.0.1:1/mcp -- python s.py",
    "%agent mcp add x --env A=1 --url http://127.0.0.1:1/mcp",
    "%agent mcp add x --bearer-token-env-var T -- python s.py",
    "%agent mcp add x --port 3 -- python s.py",
    "%agent mcp restart",
    "%agent mcp restart nosuch",
    "%agent mcp remove nosuch",
    "%agent mcp remove a b",
    "%agent mcp frobnicate",
]


def test_bad_mcp_arguments_print_usage_not_a_traceback(make_kernel):
    kernel, _ = make_kernel({"text": "unused"})
    kernel.run("import nbagent.notebook as nb; _ = await nb.ready()")
    for line in BAD:
        _, out = kernel.run(line)
        assert "%agent: " in out and "usage: %agent" in out and "Traceback" not in out, (line, out)
    kernel.pump(0.5)  # anything started by mistake would be reporting by now
    assert kernel.eval("sorted(nb.session().snapshot().servers)") == ["demo"]

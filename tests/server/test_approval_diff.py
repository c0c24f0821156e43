"""client -> nbagent mcp-server -> inner session whose ``apply_patch`` needs approval: the
elicitation the client is asked carries the diff of each file against what is there now (as
Codex's ``ApplyPatchApprovalRequest`` carries its changes), and an approval writes that change."""

from __future__ import annotations

from typing import Any

import mcp_types as types

from tests.server.conftest import MODES, Seen, ServerEnv, connect

PATCH = "*** Begin Patch\n*** Update File: app.py\n@@\n-    return 0\n+    return sum(items)\n*** End Patch"
DIFF = "\n".join(["  M app.py +1 −1", "  --- app.py", "  +++ app.py", "  @@ -1,2 +1,2 @@", "   def total(items):",
                  "  -    return 0", "  +    return sum(items)"])


async def test_the_forwarded_approval_of_a_patch_shows_its_diff(senv: ServerEnv) -> None:
    (senv.work / "app.py").write_text("def total(items):\n    return 0\n")
    model = senv.script({"tool_calls": [{"name": "apply_patch", "arguments": {"input": PATCH}}]}, {"text": "Fixed."})

    def approve(params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"decision": "approve"})

    seen = Seen()
    arguments: dict[str, Any] = {"prompt": "fix total", "model": model, "policy": "on-request"}
    async with connect("stdio", MODES[0], senv, seen=seen, answer=approve) as client:
        result = await client.call_tool("agent", arguments)
    assert result.structured_content["text"] == "Fixed.", result
    [asked] = seen.elicitations
    assert "What it would change, diffed against what is there now:\n" + DIFF in asked.message
    assert (senv.work / "app.py").read_text() == "def total(items):\n    return sum(items)\n"

"""A ready kernel session and its first tool call import none of jsonschema's format checkers,
nor the OAuth client where no HTTP server is configured.

Importing ``jsonschema`` imports every format checker installed beside it (Jupyter installs the
``format-nongpl`` extras); ``rfc3987_syntax`` alone compiles a grammar for seconds, which used to
delay the session's readiness and the first tool call of every kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tests.notebook.harness import Kernel

FORMAT_EXTRAS = ("rfc3987_syntax", "lark", "rfc3986_validator", "rfc3339_validator", "fqdn", "webcolors",
                 "jsonpointer", "uri_template", "isoduration", "rfc3987")
"""What ``jsonschema._format`` imports when installed (``idna`` is left out: httpx needs it anyway)."""

READY_AND_CALL = """
from nbagent.notebook.extension import get_agent
from nbagent.protocol import CallTool, ListMcpTools
_s = await get_agent().ready()
await _s.perform(ListMcpTools())
_out = await _s.perform(CallTool(name="mcp__demo__list_notes", arguments={}, policy="full-auto"))
print("CALLED", _out.status, _out.is_error)
"""


def test_ready_session_and_a_tool_call_import_no_format_checker(
    make_kernel: Callable[..., tuple[Kernel, Path]],
) -> None:
    kernel, record = make_kernel()
    _, out = kernel.run(READY_AND_CALL)
    assert "CALLED" in out and "True" not in out.split("CALLED", 1)[1], out
    assert record.exists()  # the call reached the real server
    declared = kernel.eval("[t.output_schema is not None for t in _s._mcp.list_tools() if t.raw_name == 'list_notes']")
    assert declared == [True]  # the tool has an outputSchema, so its result was checked against it
    loaded = kernel.eval(f"sorted(m for m in __import__('sys').modules if m.split('.')[0] in {FORMAT_EXTRAS!r})")
    assert loaded == []
    oauth = kernel.eval("sorted(m for m in __import__('sys').modules if m.startswith(('nbagent.mcp.oauth', 'mcp.client.auth')))")
    assert oauth == [], "the OAuth client was imported where no HTTP server is configured"


def test_loading_leaves_the_kernels_garbage_collector_as_it_was(tmp_path: Path) -> None:
    """The extension's imports run with the cyclic collector paused; the kernel gets it back
    on (a collector left off would let every reference cycle of the user's code pile up), and a
    kernel whose user turned it off keeps it off."""
    kernel = Kernel(tmp_path, env={"NBAGENT_HOME": str(tmp_path / "home")})
    try:
        kernel.run("%load_ext nbagent")
        assert kernel.eval("__import__('gc').isenabled()") is True
        kernel.run("%unload_ext nbagent")
        kernel.run("import gc, sys; gc.disable(); [sys.modules.pop(m) for m in list(sys.modules) if m.startswith('nbagent.notebook')]")
        kernel.run("%load_ext nbagent")
        assert kernel.eval("__import__('gc').isenabled()") is False
    finally:
        kernel.close()

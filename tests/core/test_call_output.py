"""What a call's output reads and keeps: one text block (the common result) gives exactly what
the general rendering gives, to the model (capped in UTF-8 bytes) and to the rollout (capped)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from nbagent import Session
from nbagent.core.tool_call import _cap_for_rollout
from nbagent.core.tool_output import render_for_model, to_model_output, truncate_utf8
from nbagent.protocol import CallTool, TextBlock, ToolResult

texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=300)


@settings(max_examples=300, deadline=None)
@given(texts, st.integers(min_value=-50, max_value=900), st.booleans(),
       st.sampled_from(["none", "wraps", "other", "two"]))
def test_one_text_block_reads_as_the_general_rendering(text: str, slack: int, error: bool, value: str) -> None:
    """Alone, or beside a structured value: one that only wraps the text (``{"result": text}``, an
    SDK server's plain return value), one that does not, one of two keys."""
    cap = max(0, len(text) + slack)  # around the text's length, where bytes and characters differ
    structured = {"none": None, "wraps": {"result": text}, "other": {"result": text + "!"},
                  "two": {"result": text, "n": 1}}[value]
    result = ToolResult(content=[TextBlock(text=text)], is_error=error, structured=structured)
    out = to_model_output(result, cap)
    assert out == truncate_utf8(render_for_model(result), cap)
    assert len(out.encode()) <= cap


@settings(max_examples=200, deadline=None)
@given(st.lists(texts, min_size=1, max_size=3), st.integers(min_value=0, max_value=700))
def test_the_rollout_keeps_what_fits_and_says_what_it_cut(blocks: list[str], cap: int) -> None:
    result = ToolResult(content=[TextBlock(text=t) for t in blocks])
    kept = _cap_for_rollout(result, cap)
    fits = sum(len(t) for t in blocks) <= cap
    assert (kept == result.content) is fits
    if not fits:
        assert kept[-1].text.endswith("more block(s) not kept: rollout cap]")


async def test_an_outside_calls_long_text_is_cut_for_the_model_but_not_for_the_caller_view(home: Path, script) -> None:
    text = "é" * 3000  # 6000 UTF-8 bytes, 3000 characters
    async with Session(model=script()) as session:
        session._config.tool_output_max_bytes = 4000
        session._config.rollout_output_max_bytes = 3000
        session.register_tool(lambda: text, name="long", read_only=True)
        output = await session.perform(CallTool(name="long", arguments={}, policy="full-auto"))
    assert len(output.output.encode()) <= 4000 and "bytes cut" in output.output
    assert [b.text for b in output.content] == [text]  # type: ignore[union-attr]

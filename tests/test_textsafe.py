"""Untrusted text made visible: what a person sees of server and model text."""

from __future__ import annotations

from nbagent.textsafe import describe_for_display


def test_describe_for_display_reveals_invisible_characters() -> None:
    assert describe_for_display("plain text\nline two\tx") == "plain text\nline two\tx"
    assert describe_for_display("a\u200bb") == "a<U+200B>b"
    assert describe_for_display("\u202egnp.exe") == "<U+202E>gnp.exe"
    assert describe_for_display("x\U000e0069\U000e0067") == "x<U+E0069><U+E0067>"  # tag characters
    assert describe_for_display("\ufeffhi\u2060\u00ad") == "<U+FEFF>hi<U+2060><U+00AD>"
    assert describe_for_display("a\x1b[31mred\r") == "a<U+001B>[31mred<U+000D>"
    assert describe_for_display("ok\ufe0f\u3164") == "ok<U+FE0F><U+3164>"
    assert describe_for_display("café 日本") == "café 日本"

"""Untrusted text made visible: what a person sees of server and model text."""

from __future__ import annotations

import pytest

from nbagent.kit.args import fail
from nbagent.textsafe import describe_for_display, folded, one_line


def test_describe_for_display_reveals_invisible_characters() -> None:
    assert describe_for_display("plain text\nline two\tx") == "plain text\nline two\tx"
    assert describe_for_display("a\u200bb") == "a<U+200B>b"
    assert describe_for_display("\u202egnp.exe") == "<U+202E>gnp.exe"
    assert describe_for_display("x\U000e0069\U000e0067") == "x<U+E0069><U+E0067>"  # tag characters
    assert describe_for_display("\ufeffhi\u2060\u00ad") == "<U+FEFF>hi<U+2060><U+00AD>"
    assert describe_for_display("a\x1b[31mred\r") == "a<U+001B>[31mred<U+000D>"
    assert describe_for_display("ok\ufe0f\u3164") == "ok<U+FE0F><U+3164>"
    assert describe_for_display("café 日本") == "café 日本"


def test_a_name_keeps_its_newline_visible_and_prose_folds_into_words() -> None:
    assert one_line("thread\nnbagent: done") == "thread\\nnbagent: done"  # cannot start a line of its own
    assert folded("Reads a file.\n\n  Args:\tpath ") == "Reads a file. Args: path"
    assert folded("a\x1b]52;c;eA==\x07b") == "a<U+001B>]52;c;eA==<U+0007>b"
    assert folded("word " * 10, 12) == "word word w…" and len(folded("x" * 500, 300)) == 300


def test_a_commands_error_line_shows_an_escape_sequence_instead_of_obeying_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert fail("nbagent", FileNotFoundError(2, "No such file or directory", "work\x1b[2J\ndir")) == 2
    err = capsys.readouterr().err
    assert err == "nbagent: work<U+001B>[2J dir: No such file or directory\n"

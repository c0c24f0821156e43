"""11-sandbox's exercise check, run as its cell runs (the walkthrough's own source): the intended
function agrees with nbagent's resolved policy on paths the notebook never tried (``.git``, ``..``,
a symlink out, a look-alike sibling, an extra root), and each kind of wrong answer is refused with
a hint naming the kind of path it got wrong."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from nbagent.examples.walkthroughs import kit
from nbagent.examples.walkthroughs.w11_sandbox import CHECK, WALKTHROUGH


def _check(answer_line: str) -> None:
    space: dict[str, Any] = {"os": os, "Path": Path, "check": kit.check}
    exec(answer_line, space)
    exec(CHECK, space)


def test_the_intended_answer_passes(capsys: pytest.CaptureFixture[str]) -> None:
    _check(WALKTHROUGH.answer)
    assert capsys.readouterr().out.startswith("Right.")


PREFIX_ONLY = (
    "def may_write(path, workspace, writable_roots):\n"
    "    real = lambda p: os.path.realpath(os.path.join(workspace, p))\n"
    "    target = real(path)\n"
    "    return any(target.startswith(real(r)) for r in ['.', *writable_roots]) and '/.git/' not in target + '/'\n"
    "answer = may_write"
)
NO_REALPATH = (
    "def may_write(path, workspace, writable_roots):\n"
    "    target = os.path.normpath(os.path.join(workspace, path))\n"
    "    roots = [os.path.normpath(os.path.join(workspace, r)) for r in ['.', *writable_roots]]\n"
    "    inside = lambda f: os.path.commonpath([target, f]) == f\n"
    "    return any(map(inside, roots)) and not any(inside(os.path.join(r, '.git')) for r in roots)\n"
    "answer = may_write"
)


@pytest.mark.parametrize(
    ("answer_line", "hint"),
    [
        (WALKTHROUGH.wrong_answer, "an absolute path is the same file"),
        ("answer = lambda path, workspace, writable_roots: '.git/' not in path + '/'", "resolve `..` first"),
        (PREFIX_ONLY, "not inside it"),
        (NO_REALPATH, "the kernel follows symlinks"),
        ("answer = lambda path, workspace, writable_roots: os.path.realpath(os.path.join(workspace, path))"
         ".startswith(workspace + '/') and '.git' not in path", "an ordinary file"),
        ("answer = lambda path, workspace, writable_roots: 'yes'", "return True or False"),
        ("answer = lambda path, workspace, writable_roots: path.startswith(workspace.parts[0])", "raised AttributeError"),
        ("answer = True", "it should be the function itself"),
    ],
    ids=["strings-only", "dotdot", "prefix-compare", "no-realpath", "dot-gitignore", "not-bool", "raises", "not-a-function"],
)
def test_a_wrong_answer_is_refused_with_a_hint(answer_line: str, hint: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(AssertionError, match="^Not yet: ") as refused:
        _check(answer_line)
    assert hint in str(refused.value)
    assert not capsys.readouterr().out, "a refusal prints nothing, the answer least of all"


def test_the_unanswered_exercise_says_what_to_do(capsys: pytest.CaptureFixture[str]) -> None:
    _check("answer = ...")
    assert capsys.readouterr().out.startswith("Exercise:")

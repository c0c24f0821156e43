"""A plain IPython terminal through real pipes: a ``%%agent --wait`` turn's ``apply_patch`` is
asked at the stdin prompt with the diff of each file printed above it; answered yes, the file
becomes what the diff showed."""

from __future__ import annotations

import pytest

from tests.notebook.harness import call
from tests.notebook.test_terminal import PROMPT, terminal  # noqa: F401  (the fixture)

pytestmark = pytest.mark.timeout(120)

PATCH = "*** Begin Patch\n*** Update File: app.py\n@@\n-    return 0\n+    return sum(items)\n*** End Patch"
DIFF = "\n".join(["  M app.py +1 −1", "  --- app.py", "  +++ app.py", "  @@ -1,2 +1,2 @@", "   def total(items):",
                  "  -    return 0", "  +    return sum(items)"])


def test_the_prompt_shows_the_patchs_diff_before_it_asks(terminal, tmp_path):  # noqa: F811
    (tmp_path / "app.py").write_text("def total(items):\n    return 0\n")
    term, _ = terminal(call("apply_patch", input=PATCH), {"text": "Fixed."})
    term.send("%%agent --wait\nFix total\n\n\n")
    at = term.expect(PROMPT)
    asked = term.text.index("? approval needed for Apply a patch to files")
    assert term.text.index(DIFF, asked) < at
    assert (tmp_path / "app.py").read_text() == "def total(items):\n    return 0\n"  # nothing before the answer
    term.send("y\n")
    term.expect("[turn completed]", after=at)
    assert (tmp_path / "app.py").read_text() == "def total(items):\n    return sum(items)\n"
    assert term.close() == 0

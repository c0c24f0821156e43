"""``%agent context on`` in a real kernel: the model sees the notebook's cells and the kernel's
names with their types and shapes, never their values; off, it sees neither."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat

from tests.notebook.harness import Kernel
from tests.waiting import wait_for

SETUP = """
import numpy as np, pandas as pd
df = pd.DataFrame({"month": ["jan", "feb", "mar"], "sales": [987654321, 2, 3]})
arr = np.full((20, 5), 31337.5)
note = "do-not-send-this-text"
def helper(x): return x
"""


def notebook_file(path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    ok = nbformat.v4.new_code_cell("df = load_sales()\n# second line", id="cell-ok", execution_count=1)
    bad = nbformat.v4.new_code_cell("df.plot(x='month')", id="cell-bad", execution_count=2)
    bad.outputs = [nbformat.v4.new_output("error", ename="KeyError", evalue="'month'", traceback=["KeyError: 'month'"])]
    nb.cells = [nbformat.v4.new_markdown_cell("# Sales by month", id="cell-md"), ok, bad]
    nbformat.write(nb, path)
    return path


def test_the_model_sees_names_types_and_shapes_but_no_values(openai_server, tmp_path: Path) -> None:
    home = tmp_path / "home"
    (tmp_path / "nbagent.toml").write_text(
        f'model = "test-model"\nmodel_provider = "local"\nhome = "{home}"\n'
        f'[model_providers.local]\nbase_url = "{openai_server.base_url}"\nwire_api = "chat"\n')
    openai_server.script([{"text": "Plotting."}, {"text": "Fine."}])
    path = notebook_file(tmp_path / "sales.ipynb")
    kernel = Kernel(tmp_path, env={"NBAGENT_HOME": str(home), "OPENAI_API_KEY": "sk-test", "JPY_SESSION_NAME": str(path)})
    try:
        kernel.run("%load_ext nbagent")
        kernel.run(SETUP)
        _, said = kernel.run("%agent context on")
        assert "notebook context: on" in said
        kernel.run("%%agent --wait\nplot df by month", timeout=120)
        wait_for(lambda: len(openai_server.requests) == 1, "the model request")
        seen = openai_server.requests[0]["messages"][0]["content"]
        assert "df: pandas.DataFrame (3 × 2: month, sales)" in seen
        assert "arr: numpy.ndarray float64 (20 × 5)" in seen
        assert "note: str (len 21)" in seen and "helper: function" in seen
        assert "cell-bad code [2]: df.plot(x='month')  ERROR: KeyError: 'month'" in seen
        assert "cell-md markdown: # Sales by month" in seen
        for value in ("987654321", "31337", "do-not-send-this-text", "load_sales()\n# second"):
            assert value not in seen
        assert any("notebook context on" in str(w.state.get("value")) for w in kernel.find("HTMLModel"))
        kernel.run("%agent context off")
        kernel.run("%%agent --wait\nthanks", timeout=120)
        wait_for(lambda: len(openai_server.requests) == 2, "the second request")
        assert "Names in the kernel" not in json.dumps(openai_server.requests[1])
    finally:
        kernel.close()

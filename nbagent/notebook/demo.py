"""``nbagent demo``: run the quickstart headlessly and say where the executed copy is."""

from __future__ import annotations

from pathlib import Path


def run_demo(output_dir: str | Path = ".", *, timeout: int = 120) -> Path:
    """Execute the quickstart with nbclient in ``output_dir``; returns the executed notebook."""
    import nbclient
    import nbformat

    from nbagent.examples.quickstart import build

    out_dir = Path(output_dir).expanduser().resolve()
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # the CLI prints it as one line: "PATH: cannot create ... (reason)"
        raise OSError(exc.errno, f"cannot create the output folder ({exc.strerror})", str(out_dir)) from None
    nb = build()
    client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(out_dir)}})
    client.execute()
    target = out_dir / "00-quickstart.executed.ipynb"
    nbformat.write(nb, str(target))
    print(f"executed quickstart written to {target}")
    return target

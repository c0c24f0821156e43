"""What each user of a JupyterHub costs with nbagent: N real Linux users (default 10) on a real hub
(tests/hub/deploy.py, the deployment tests/hub/test_hub.py checks), each running one ``%%agent``
turn at the same time through the hub, against one user alone.

- memory, per user: the kernel's unique memory (USS, what its exit frees; PSS beside it) bare and
  after ``%load_ext nbagent`` and a turn; the difference is nbagent's cost, shown against the bare
  kernel and the user's Jupyter server. Target: it is at most 1.5 times what importing the
  libraries it is built on (``import openai, mcp, ipywidgets``, in a fresh kernel of the same user)
  adds, so nbagent's own part stays small;
- turn time: the ``%%agent --wait`` cell (the scripted model, one call of the shared
  streamable-HTTP MCP server) with all N turns started at once, against the same turn run by one
  user alone (the median of three, each in a fresh kernel). Target: the median at most N / cores times the single turn (the cores shared
  fairly; no lock or queue between users makes it worse).

Run as root: ``.venv/bin/python bench/hub.py [--users N]``. It adds users ``nbh-u01`` ...; it
stops the hub, its proxy and every process it started.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.hub.deploy import Hub, start_hub  # noqa: E402

PIDS = "import os; print(os.getpid(), os.getppid())"
TURN = "%%agent --wait\nWho does the team server say I am?"
FLOOR = "import openai, mcp, ipywidgets"
MB = 1024 * 1024


def memory(pid: int) -> tuple[float, float]:
    """(USS, PSS) of ``pid`` in MB."""
    info = psutil.Process(pid).memory_full_info()
    return info.uss / MB, info.pss / MB


def one_user(hub: Hub, user: str, notebook: str, start: threading.Barrier | None) -> dict[str, float]:
    """A fresh notebook's kernel: its memory bare, then ``%load_ext nbagent``, then (when every
    user is there) one turn, timed; its memory after."""
    kernel_id = hub.open_notebook(user, notebook)
    kernel = hub.kernel(user, kernel_id)
    try:
        pids = kernel.execute(PIDS)
        kernel_pid, server_pid = map(int, pids.text.split())
        bare_uss, bare_pss = memory(kernel_pid)
        if start is None:  # alone: the same user's other fresh kernel imports only the libraries
            floor = floor_added(hub, user)
        loaded = kernel.execute("%load_ext nbagent")
        assert loaded.error is None, loaded
        if start is not None:
            start.wait()
        turn = kernel.execute(TURN)
        assert "[turn completed]" in turn.text and f"you are {user}" in turn.text, turn.text
        uss, pss = memory(kernel_pid)
        server_uss, _ = memory(server_pid)
        return {"bare_uss": bare_uss, "bare_pss": bare_pss, "uss": uss, "pss": pss, "server_uss": server_uss,
                "turn": turn.seconds, **({"floor": floor} if start is None else {})}
    finally:
        kernel.close()
        hub.server_api(user, "DELETE", f"/kernels/{kernel_id}")


def floor_added(hub: Hub, user: str) -> float:
    """What ``import openai, mcp, ipywidgets`` adds to a fresh kernel's USS, in MB."""
    kernel_id = hub.open_notebook(user, "floor.ipynb")
    kernel = hub.kernel(user, kernel_id)
    try:
        pid = int(kernel.execute(PIDS).text.split()[0])
        bare = memory(pid)[0]
        assert kernel.execute(FLOOR).error is None
        return memory(pid)[0] - bare
    finally:
        kernel.close()
        hub.server_api(user, "DELETE", f"/kernels/{kernel_id}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=10)
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bench/hub.py needs root (it adds Linux users and runs a hub): MISSED (not run)")
        return 2
    names = [f"nbh-u{i:02d}" for i in range(1, args.users + 1)]
    cores = os.cpu_count() or 1
    started = time.monotonic()
    run_dir = tempfile.TemporaryDirectory(prefix="nbagent-hub-bench-")  # the users' tokens: removed after
    hub = start_hub(Path(run_dir.name), names)
    try:
        up = time.monotonic() - started
        spawn_started = time.monotonic()
        hub.start_servers(names)
        spawned = time.monotonic() - spawn_started
        # Alone: three fresh kernels one after another, the median of each figure (one is noisy).
        alone = [one_user(hub, names[0], f"single-{i}.ipynb", None) for i in range(3)]
        single = {key: statistics.median(r[key] for r in alone) for key in alone[0]}
        barrier = threading.Barrier(len(names))
        results: dict[str, dict[str, float]] = {}

        def each(user: str) -> None:
            results[user] = one_user(hub, user, "together.ipynb", barrier)

        threads = [threading.Thread(target=each, args=(user,)) for user in names]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(results) == len(names), f"only {sorted(results)} finished"
    finally:
        hub.stop()
        run_dir.cleanup()

    def med(key: str) -> float:
        return statistics.median(r[key] for r in results.values())

    turns = sorted(r["turn"] for r in results.values())
    added = med("uss") - med("bare_uss")
    print(f"{args.users} users on {cores} cores: hub up in {up:.1f} s, {args.users} servers spawned at once in "
          f"{spawned:.1f} s")
    print(f"kernel memory per user (median): bare USS {med('bare_uss'):.0f} MB (PSS {med('bare_pss'):.0f}), "
          f"with nbagent after a turn USS {med('uss'):.0f} MB (PSS {med('pss'):.0f}): nbagent adds {added:.0f} MB; "
          f"the user's Jupyter server USS {med('server_uss'):.0f} MB")
    print(f"import openai, mcp, ipywidgets alone adds {single['floor']:.0f} MB to a bare kernel; nbagent adds "
          f"{added / med('bare_uss'):.2f} times a bare kernel's USS, {added / (med('bare_uss') + med('server_uss')):.2f} "
          f"times what a user costs without it")
    print(f"per user in all: {med('uss') + med('server_uss'):.0f} MB unique (kernel with nbagent + server)")
    print(f"turn time: one user alone {single['turn']:.2f} s; {args.users} at once median {med('turn'):.2f} s, "
          f"max {turns[-1]:.2f} s (ratio {med('turn') / single['turn']:.2f})")
    targets = [
        ("memory nbagent adds / what its libraries' imports add", added / single["floor"], 1.5),
        (f"turn time, {args.users} at once / alone (<= {args.users} users / {cores} cores)",
         med("turn") / single["turn"], args.users / cores),
    ]
    missed = 0
    for what, ratio, target in targets:
        ok = ratio <= target
        missed += not ok
        print(f"{'OK' if ok else 'MISSED'}: {what}: {ratio:.2f} (target <= {target:.2f})")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())

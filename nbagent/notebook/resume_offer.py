"""Which thread ids from a notebook's metadata may be offered for resuming (DESIGN §13).

Notebook metadata is written by whoever sent the notebook. The labextension passes the ids it
found here as JSON data (never as code) and offers only what comes back: well-formed ids of
threads that exist in this user's local store, of the latest ``MAX_NOTEBOOK_THREADS`` well-formed
ones (each costs a look-up; a notebook may list any number).
"""

from __future__ import annotations

import json
import re

from nbagent.protocol.bridge import notebook_threads

THREAD_ID = re.compile(r"thread_[0-9a-f]{20}")
"""The ids ``new_id("thread")`` makes; the labextension's ``THREAD_ID`` is the same pattern."""


class OfferedThreads(list[str]):
    """A list whose ``repr`` is JSON, so the front end can parse the kernel's ``text/plain``."""

    def __repr__(self) -> str:
        return json.dumps(list(self))


def resumable(ids_json: str) -> OfferedThreads:
    """The ids in the JSON list ``ids_json`` that are well formed and name a local thread."""
    try:
        ids = json.loads(ids_json)
    except (TypeError, ValueError):
        return OfferedThreads()
    if not isinstance(ids, list):
        return OfferedThreads()
    wanted = notebook_threads([i for i in ids if isinstance(i, str) and THREAD_ID.fullmatch(i)])
    if not wanted:
        return OfferedThreads()
    from nbagent.config import load_config
    from nbagent.store import ThreadStore

    with ThreadStore(load_config().home_path) as store:
        return OfferedThreads(i for i in wanted if store.resolve(i) == i)

"""A real ipykernel for tests, through jupyter_client: started, ready, and always shut down."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from jupyter_client import KernelManager


@contextmanager
def running_kernel(timeout: float = 60) -> Iterator[Any]:
    """A blocking client of a fresh ``python3`` kernel."""
    km = KernelManager(kernel_name="python3")
    km.start_kernel()
    client = km.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=timeout)
        yield client
    finally:
        client.stop_channels()
        km.shutdown_kernel(now=True)

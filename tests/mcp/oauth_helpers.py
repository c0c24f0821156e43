"""The OAuth test server as a fixture, and a person who signs in by following the link.

The person is an HTTP client: it opens the link an ``McpLoginRequired`` event carries, reads the
consent page, follows its "Allow" link, and is redirected to nbagent's loopback callback, as a
browser would be.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.mcp.conftest import SERVERS, _free_port, serve_until_healthy

ALLOW = re.compile(r'href="([^"]+)"')


@dataclass
class OAuthServer:
    base: str
    log: Path

    @property
    def url(self) -> str:
        return f"{self.base}/mcp"

    def state(self) -> dict[str, Any]:
        return httpx.get(f"{self.base}/test/state", timeout=10).json()

    def kinds(self) -> list[str]:
        return [event["kind"] for event in self.state()["events"]]

    def revoke_all(self) -> None:
        httpx.post(f"{self.base}/test/revoke", timeout=10).raise_for_status()


def serve_oauth(tmp_path: Path, **env: str) -> Iterator[OAuthServer]:
    """tests/servers/oauth_server.py on a free port, ready within 15 s or the test fails."""
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log = tmp_path / f"oauth-server-{port}.log"
    env = {"RECORD_FILE": str(tmp_path / "oauth-records.jsonl"), **env}
    for _pid in serve_until_healthy([str(SERVERS / "oauth_server.py"), str(port)], env, log, base):
        yield OAuthServer(base=base, log=log)


async def follow(link: str) -> httpx.Response:
    """Open the authorization link, consent, and land on the loopback callback."""
    async with httpx.AsyncClient(follow_redirects=True, timeout=30) as browser:
        page = await browser.get(link)
        page.raise_for_status()
        allow = ALLOW.search(page.text)
        assert allow, f"no Allow link on the consent page: {page.text[:200]}"
        landed = await browser.get(str(page.url.join(allow.group(1))))
        assert landed.url.host == "127.0.0.1" and landed.url.path == "/callback", landed.url
        assert landed.status_code == 200, landed.text
        return landed


@dataclass
class Person:
    """Follows every sign-in link that appears in ``events`` (optionally once ``ready()``)."""

    events: list[Any]
    ready: Callable[[], bool] = lambda: True
    links: list[str] = field(default_factory=list)
    landed: list[httpx.Response] = field(default_factory=list)
    error: BaseException | None = None
    _task: asyncio.Task[None] | None = None

    def __post_init__(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._watch())

    def _pending(self) -> list[str]:
        from nbagent.protocol import McpLoginRequired

        msgs = [getattr(e, "msg", e) for e in self.events]  # payloads, or envelopes around them
        return [m.url for m in msgs if isinstance(m, McpLoginRequired)][len(self.links):]

    async def _watch(self) -> None:
        while True:
            for link in self._pending():
                while not self.ready():
                    await asyncio.sleep(0.02)
                self.links.append(link)
                try:
                    self.landed.append(await follow(link))
                except Exception as exc:  # noqa: BLE001 - the test reports it
                    self.error = exc
                    raise
            await asyncio.sleep(0.02)

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()

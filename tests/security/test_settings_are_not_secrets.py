"""A header that is a setting (``HTTP-Referer``, ``Accept``, ``X-Title``) is not a secret: the
history the model is sent is the rollout's, so redacting a setting would cut it out of the
person's own prompt, live. A header that carries a credential is still redacted everywhere."""

from __future__ import annotations

import json
from pathlib import Path

from nbagent import Session
from nbagent.config import Config, McpServerConfig, ModelProviderConfig

REFERER = "https://example.com/myapp"
TITLE = "Research notebook"
CREDENTIALS = {
    "X-Api-Key": "provider-api-key-0123",
    "X-Auth": "web-auth-value-0123",
    "X-Session-Id": "web-session-0123456",
    "Authorization": "Bearer web-bearer-0123456",
}


async def test_a_setting_in_a_header_reaches_the_model_and_the_rollout_whole(openai_server, tmp_path: Path) -> None:
    openai_server.script([{"text": "ok"}])
    home = tmp_path / "home"
    provider = ModelProviderConfig(
        base_url=openai_server.base_url, wire_api="chat",
        http_headers={"HTTP-Referer": REFERER, "X-Title": TITLE, "X-Api-Key": CREDENTIALS["X-Api-Key"]},
    )  # fmt: skip
    web = McpServerConfig(
        url="http://127.0.0.1:9/mcp", enabled=False,
        http_headers={"Accept": "application/json", **{k: v for k, v in CREDENTIALS.items() if k != "X-Api-Key"}},
    )  # fmt: skip
    config = Config(
        model="m", model_provider="local", home=str(home), model_providers={"local": provider}, mcp_servers={"web": web}
    )
    prompt = (
        f"POST to {REFERER}/api as {TITLE!r} with Accept application/json; "
        + "; ".join(f"{name} {value}" for name, value in CREDENTIALS.items())
    )
    async with Session(config=config) as session:
        result = await session.run(prompt)
    (sent,) = [m["content"] for m in openai_server.requests[0]["messages"] if m.get("role") == "user"]
    rollout = (home / "threads" / f"{result.thread_id}.jsonl").read_text()
    (recorded,) = [
        line["item"]["text"] for line in map(json.loads, rollout.splitlines())
        if line["type"] == "item" and line["item"]["type"] == "user_message"
    ]  # fmt: skip
    for seen in (sent, recorded):
        assert f"POST to {REFERER}/api as {TITLE!r} with Accept application/json" in seen, seen
        for name, value in CREDENTIALS.items():
            secret = value.removeprefix("Bearer ")
            assert secret not in seen and f"{name} [redacted]" in seen, (name, seen)

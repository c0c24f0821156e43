"""Package runners under the sandbox: ``npx`` and ``uvx`` servers get a cache of their own under
nbagent's home, writable in every mode; the first start (empty cache) has the network to fetch
the package, every later one runs offline from the cache with the network as configured."""

from __future__ import annotations

from pathlib import Path

import pytest

from nbagent.config import Config, McpServerConfig
from nbagent.mcp.sandboxed import server_policy


@pytest.mark.parametrize(
    ("runner", "cache_var", "offline"),
    [("npx", "npm_config_cache", ("npm_config_offline", "true")), ("uvx", "UV_CACHE_DIR", ("UV_OFFLINE", "1"))],
)
def test_first_start_fetches_later_starts_run_offline(
    tmp_path: Path, runner: str, cache_var: str, offline: tuple[str, str]
) -> None:
    config = Config(home=str(tmp_path / "home"), workspace=str(tmp_path), sandbox_mode="read-only")
    cfg = McpServerConfig(command=runner, args=["some-server"])
    first = server_policy("pkg", cfg, config)
    cache = Path(first.env[cache_var])
    assert cache.is_relative_to(tmp_path / "home" / "sandbox-cache" / "pkg")
    assert first.network_access and offline[0] not in first.env
    assert str(cache) in first.writable_roots and str(cache) in first.plan()["expose"]  # type: ignore[index]
    cache.mkdir(parents=True)
    (cache / "fetched").write_text("")
    later = server_policy("pkg", cfg, config)
    assert not later.network_access and later.env[offline[0]] == offline[1]


def test_an_unsandboxed_runner_is_left_as_it_is(tmp_path: Path) -> None:
    config = Config(home=str(tmp_path / "home"), workspace=str(tmp_path), sandbox_mode="danger-full-access")
    policy = server_policy("pkg", McpServerConfig(command="npx", args=["x"]), config)
    assert policy.env == {} and policy.writable_roots == ()

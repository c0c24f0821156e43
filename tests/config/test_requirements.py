"""requirements.toml: each key lets what it allows through, refuses what someone chose outside
it (naming the key, its file and the allowed values) and brings a file's value back within it
with a warning; managed_config.toml sets defaults over the user's files."""

from __future__ import annotations

from pathlib import Path

import pytest

import nbagent.config.requirements as req
from nbagent.config import ConfigError, RequirementError, load_config


@pytest.fixture
def admin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Write the administrator's files where nbagent looks (``SEARCH_PATH``), and a user home."""
    etc = tmp_path / "etc"
    etc.mkdir()
    monkeypatch.setattr(req, "SEARCH_PATH", (etc,))
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work"
    work.mkdir()

    class Admin:
        requirements = etc / req.REQUIREMENTS_FILE

        def require(self, text: str) -> Path:
            self.requirements.write_text(text)
            return self.requirements

        def manage(self, text: str) -> None:
            (etc / req.MANAGED_FILE).write_text(text)

        def user(self, text: str) -> None:
            (home / "config.toml").write_text(text)

        def load(self, overrides: dict | None = None, **env: str):
            return load_config(work, overrides=overrides, environ={"NBAGENT_HOME": str(home), **env})

    return Admin()


def test_approval_policy_from_a_file_falls_back_and_a_chosen_one_is_refused(admin) -> None:
    path = admin.require('allowed_approval_policies = ["on-request", "untrusted"]\n')
    admin.user('approval_policy = "full-auto"\n')
    config = admin.load()
    assert config.approval_policy == "on-request"
    assert any("approval_policy = 'full-auto' is not allowed by requirements: allowed_approval_policies in "
               f"{path} allows 'on-request', 'untrusted': using 'on-request'" in w for w in config.warnings)
    assert admin.load({"approval_policy": "untrusted"}).approval_policy == "untrusted"  # tightening is fine
    with pytest.raises(RequirementError, match=rf"approval_policy = 'never' is not allowed by requirements: "
                                               rf"allowed_approval_policies in {path} allows 'on-request', 'untrusted'"):
        admin.load({"approval_policy": "never"})


def test_sandbox_modes_top_level_and_per_server(admin) -> None:
    path = admin.require('allowed_sandbox_modes = ["read-only", "workspace-write"]\n')
    admin.user('sandbox_mode = "danger-full-access"\n'
               '[mcp_servers.s]\ncommand = "srv"\nsandbox_mode = "danger-full-access"\n')
    config = admin.load()
    assert config.sandbox_mode == "read-only"
    assert config.mcp_servers["s"].sandbox_mode == "read-only"
    text = "\n".join(config.warnings)
    assert f"sandbox_mode = 'danger-full-access' is not allowed by requirements: allowed_sandbox_modes in {path}" in text
    assert "mcp_servers.s.sandbox_mode = 'danger-full-access' is not allowed" in text
    with pytest.raises(RequirementError, match="allows 'read-only', 'workspace-write'"):
        admin.load({"sandbox_mode": "danger-full-access"})


ALLOWLIST = """
[mcp_servers.py.identity]
command = "/usr/bin/python"
args = ["-m", "good_server"]
[mcp_servers.web.identity]
url = "http://good.example/mcp"
"""


@pytest.mark.parametrize(("table", "runs"), [
    ('[mcp_servers.py]\ncommand = "/usr/bin/python"\nargs = ["-m", "good_server", "--verbose"]', True),
    ('[mcp_servers.py]\ncommand = "/usr/bin/python-evil"\nargs = ["-m", "good_server"]', False),
    ('[mcp_servers.py]\ncommand = "python"\nargs = ["-m", "good_server"]', False),
    ('[mcp_servers.py]\ncommand = "/usr/bin/python"\nargs = ["-m", "good_server_evil"]', False),
    ('[mcp_servers.py]\ncommand = "/usr/bin/python"\nargs = ["-c", "import evil", "-m", "good_server"]', False),
    ('[mcp_servers.py]\nurl = "http://good.example/mcp"', False),  # a program's name with an endpoint
    ('[mcp_servers.web]\nurl = "http://good.example/mcp"', True),
    ('[mcp_servers.web]\nurl = "http://GOOD.example:80/mcp/sub"', True),
    ('[mcp_servers.web]\nurl = "http://good.example.evil/mcp"', False),
    ('[mcp_servers.web]\nurl = "http://good.example/mcp-evil"', False),
    ('[mcp_servers.web]\nurl = "http://good.example@evil.example/mcp"', False),
    ('[mcp_servers.web]\nurl = "http://good.example:8080/mcp"', False),
    ('[mcp_servers.web]\nurl = "https://good.example/mcp"', False),
    ('[mcp_servers.web]\nurl = "http://good.example/mcp/../admin"', False),
    ('[mcp_servers.web]\nurl = "http://good.example/mcp/%2e%2e/admin"', False),
    ('[mcp_servers.other]\ncommand = "/usr/bin/python"\nargs = ["-m", "good_server"]', False),  # name not listed
])
def test_server_allowlist_matches_name_and_identity(admin, table: str, runs: bool) -> None:
    path = admin.require(ALLOWLIST)
    admin.user(table + "\n")
    (name, cfg), = admin.load().mcp_servers.items()
    assert cfg.enabled is runs
    assert cfg.disabled_by == (None if runs else f"disabled by requirements ({path})")


def test_a_server_the_user_disabled_and_the_allowlist_refuses_says_why(admin) -> None:
    path = admin.require(ALLOWLIST)
    admin.user('[mcp_servers.x]\ncommand = "x"\nenabled = false\n')
    assert admin.load().mcp_servers["x"].disabled_by == f"disabled by requirements ({path})"


def test_models_and_pinned_providers(admin) -> None:
    path = admin.require('allowed_models = ["gpt-5.1", "llama3.2"]\n'
                         '[model_providers.local]\nbase_url = "http://127.0.0.1:11434/v1"\n')
    admin.user('model = "gpt-4o"\nmodel_provider = "local"\n'
               '[model_providers.local]\nbase_url = "http://evil.example/v1"\nwire_api = "chat"\n')
    config = admin.load()
    assert config.model == "gpt-5.1"
    assert config.provider().base_url == "http://127.0.0.1:11434/v1"
    assert config.provider().wire_api == "chat"  # only the pinned key changes
    text = "\n".join(config.warnings)
    assert f"model = 'gpt-4o' is not allowed by requirements: allowed_models in {path}" in text
    assert f"model_providers.local.base_url = 'http://evil.example/v1' is not allowed by requirements: {path} pins it" in text
    with pytest.raises(RequirementError, match="model = 'gpt-4o' is not allowed"):
        admin.load({"model": "gpt-4o"})
    with pytest.raises(RequirementError, match=r"model_provider = 'openai' is not allowed by requirements: model_providers in .* allows 'local'"):
        admin.load({"model_provider": "openai"})
    with pytest.raises(RequirementError, match="pins it to http://127.0.0.1:11434/v1"):
        admin.load({"model_providers": {"local": {"base_url": "http://other/v1"}}})


def test_a_provider_not_listed_falls_back_to_a_listed_one(admin) -> None:
    admin.require('[model_providers.openai]\n')
    admin.user('model_provider = "mine"\n[model_providers.mine]\nbase_url = "http://evil.example/v1"\n')
    config = admin.load(OPENAI_BASE_URL="http://evil.example/v1")
    assert config.model_provider == "openai"
    assert config.provider().base_url is None  # OpenAI's own endpoint, not the environment's
    assert any("model_provider = 'mine' is not allowed" in w for w in config.warnings)


def test_environment_variables_do_not_loosen(admin) -> None:
    admin.require('allowed_models = ["gpt-5.1"]\n[model_providers.openai]\n')
    config = admin.load(NBAGENT_MODEL="gpt-evil", OPENAI_BASE_URL="http://evil.example/v1")
    assert config.model == "gpt-5.1"
    assert config.provider().base_url is None


def test_trusting_folders_and_trusted_servers_switched_off(admin, tmp_path: Path) -> None:
    path = admin.require("allow_trusting_folders = false\nallow_trusted_servers = false\n")
    work = tmp_path / "work"
    (work / "nbagent.toml").write_text('approval_policy = "full-auto"\n')
    admin.user(f'[projects."{work}"]\ntrust_level = "trusted"\n'
               '[mcp_servers.s]\ncommand = "srv"\ntrusted = true\n')
    config = admin.load(NBAGENT_TRUSTED_FOLDERS=str(work))
    assert config.approval_policy == "on-request"  # the folder's file was not read
    assert config.mcp_servers["s"].trusted is False
    text = "\n".join(config.warnings)
    assert f"not read: trusting a folder is not allowed by requirements: allow_trusting_folders = false in {path}" in text
    assert f"trusted = true is not allowed by requirements: allow_trusted_servers = false in {path}" in text
    from nbagent.kit.args import BadInput
    from nbagent.kit.trust import run, words

    with pytest.raises(BadInput, match=f"trusting a folder is not allowed by requirements: allow_trusting_folders = false in {path}"):
        run(words(str(work), None), str(work))


def test_managed_config_sets_defaults_over_the_users_files(admin) -> None:
    admin.require('allowed_approval_policies = ["untrusted", "on-request"]\n')
    admin.manage('approval_policy = "untrusted"\nsandbox_mode = "read-only"\n')
    admin.user('approval_policy = "on-request"\nsandbox_mode = "workspace-write"\n')
    config = admin.load()
    assert (config.approval_policy, config.sandbox_mode) == ("untrusted", "read-only")
    assert admin.load({"approval_policy": "on-request"}).approval_policy == "on-request"  # within requirements


def test_a_typo_in_the_requirements_is_an_error_naming_the_file(admin) -> None:
    path = admin.require('allowed_approval_policy = ["never"]\n')
    with pytest.raises(ConfigError, match=f"{path}: key 'allowed_approval_policy'"):
        admin.load()


def test_the_first_file_to_set_a_key_wins(admin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = admin.require('allowed_approval_policies = ["untrusted"]\n')
    env = tmp_path / "env"
    env.mkdir()
    (env / req.REQUIREMENTS_FILE).write_text('allowed_approval_policies = ["full-auto"]\nallowed_models = ["m"]\n')
    monkeypatch.setattr(req, "SEARCH_PATH", (first.parent, env))
    config = admin.load()
    assert config.approval_policy == "untrusted"
    assert config.requirements.allowed_models == ["m"]
    assert config.requirements.source("allowed_models") == str(env / req.REQUIREMENTS_FILE)


def test_audit_logs_go_to_a_folder_per_user_under_audit_dir(admin, tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert req.audit_folder(admin.load().requirements, home, "alice") == home / "audit"
    admin.require(f'audit_dir = "{tmp_path / "var-log"}"\n')
    assert req.audit_folder(admin.load().requirements, home, "alice") == tmp_path / "var-log" / "alice"

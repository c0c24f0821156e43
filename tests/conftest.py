import os
import tempfile

pytest_plugins = ["tests.fakes.conftest_plugin"]

# The tests write a project's nbagent.toml or .mcp.json into their own temporary folders: those
# folders are trusted, as a user who wrote them would trust them (``nbagent.config.trust``). Tests
# of trust itself take this away (tests/security/test_project_trust.py).
os.environ["NBAGENT_TRUSTED_FOLDERS"] = os.path.realpath(tempfile.gettempdir())

"""For a test that hands nbagent an environment of its own: the variable that trusts the tests'
temporary folders (set in tests/conftest.py), so a project file written there is read."""

import os

from nbagent.config.trust import ENV

TRUSTED = {ENV: os.environ[ENV]}


def clean_environ() -> dict[str, str]:
    """This process's environment without a model, a key or nbagent's own settings (a person's
    shell), keeping the trust of the tests' folders."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "NBAGENT_"))} | TRUSTED

"""The one error configuration raises."""

from __future__ import annotations


class ConfigError(ValueError):
    """A bad config value: the message names the file and the key."""

"""The core's fixtures (an empty home, replay scripts): the kit's turn model folds real turns."""

from tests.core.conftest import home, script

__all__ = ["home", "script"]

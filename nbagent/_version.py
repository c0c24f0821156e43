"""The package version: one leaf module, so any layer can name it without importing the root."""

__version__ = "0.1.0"

"""``nbagent trust [FOLDER]``: its words; ``nbagent.kit.trust`` records and says what they mean."""

from __future__ import annotations

import argparse

from nbagent.kit.args import Parser


def add_parser(sub: argparse._SubParsersAction[Parser]) -> Parser:
    p = sub.add_parser("trust", help="read this folder's nbagent.toml and .mcp.json (or mark it untrusted)")
    p.add_argument("folder", nargs="?", help="the folder (default: the working directory); covers its subfolders")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--untrusted", action="store_true", help="never read this folder's config")
    how.add_argument("--forget", action="store_true", help="remove the folder's entry (not trusted, no longer listed)")
    how.add_argument("--list", action="store_true", help="the folders listed, and whether each is trusted")
    return p

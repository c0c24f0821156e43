"""How the model and the policy are named to the user. A scripted model is never called AI."""

from __future__ import annotations


def model_text(label: str, scripted: bool) -> str:
    if scripted:
        return label if "scripted" in label.lower() else f"scripted model ({label})"
    return label


def plural(n: int, word: str) -> str:
    """``1 turn``, ``2 turns``."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def policy_text(policy: str) -> str:
    if policy == "full-auto":
        return "full-auto: EVERY tool call runs without asking"
    if policy == "never":
        return "never: calls that need approval are declined"
    return policy

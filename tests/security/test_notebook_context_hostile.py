"""What the model sees of the kernel's names never runs the user's code and never holds a value,
whatever objects the namespace holds."""

from __future__ import annotations

import numpy as np
import pandas as pd

from nbagent.notebook.context import namespace_summary


class Tripwire:
    """Touching any attribute but the type would run code (a lazy loader, a remote proxy)."""

    touched: list[str] = []

    def __getattr__(self, name: str):
        Tripwire.touched.append(name)
        raise AttributeError(name)

    @property
    def shape(self):
        Tripwire.touched.append("shape")
        return (1, 2)


class BadLen(list):
    def __len__(self) -> int:
        raise RuntimeError("boom")


def test_foreign_objects_are_named_by_type_only() -> None:
    Tripwire.touched.clear()
    out = namespace_summary({"lazy": Tripwire(), "odd": BadLen([1])})
    assert Tripwire.touched == []
    assert "lazy: tests.Tripwire" in out
    assert "odd: BadLen" in out


def test_values_never_appear_even_in_small_containers() -> None:
    ns = {"token": "sk-live-abcdef", "pairs": {"password": "hunter2"}, "nums": [424242],
          "frame": pd.DataFrame({"a": [777777]}), "vec": np.array([8.88e8])}
    out = namespace_summary(ns)
    for value in ("sk-live-abcdef", "hunter2", "424242", "777777", "888000000", "8.88"):
        assert value not in out
    assert "frame: pandas.DataFrame (1 × 1: a)" in out and "vec: numpy.ndarray float64 (1)" in out


def test_a_huge_namespace_stays_within_the_budget() -> None:
    ns = {f"name_{i}": i for i in range(50_000)}
    out = namespace_summary(ns, max_bytes=2048)
    assert len(out.encode()) <= 2048 + 64 and out.endswith("more not shown")

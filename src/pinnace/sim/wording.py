"""Counts in the commands' sentences: "1 node", "3 nodes"."""

from __future__ import annotations


def counted(count: int, singular: str, plural: str | None = None) -> str:
    """`count` and the words after it in the number they take: the singular for exactly 1,
    else the plural (the singular and an "s" unless given): "1 pod has", "2 pods have"."""
    return f"{count} {singular if count == 1 else plural or singular + 's'}"

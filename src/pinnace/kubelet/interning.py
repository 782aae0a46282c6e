"""Values that many pods hold alike, kept once: a node agent keeps some for every pod it runs,
and the pods of one template hold equal ones."""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

T = TypeVar("T", bound=Hashable)


class Interned(Generic[T]):
    """Equal values as one object: the first seen of each. The table is emptied once it holds
    `limit` values (those in use stay with their holders), so it never grows without bound."""

    def __init__(self, limit: int = 4096) -> None:
        self._limit = limit
        self._values: dict[T, T] = {}

    def __call__(self, value: T) -> T:
        shared = self._values.get(value)
        if shared is not None:
            return shared
        if len(self._values) >= self._limit:
            self._values.clear()
        self._values[value] = value
        return value

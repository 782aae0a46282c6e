"""One seeded source of randomness per run, with an independent stream per component.

Every stream is derived from the run's seed and the component's name alone (numpy
`SeedSequence`, the name entering as a BLAKE2 digest, never Python's per-process salted
`hash()`), so a run is reproducible from its seed, and adding a component, or drawing more in
one, leaves every other component's stream unchanged.
"""

from __future__ import annotations

import hashlib
import random
import secrets

import numpy as np

# The two generators of a stream get different last words in the seed sequence's spawn key.
_NUMPY, _PYTHON = 0, 1


def _name_key(name: str) -> int:
    return int.from_bytes(hashlib.blake2b(name.encode(), digest_size=16).digest(), "little")


class Randomness:
    """A seeded stream: `random` (a `random.Random`) and `numpy` (a `numpy.random.Generator`).

    `Randomness(None)` draws a fresh seed from the OS; `seed` tells it, to replay the run.
    """

    def __init__(self, seed: int | None = None, *, _path: tuple[str, ...] = ()) -> None:
        if seed is None:
            seed = secrets.randbits(128)  # as much entropy as a fresh numpy SeedSequence draws
        if seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {seed}")
        self.seed = seed
        self.path = _path
        key = tuple(_name_key(name) for name in _path)
        self.numpy = np.random.Generator(
            np.random.PCG64(np.random.SeedSequence(seed, spawn_key=(*key, _NUMPY)))
        )
        words = np.random.SeedSequence(seed, spawn_key=(*key, _PYTHON)).generate_state(8)
        self.random = random.Random(int.from_bytes(words.tobytes(), "little"))
        self._children: dict[str, Randomness] = {}

    @property
    def name(self) -> str:
        """The path of child names from the run's root stream, joined by "/"."""
        return "/".join(self.path)

    def child(self, name: str) -> Randomness:
        """The stream for the component `name`: the same object each time it is asked for."""
        if not name:
            raise ValueError("a child stream needs a non-empty name")
        if name not in self._children:
            self._children[name] = Randomness(self.seed, _path=(*self.path, name))
        return self._children[name]

    def __repr__(self) -> str:
        return f"Randomness(seed={self.seed}, name={self.name!r})"

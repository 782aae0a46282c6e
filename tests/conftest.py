"""Fixtures every test directory shares."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from hypothesis import settings
from tests.apiserver.conftest import Harness

# Speed is the benchmarks' to judge, never a test's: no example fails for taking long (on two
# busy cores a property's example may take over hypothesis's default 200 ms).
settings.register_profile("pinnace", deadline=None)
settings.load_profile("pinnace")


@pytest.fixture
def api() -> Iterator[Harness]:
    """An in-process API server on the memory store and a virtual clock."""
    harness = Harness()
    yield harness
    harness.loop.close()
    asyncio.set_event_loop(None)

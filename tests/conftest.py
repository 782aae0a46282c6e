"""Fixtures every test directory shares."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from tests.apiserver.conftest import Harness


@pytest.fixture
def api() -> Iterator[Harness]:
    """An in-process API server on the memory store and a virtual clock."""
    harness = Harness()
    yield harness
    harness.loop.close()
    asyncio.set_event_loop(None)

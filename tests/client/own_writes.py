"""A check of the writes a component makes of its own (`Client.create_own`, `Client.patch_own`,
the kubelet's TokenRequests): each object the API server takes as it is, without decoding it,
is decoded too, and the two must be the same JSON text, byte for byte (what is stored, what the
event log's digests and every reader see)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from pinnace.api import decode as decoding
from pinnace.api.kind import Kind
from pinnace.apiserver import server, token_request
from pinnace.apiserver.create_memo import CreateMemo
from pinnace.apiserver.event_memo import EventMemo


class Checked:
    """The own writes made while it is installed, each compared with what decoding its body
    would have given."""

    def __init__(self) -> None:
        self.writes: Counter[str] = Counter()
        self.differences: list[tuple[bytes, bytes]] = []

    def __call__(self, obj: dict[str, Any], kind: Kind) -> decoding.Decoded:
        decoded = decoding.decode(obj, kind)
        taken = decoding.as_decoded(obj, kind)
        self.writes[kind.kind] += 1
        assert not decoded.warnings, decoded.warnings
        text, taken_text = orjson.dumps(decoded.obj), orjson.dumps(taken.obj)
        if text != taken_text:
            self.differences.append((text, taken_text))
        return taken


def checking(monkeypatch: pytest.MonkeyPatch) -> Iterator[Checked]:
    """Check every own write until the generator resumes; then fail on the first that
    differs (decoded, taken). The create memos are off, so each pod and Event goes through
    decoding (tests/apiserver/test_create_memo.py and test_event_memo.py show the memos' objects
    are the pipeline's)."""
    check = Checked()
    monkeypatch.setattr(CreateMemo, "recall", lambda self, template: None)
    monkeypatch.setattr(EventMemo, "recall", lambda self, template: None)
    monkeypatch.setattr(server, "as_decoded", check)
    monkeypatch.setattr(token_request, "as_decoded", check)
    yield check
    assert not check.differences, check.differences[0]

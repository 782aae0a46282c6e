"""Packed changes kept in mappings until compaction passes them: read back as written, and
unmapped once none is kept, including keys written between compaction and settling."""

from __future__ import annotations

import random

import pytest

from pinnace.store.interface import WatchEvent
from pinnace.store.mvcc import MvccState
from pinnace.store.segments import Segments


def test_changes_read_back_across_mappings_and_a_mapping_goes_with_its_last_change() -> None:
    segments = Segments(64)
    refs = {
        revision: segments.add(bytes([revision]) * revision, revision) for revision in range(1, 60)
    }
    for revision, ref in refs.items():
        if ref is None:
            assert 12 + revision > 64  # too large for a mapping: the caller keeps it
            continue
        assert segments.get(ref) == bytes([revision]) * revision
        assert segments.revision(ref) == revision
    assert [r for r, ref in refs.items() if ref is None] == list(range(53, 60))
    kept = {revision: ref for revision, ref in refs.items() if ref is not None}
    held = len(segments)
    # Out of order: a mapping goes when its last change does, whatever the others keep.
    for revision in sorted(kept, key=lambda r: (r % 3, -r)):
        if revision == 30:
            continue
        segments.drop(kept[revision])
    # 30's mapping stays, and the last one, which changes are still added to.
    staying = {kept[30] // 64, kept[52] // 64}
    assert len(segments) == len(staying) < held
    for ref in kept.values():
        if ref // 64 not in staying:
            with pytest.raises(LookupError):
                segments.get(ref)
    assert segments.get(kept[30]) == bytes([30]) * 30
    segments.drop(kept[30])
    ref = segments.add(b"again" * 10, 60)  # a new mapping: the last one, empty, goes
    assert ref is not None and segments.get(ref) == b"again" * 10
    assert len(segments) == 1


def _event(state: MvccState, rng: random.Random, keys: list[str], live: set[str]) -> WatchEvent:
    key = rng.choice(keys)
    revision = state.revision + 1
    if key in live and rng.random() < 0.15:
        live.discard(key)
        return WatchEvent("DELETED", key, {"kind": "Pod", "n": revision}, None, revision)
    kind = "MODIFIED" if key in live else "ADDED"
    live.add(key)
    return WatchEvent(
        kind, key, {"kind": "Pod", "n": revision, "pad": "x" * rng.randrange(80)}, None, revision
    )


@pytest.mark.parametrize("settle_keys", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_compaction_and_settling_release_the_mappings_and_reads_stay_right(
    seed: int, settle_keys: bool
) -> None:
    rng = random.Random(seed)
    state = MvccState(
        recent_versions=rng.choice([1, 4]),
        block=2,
        segment_bytes=512,
        settle_keys=settle_keys,
        # Some keys' latest changes held as written, more of them than may be.
        held_versions=rng.choice([0, 50]),
    )
    # More keys than settle takes in a step, so that some are written before they settle; one
    # that never settles.
    keys = [f"pods/ns/p{i}" for i in range(700)] + ["leases/n/a", "nodes//n", "pods/ns/a\0b"]
    live: set[str] = set()
    model: dict[int, dict[str, int]] = {}  # revision -> key -> the "n" of the object then

    def write() -> None:
        event = _event(state, rng, keys, live)
        state.apply(event)
        now = dict(model.get(event.revision - 1, {}))
        if event.type == "DELETED":
            now.pop(event.key)
        else:
            now[event.key] = event.object["n"]
        model[event.revision] = now

    for _ in range(8):
        for _ in range(rng.randrange(300, 1200)):
            write()
        compacted = state.revision - rng.randrange(60)
        state.compact(compacted)
        while state.settle():
            write()  # keys written while compaction's keys settle
        for revision in (compacted, rng.randrange(compacted, state.revision + 1), state.revision):
            listed = state.list("", revision, 0, None).items
            assert {(o["n"]) for o in listed} == set(model[revision].values())
            for key in rng.sample(keys, 30):
                got = state.get(key, revision)
                assert (got or {}).get("n") == model[revision].get(key)
        for revision in range(compacted + 1, state.revision + 1):
            assert state.event_at(revision).revision == revision
        # What is left is what compaction has not reached: the history since `compacted`.
        assert len(state._segments) <= 2 + (state.revision - compacted) * 110 // 512
    # Everything compacted: no mapping is left but the one changes are added to.
    state.compact(state.revision)
    while state.settle():
        pass
    assert len(state._segments) <= 1

"""Settled keys: blocks built, merged, split and thinned out read as a plain sorted map does."""

from __future__ import annotations

import random

import orjson
import pytest

from pinnace.store.settled import SettledKeys, settles

PREFIXES = ["core/events/default/", "core/pods/default/", "core/pods/kube-system/", "nodes//"]


def _key(rng: random.Random) -> str:
    name = f"web-{rng.randrange(40)}" + ("" if rng.random() < 0.5 else f".{rng.randrange(99)}")
    return rng.choice(PREFIXES) + name


def _text(key: str, revision: int) -> bytes:
    return orjson.dumps({"kind": "Pod", "metadata": {"name": key, "resourceVersion": revision}})


def _check(settled: SettledKeys, model: dict[str, tuple[int, bytes]], rng: random.Random) -> None:
    assert len(settled) == len(model)
    for prefix in ["", "core/", *PREFIXES, "core/pods/default/web-1", "zzz"]:
        after = rng.choice([None, _key(rng), prefix, ""])
        expected = [
            (k, *v)
            for k, v in sorted(model.items())
            if k.startswith(prefix) and (after is None or k > after)
        ]
        assert list(settled.scan(prefix, after)) == expected, (prefix, after)
        assert settled.count(prefix, after) == len(expected), (prefix, after)


@pytest.mark.parametrize("block", [1, 2, 3, 16])
def test_random_settling_and_leaving_read_as_a_sorted_map(block: int) -> None:
    rng = random.Random(block)
    settled = SettledKeys(block)
    model: dict[str, tuple[int, bytes]] = {}
    revision = 0
    for _ in range(150):
        batch: dict[str, tuple[int, bytes]] = {}
        for _ in range(rng.randrange(12)):
            key = _key(rng)
            if key not in model:
                revision += 1
                batch[key] = (revision, _text(key, revision))
        settled.add([(k, *v) for k, v in sorted(batch.items())])
        model.update(batch)
        for _ in range(rng.randrange(6)):
            key = rng.choice(sorted(model)) if model and rng.random() < 0.8 else _key(rng)
            assert settled.pop(key) == model.pop(key, None)
        for _ in range(5):
            key = _key(rng)
            assert settled.get(key) == model.get(key)
        _check(settled, model, rng)
    for key in sorted(model, key=lambda _: rng.random()):
        assert settled.pop(key) == model.pop(key)
    _check(settled, model, rng)


def test_a_key_read_just_before_it_settles_or_just_after_it_leaves_reads_as_it_is_then() -> None:
    # A write reads its key, then takes it out: the lookup is remembered in between.
    settled = SettledKeys(2)
    keys = [f"core/pods/default/web-{i}" for i in range(9)]
    settled.add([(k, 1, _text(k, 1)) for k in keys[::2]])
    for i, key in enumerate(keys[1::2], 2):
        assert settled.get(key) is None
        settled.add([(key, i, _text(key, i))])
        assert settled.get(key) == (i, _text(key, i))
    for key in keys:
        assert settled.get(key) is not None
        assert settled.pop(key) is not None
        assert settled.get(key) is None
        assert settled.pop(key) is None
    assert len(settled) == 0


def test_keys_holding_the_separator_are_not_settled() -> None:
    assert settles("core/pods/default/web")
    assert not settles("odd\0key")

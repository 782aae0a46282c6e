"""The sorted key set behind lists: scans and counts agree with a plain sorted list, across
chunk splits and removals."""

from __future__ import annotations

import random

from pinnace.store.sortedkeys import SortedKeys


def test_scan_and_count_match_a_sorted_list() -> None:
    rng = random.Random(7)
    names = ["a", "a/", "ab", "b/", "b/x", "\U0010ffff"]
    keys = SortedKeys()
    model: set[str] = set()
    for _ in range(5000):  # enough keys for several chunks
        key = "".join(rng.choice(names) for _ in range(rng.randint(1, 6)))
        if key in model:
            keys.remove(key)
            model.discard(key)
        else:
            keys.add(key)
            model.add(key)
    ordered = sorted(model)
    assert len(keys) == len(ordered)
    bounds = [None, "", "a", "a/", "a/b", "b/", "b/x\U0010ffff", "\U0010ffff", "z"]
    for prefix in ["", "a", "a/", "ab", "b/", "b/x", "\U0010ffff", "c"]:
        for start_after in bounds:
            expected = [
                k
                for k in ordered
                if k.startswith(prefix) and (start_after is None or k > start_after)
            ]
            assert list(keys.scan(prefix, start_after)) == expected, (prefix, start_after)
            assert keys.count(prefix, start_after) == len(expected), (prefix, start_after)


def test_stored_gives_the_string_kept_for_an_equal_key() -> None:
    keys = SortedKeys()
    kept = [f"pods/ns/web-{i}" for i in range(3000)]  # several chunks
    for key in kept:
        keys.add(key)
    for key in kept[::7]:
        equal = "".join(list(key))  # an equal string, not the same object
        assert equal is not key
        assert keys.stored(equal) is key

"""`Shared`: a value worked out once per key while remembered."""

from __future__ import annotations

from pinnace.api.objects import Shared


def test_a_value_is_made_once_per_key_until_the_limit_forgets_them_all() -> None:
    made: list[str] = []

    def make(key: str) -> str:
        made.append(key)
        return key.upper()

    shared = Shared(make, limit=2)
    assert [shared["a"], shared["a"], shared["b"], shared["a"]] == ["A", "A", "B", "A"]
    assert made == ["a", "b"]
    assert shared["c"] == "C"  # past the limit: "a" and "b" are forgotten
    assert shared["a"] == "A"
    assert made == ["a", "b", "c", "a"]
    assert "b" not in shared

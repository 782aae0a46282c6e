"""Request bodies read as kube-apiserver reads them (sigs.k8s.io/yaml over go-yaml v2)."""

from __future__ import annotations

from typing import Any

import pytest

from pinnace.apiserver.http import gojson
from pinnace.apiserver.http.bodies import yaml_to_json_strict
from pinnace.apiserver.http.gojson import duplicate_fields


@pytest.mark.parametrize(
    ("number", "value"),
    [
        ("42", 42),
        ("0x1f", 31),
        ("-9223372036854775808", -(2**63)),
        ("18446744073709551615", 2**64 - 1),
        # Beyond int64 and uint64 an integer is a float64, and the text itself when no
        # float64 holds it.
        ("18446744073709551616", 2.0**64),
        ("1" + "0" * 400, "1" + "0" * 400),
        ("1" * 100_000, "1" * 100_000),
        ("0x" + "f" * 10_000, "0x" + "f" * 10_000),
        ("1.5", 1.5),
        ("1.0e+400", "1.0e+400"),
    ],
)
def test_yaml_numbers_are_what_go_yaml_makes_of_them(number: str, value: Any) -> None:
    read = yaml_to_json_strict(f"a: {number}\n".encode())[0]["a"]
    assert (type(read), read) == (type(value), value)


@pytest.mark.parametrize(
    ("text", "repeated"),
    [
        (b'{"a": 1, "b": {"c": "x:y", "d": [1, 2]}}', []),
        (b'{"a": 1, "a": 2}', ["a"]),
        (b'{"m": {"labels": {"x": "1", "y": "2", "x": "3"}}}', ["m.labels.x"]),
        (b'{"s": {"c": [{"n": "a"}, {"n": "b", "n": "c"}]}}', ["s.c[1].n"]),
        # Each once, in the order the repeats come; one a \\u escape spells is one too.
        (b'{"b": 1, "a": 1, "b": 2, "a": 2, "b": 3}', ["b", "a"]),
        (b'{"a": 1, "\\u0061": 2}', ["a"]),
        (b'{"a": "\\u003a", "b": 1}', []),
        # A repeat whose value is lost with it, colons and all.
        (b'{"a": {"x": 1, "y": 2}, "a": {}}', ["a"]),
        (b'{"n": 1e400, "n": 2}', ["n"]),
    ],
)
def test_duplicate_fields_are_found_with_their_paths(text: bytes, repeated: list[str]) -> None:
    assert duplicate_fields(text, gojson.loads(text)) == repeated


def test_at_most_100_duplicate_fields_are_reported() -> None:
    text = b"{" + b",".join(b'"k%d": 1, "k%d": 2' % (i, i) for i in range(150)) + b"}"
    assert duplicate_fields(text, gojson.loads(text)) == [f"k{i}" for i in range(100)]

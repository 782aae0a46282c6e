"""Request bodies read as kube-apiserver reads them (sigs.k8s.io/yaml over go-yaml v2)."""

from __future__ import annotations

from typing import Any

import pytest

from pinnace.apiserver.http.bodies import yaml_to_json


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
    read = yaml_to_json(f"a: {number}\n".encode())["a"]
    assert (type(read), read) == (type(value), value)

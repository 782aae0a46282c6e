"""Names the client sent, quoted in messages as kube-apiserver quotes them (strconv.Quote)."""

from __future__ import annotations

import pytest

from pinnace.api.goquote import quote


@pytest.mark.parametrize(
    ("text", "quoted"),
    [
        ("spec.foo", '"spec.foo"'),
        ('a"b\\c', '"a\\"b\\\\c"'),
        ("del\x7f", '"del\\x7f"'),
        ("nl\n\t\x00", '"nl\\n\\t\\x00"'),
        ("café ☃", '"café ☃"'),
        ("\u0085\u200b", '"\\u0085\\u200b"'),
        ("\U000e0001", '"\\U000e0001"'),
    ],
)
def test_quote_escapes_what_is_not_printable_as_go_does(text: str, quoted: str) -> None:
    assert quote(text) == quoted

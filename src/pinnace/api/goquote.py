"""Go's strconv.Quote, which kube-apiserver's messages use to show a name or path the client
sent (`unknown field "spec.x"`): a double-quoted Go string literal in which every character
that is not printable is escaped, so the text is safe in a header or a log line."""

from __future__ import annotations

_NAMED = {7: "\\a", 8: "\\b", 12: "\\f", 10: "\\n", 13: "\\r", 9: "\\t", 11: "\\v"}


def quote(text: str) -> str:
    return '"' + "".join(_escaped(c) for c in text) + '"'


def _escaped(c: str) -> str:
    if c in '"\\':
        return "\\" + c
    if c.isprintable():
        return c
    code = ord(c)
    if code in _NAMED:
        return _NAMED[code]
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"  # Go holds no lone surrogates: its decoder made them U+FFFD
    if code < 0x10000:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"

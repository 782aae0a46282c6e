"""Parsing request bodies as JSON, with Go's encoding/json error messages.

kube-apiserver reports a malformed body with the message of Go's JSON scanner (`invalid
character 'x' looking for beginning of object key string`, `unexpected end of JSON input`),
and clients show it to users. orjson parses; when it refuses, a transcription of the scanner's
state machine (encoding/json/scanner.go) finds the first error and words it as Go does.

Valid JSON orjson refuses is read on a second, slower parse, as Go reads it: invalid UTF-8
and lone surrogate escapes become U+FFFD, and a number no float64 holds becomes an
`OutOfRangeNumber`, which an unknown field drops and a typed field refuses, as Go's decoder
does. Difference, on purpose: Go allows nesting 10,000 deep, Pinnace about 1,000.
"""

from __future__ import annotations

import json
import re
from typing import Any

import orjson

from pinnace.api.schema import OutOfRangeNumber

MAX_NESTING_DEPTH = 10000
_SPACE = b" \t\r\n"
_DIGITS = b"0123456789"
_HEX = b"0123456789abcdefABCDEF"
_ESCAPES = b'bfnrt\\/"'


class JSONSyntaxError(ValueError):
    """A body that is not JSON; the message is Go's."""


def loads(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    message = syntax_error(data)
    if message:
        raise JSONSyntaxError(message)
    try:
        value = json.loads(data.decode("utf-8", "replace"), parse_int=_integer, parse_float=_float)
    except RecursionError:
        raise JSONSyntaxError("exceeded max depth") from None
    return _without_surrogates(value)


def duplicate_fields(data: bytes, value: Any) -> list[str]:
    """The paths of the keys the JSON text `data` (parsed as `value`) repeats within an object,
    in the order the repeats come and worded as sigs.k8s.io/json's strict decoding words them
    (`metadata.labels.app`, `spec.containers[0].name`), at most 100.

    Every key is followed by a colon outside strings, and a parse keeps one key of each repeat
    (the last value): without an escape that could spell a colon, `value` written back holds as
    many colons as `data` exactly when nothing repeats, which two scans of C tell at once."""
    if b"\\u" not in data:
        try:
            written = orjson.dumps(value)
        except TypeError:  # an OutOfRangeNumber: the slow way
            pass
        else:
            if written.count(b":") == data.count(b":"):
                return []
    try:
        pairs = json.loads(
            data.decode("utf-8", "replace"),
            object_pairs_hook=_Pairs,
            parse_int=str,
            parse_float=str,
            parse_constant=str,
        )
    except (RecursionError, ValueError):
        return []
    found: list[str] = []
    _repeats(pairs, "", found)
    return list(dict.fromkeys(found))[:MAX_STRICT_ERRORS]


MAX_STRICT_ERRORS = 100
"""sigs.k8s.io/json keeps this many strict errors, each once."""


class _Pairs(list[tuple[str, Any]]):
    """An object's members as the text has them, repeats included."""


def _repeats(value: Any, path: str, found: list[str]) -> None:
    if type(value) is _Pairs:
        seen: set[str] = set()
        for key, item in value:
            child = f"{path}.{key}" if path else key
            if key in seen:
                found.append(child)
            seen.add(key)
            _repeats(item, child, found)
    elif type(value) is list:
        for i, item in enumerate(value):
            _repeats(item, f"{path}[{i}]", found)


_U64 = 2**64
_I64_MIN = -(2**63)
_SURROGATES = re.compile("[\ud800-\udfff]")


def _integer(text: str) -> int | float:
    """An integer as orjson reads it: exact within int64/uint64, else a float64."""
    if len(text) <= 20:
        number = int(text)
        if _I64_MIN <= number < _U64:
            return number
    return _float(text)


def _float(text: str) -> float:
    number = float(text)
    return number if number not in (float("inf"), float("-inf")) else OutOfRangeNumber(text)


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return _SURROGATES.sub("\ufffd", value)
    if isinstance(value, list):
        return [_without_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    return value


def quote_char(c: int) -> str:
    """Go's quoteChar: the byte as a single-quoted Go string literal."""
    if c == ord("'"):
        return "'\\''"
    if c == ord('"'):
        return "'\"'"
    char = chr(c)
    if char.isprintable():
        return f"'{char}'"
    named = {7: "\\a", 8: "\\b", 12: "\\f", 10: "\\n", 13: "\\r", 9: "\\t", 11: "\\v"}
    if c in named:
        return f"'{named[c]}'"
    if c < 0x80:
        return f"'\\x{c:02x}'"
    return f"'\\u{c:04x}'"


_LITERALS = {ord("t"): b"true", ord("f"): b"false", ord("n"): b"null"}


class _Scanner:
    """Go's scanner: one method per state; each returns the next state or raises."""

    OBJECT_KEY, OBJECT_VALUE, ARRAY_VALUE = range(3)

    def __init__(self) -> None:
        self.parse: list[int] = []
        self.end_top = False
        self.literal = b""
        self.literal_at = 0

    def error(self, c: int, context: str) -> JSONSyntaxError:
        return JSONSyntaxError(f"invalid character {quote_char(c)} {context}")

    def push(self, state: int) -> None:
        self.parse.append(state)
        if len(self.parse) > MAX_NESTING_DEPTH:
            raise JSONSyntaxError("exceeded max depth")

    def pop(self) -> Any:
        self.parse.pop()
        if not self.parse:
            self.end_top = True
            return self.end_top_state
        return self.end_value

    def begin_value(self, c: int) -> Any:
        if c in _SPACE:
            return self.begin_value
        if c == ord("{"):
            self.push(self.OBJECT_KEY)
            return self.begin_string_or_empty
        if c == ord("["):
            self.push(self.ARRAY_VALUE)
            return self.begin_value_or_empty
        if c == ord('"'):
            return self.in_string
        if c == ord("-"):
            return self.neg
        if c == ord("0"):
            return self.zero
        if ord("1") <= c <= ord("9"):
            return self.one
        if c in _LITERALS:
            self.literal, self.literal_at = _LITERALS[c], 1
            return self.in_literal
        raise self.error(c, "looking for beginning of value")

    def begin_value_or_empty(self, c: int) -> Any:
        if c in _SPACE:
            return self.begin_value_or_empty
        if c == ord("]"):
            return self.end_value(c)
        return self.begin_value(c)

    def begin_string_or_empty(self, c: int) -> Any:
        if c in _SPACE:
            return self.begin_string_or_empty
        if c == ord("}"):
            self.parse[-1] = self.OBJECT_VALUE
            return self.end_value(c)
        return self.begin_string(c)

    def begin_string(self, c: int) -> Any:
        if c in _SPACE:
            return self.begin_string
        if c == ord('"'):
            return self.in_string
        raise self.error(c, "looking for beginning of object key string")

    def end_value(self, c: int) -> Any:
        if not self.parse:
            self.end_top = True
            return self.end_top_state(c)
        if c in _SPACE:
            return self.end_value
        state = self.parse[-1]
        if state == self.OBJECT_KEY:
            if c == ord(":"):
                self.parse[-1] = self.OBJECT_VALUE
                return self.begin_value
            raise self.error(c, "after object key")
        if state == self.OBJECT_VALUE:
            if c == ord(","):
                self.parse[-1] = self.OBJECT_KEY
                return self.begin_string
            if c == ord("}"):
                return self.pop()
            raise self.error(c, "after object key:value pair")
        if c == ord(","):
            return self.begin_value
        if c == ord("]"):
            return self.pop()
        raise self.error(c, "after array element")

    def end_top_state(self, c: int) -> Any:
        if c not in _SPACE:
            raise self.error(c, "after top-level value")
        return self.end_top_state

    def in_string(self, c: int) -> Any:
        if c == ord('"'):
            return self.end_value
        if c == ord("\\"):
            return self.in_string_escape
        if c < 0x20:
            raise self.error(c, "in string literal")
        return self.in_string

    def in_string_escape(self, c: int) -> Any:
        if c in _ESCAPES:
            return self.in_string
        if c == ord("u"):
            self.literal_at = 0
            return self.in_string_escape_u
        raise self.error(c, "in string escape code")

    def in_string_escape_u(self, c: int) -> Any:
        if c not in _HEX:
            raise self.error(c, "in \\u hexadecimal character escape")
        self.literal_at += 1
        return self.in_string if self.literal_at == 4 else self.in_string_escape_u

    def neg(self, c: int) -> Any:
        if c == ord("0"):
            return self.zero
        if ord("1") <= c <= ord("9"):
            return self.one
        raise self.error(c, "in numeric literal")

    def one(self, c: int) -> Any:
        if c in _DIGITS:
            return self.one
        return self.zero(c)

    def zero(self, c: int) -> Any:
        if c == ord("."):
            return self.dot
        if c in b"eE":
            return self.exponent
        return self.end_value(c)

    def dot(self, c: int) -> Any:
        if c in _DIGITS:
            return self.dot_digits
        raise self.error(c, "after decimal point in numeric literal")

    def dot_digits(self, c: int) -> Any:
        if c in _DIGITS:
            return self.dot_digits
        if c in b"eE":
            return self.exponent
        return self.end_value(c)

    def exponent(self, c: int) -> Any:
        if c in b"+-":
            return self.exponent_sign
        return self.exponent_sign(c)

    def exponent_sign(self, c: int) -> Any:
        if c in _DIGITS:
            return self.exponent_digits
        raise self.error(c, "in exponent of numeric literal")

    def exponent_digits(self, c: int) -> Any:
        if c in _DIGITS:
            return self.exponent_digits
        return self.end_value(c)

    def in_literal(self, c: int) -> Any:
        expected = self.literal[self.literal_at]
        if c != expected:
            word = self.literal.decode()
            raise self.error(c, f"in literal {word} (expecting {quote_char(expected)})")
        self.literal_at += 1
        return self.end_value if self.literal_at == len(self.literal) else self.in_literal


def syntax_error(data: bytes) -> str:
    """Go's message for the first syntax error in `data`, or "" if it is valid JSON."""
    scanner = _Scanner()
    state = scanner.begin_value
    try:
        for c in data:
            state = state(c)
        if scanner.end_top:
            return ""
        state(ord(" "))
        if scanner.end_top:
            return ""
    except JSONSyntaxError as e:
        return str(e)
    return "unexpected end of JSON input"

"""Field paths and field errors, worded as apimachinery's util/validation/field.

A validation function returns a list of `FieldError`; the API server turns a non-empty list
into a 422 Invalid `Status` whose causes name each field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import Enum
from typing import Any


class Path:
    """A path to a field: `spec.containers[0].resources.limits[cpu]`.

    Immutable; `child`, `index` and `key` return new paths. A derived path only records its
    parent and its step, and spells itself out when printed or compared: validators build a
    path for every field they look at, and most are never printed.
    """

    __slots__ = ("_parent", "_parts", "_step")

    def __init__(self, *names: str) -> None:
        self._parent: Path | None = None
        self._step: tuple[str, ...] | str = ()
        self._parts: tuple[str, ...] | None = tuple(names)

    def child(self, name: str, *more: str) -> Path:
        # _derived inlined: this is called for nearly every field validated.
        path = Path.__new__(Path)
        path._parent = self
        path._step = (name, *more)
        path._parts = None
        return path

    def index(self, i: int) -> Path:
        return self._derived(str(i))

    def key(self, k: str) -> Path:
        return self._derived(k)

    def _derived(self, step: tuple[str, ...] | str) -> Path:
        """A path one step below: more names (a tuple) or a subscript (a string)."""
        path = Path.__new__(Path)
        path._parent = self
        path._step = step
        path._parts = None
        return path

    def _spelled(self) -> tuple[str, ...]:
        if self._parts is None:
            assert self._parent is not None  # only derived paths are spelled lazily
            parts = self._parent._spelled()
            step = self._step
            if isinstance(step, tuple):
                parts = (*parts, *step)
            elif parts:
                parts = (*parts[:-1], f"{parts[-1]}[{step}]")
            else:
                parts = (f"[{step}]",)
            self._parts = parts
        return self._parts

    def __str__(self) -> str:
        return ".".join(self._spelled())

    def __repr__(self) -> str:
        return f"Path({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Path) and other._spelled() == self._spelled()

    def __hash__(self) -> int:
        return hash(self._spelled())


class ErrorType(Enum):
    """The kinds of field error; `value` is the wording, `reason` the Status cause reason."""

    NOT_FOUND = ("Not found", "FieldValueNotFound")
    REQUIRED = ("Required value", "FieldValueRequired")
    DUPLICATE = ("Duplicate value", "FieldValueDuplicate")
    INVALID = ("Invalid value", "FieldValueInvalid")
    NOT_SUPPORTED = ("Unsupported value", "FieldValueNotSupported")
    FORBIDDEN = ("Forbidden", "FieldValueForbidden")
    TOO_LONG = ("Too long", "FieldValueTooLong")
    TOO_MANY = ("Too many", "FieldValueTooMany")
    INTERNAL = ("Internal error", "InternalError")
    TYPE_INVALID = ("Invalid value", "FieldValueTypeInvalid")

    @property
    def wording(self) -> str:
        return self.value[0]

    @property
    def reason(self) -> str:
        return self.value[1]


_OMIT = object()
# Error types whose message never shows the bad value, as in apimachinery.
_VALUELESS = {ErrorType.REQUIRED, ErrorType.FORBIDDEN, ErrorType.TOO_LONG, ErrorType.INTERNAL}


def _go_value(value: Any) -> str:
    """Render a bad value the way Go's fmt does in field errors (%q for strings, %v else).
    A nil value (or nil pointer) becomes the string "null" before it is printed, so %q
    quotes it (apimachinery's field.Error.ErrorBody)."""
    if value is None:
        return '"null"'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list | tuple):
        return "[" + " ".join(_go_value(v) for v in value) + "]"
    if isinstance(value, dict):
        items = " ".join(f"{k}:{_go_value(v)}" for k, v in value.items())
        return f"map[{items}]"
    return str(value)


@dataclass(frozen=True)
class FieldError:
    type: ErrorType
    field: str
    bad_value: Any = _OMIT
    detail: str = ""

    @property
    def body(self) -> str:
        """The message without the field, as a Status cause's `message`."""
        if self.type in _VALUELESS or self.bad_value is _OMIT:
            text = self.type.wording
        else:
            text = f"{self.type.wording}: {_go_value(self.bad_value)}"
        if self.detail:
            text += f": {self.detail}"
        return text

    def __str__(self) -> str:
        return f"{self.field}: {self.body}" if self.field else self.body

    def cause(self) -> dict[str, str]:
        return {"reason": self.type.reason, "message": self.body, "field": self.field}


def _field(path: Path | str) -> str:
    # Go's field.NewPath("") spells an empty path "[]", as in `[]: Too long: …`.
    return str(path) or "[]"


def not_found(path: Path | str, value: Any) -> FieldError:
    return FieldError(ErrorType.NOT_FOUND, _field(path), value)


def required(path: Path | str, detail: str = "") -> FieldError:
    return FieldError(ErrorType.REQUIRED, _field(path), _OMIT, detail)


def duplicate(path: Path | str, value: Any) -> FieldError:
    return FieldError(ErrorType.DUPLICATE, _field(path), value)


def invalid(path: Path | str, value: Any, detail: str = "") -> FieldError:
    return FieldError(ErrorType.INVALID, _field(path), value, detail)


def not_supported(
    path: Path | str, value: Any, supported: list[str] | tuple[str, ...]
) -> FieldError:
    detail = ""
    if supported:
        detail = "supported values: " + ", ".join(json.dumps(s) for s in supported)
    return FieldError(ErrorType.NOT_SUPPORTED, _field(path), value, detail)


def forbidden(path: Path | str, detail: str) -> FieldError:
    return FieldError(ErrorType.FORBIDDEN, _field(path), _OMIT, detail)


def too_long(path: Path | str, value: Any, max_length: int) -> FieldError:
    return FieldError(
        ErrorType.TOO_LONG, _field(path), value, f"must have at most {max_length} bytes"
    )


def too_many(path: Path | str, actual: int, max_quantity: int) -> FieldError:
    return FieldError(
        ErrorType.TOO_MANY, _field(path), actual, f"must have at most {max_quantity} items"
    )


def internal(path: Path | str, detail: str) -> FieldError:
    return FieldError(ErrorType.INTERNAL, _field(path), _OMIT, detail)


def type_invalid(path: Path | str, value: Any, detail: str) -> FieldError:
    return FieldError(ErrorType.TYPE_INVALID, _field(path), value, detail)


def aggregate_message(errors: list[FieldError]) -> str:
    """Several errors read `[a, b]`, one reads as itself — apimachinery's aggregate."""
    texts = list(dict.fromkeys(str(e) for e in errors))
    if len(texts) == 1:
        return texts[0]
    return "[" + ", ".join(texts) + "]"

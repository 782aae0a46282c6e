"""The CEL functions Kubernetes v1.32 adds to the rules of `x-kubernetes-validations`, for
celpy: cel-go's string extension (ext.Strings), the Kubernetes libraries of
k8s.io/apiserver/pkg/cel/library (lists.go, regex.go, urls.go, quantity.go) and the few
standard functions celpy lacks.

A function takes the method's target first (`"a".indexOf("b")` calls `indexOf("a", "b")`)
and returns an error value, not an exception, where cel-go's would fail (`LibraryError`).
"""

from __future__ import annotations

import functools
import itertools
import urllib.parse
from collections.abc import Callable
from fractions import Fraction
from typing import Any

import re2
from celpy import celtypes
from celpy.evaluation import CELEvalError

from pinnace.resources.quantity import Quantity, QuantityError

Value = Any
Function = Callable[..., Value]


class LibraryError(Exception):
    """The class a library function's error value names: its message is cel-go's."""


def error(message: str) -> CELEvalError:
    return CELEvalError(message, LibraryError, ())


def _string(value: Value) -> str:
    if not isinstance(value, str):
        raise TypeError("no such overload")
    return value


def _int(value: Value) -> int:
    if not isinstance(value, int) or isinstance(value, bool | celtypes.BoolType):
        raise TypeError("no such overload")
    return int(value)


# --- strings (cel-go ext.Strings, version 2 as Kubernetes v1.32 declares it) -----------------


def char_at(text: Value, index: Value) -> Value:
    text, i = _string(text), _int(index)
    if i < 0 or i > len(text):
        return error(f"index out of range: {i}")
    return celtypes.StringType(text[i : i + 1])


def index_of(target: Value, sought: Value, offset: Value = None) -> Value:
    """A string's `indexOf(sub[, offset])`, or a list's `indexOf(value)`."""
    if isinstance(target, list):
        return celtypes.IntType(next((i for i, v in enumerate(target) if v == sought), -1))
    text, sub = _string(target), _string(sought)
    start = 0 if offset is None else _int(offset)
    if start < 0 or start > len(text):
        return error(f"index out of range: {start}")
    return celtypes.IntType(text.find(sub, start))


def last_index_of(target: Value, sought: Value, offset: Value = None) -> Value:
    if isinstance(target, list):
        found = [i for i, v in enumerate(target) if v == sought]
        return celtypes.IntType(found[-1] if found else -1)
    text, sub = _string(target), _string(sought)
    end = len(text) if offset is None else _int(offset)
    if end < 0 or end > len(text):
        return error(f"index out of range: {end}")
    return celtypes.IntType(text.rfind(sub, 0, end + len(sub)))


def lower_ascii(text: Value) -> Value:
    return celtypes.StringType("".join(c.lower() if c.isascii() else c for c in _string(text)))


def upper_ascii(text: Value) -> Value:
    return celtypes.StringType("".join(c.upper() if c.isascii() else c for c in _string(text)))


def replace(text: Value, old: Value, new: Value, limit: Value = None) -> Value:
    count = -1 if limit is None else _int(limit)
    return celtypes.StringType(_string(text).replace(_string(old), _string(new), count))


def split(text: Value, separator: Value, limit: Value = None) -> Value:
    text, sep = _string(text), _string(separator)
    n = -1 if limit is None else _int(limit)
    if n == 0:
        return celtypes.ListType()
    if sep == "":
        parts = list(text) if n < 0 else [*text[: n - 1], text[n - 1 :]] if text else []
    else:
        parts = text.split(sep, n - 1 if n > 0 else -1)
    return celtypes.ListType(celtypes.StringType(p) for p in parts)


def substring(text: Value, start: Value, end: Value = None) -> Value:
    text, i = _string(text), _int(start)
    j = len(text) if end is None else _int(end)
    if i < 0 or i > len(text):
        return error(f"index out of range: {i}")
    if j < 0 or j > len(text):
        return error(f"index out of range: {j}")
    if i > j:
        return error(f"invalid substring range. start: {i}, end: {j}")
    return celtypes.StringType(text[i:j])


def trim(text: Value) -> Value:
    return celtypes.StringType(_string(text).strip())


def join(items: Value, separator: Value = "") -> Value:
    if not isinstance(items, list):
        raise TypeError("no such overload")
    return celtypes.StringType(_string(separator).join(_string(i) for i in items))


# --- lists (library/lists.go) -----------------------------------------------------------------


def _list(value: Value) -> list[Value]:
    if not isinstance(value, list):
        raise TypeError("no such overload")
    return value


def is_sorted(items: Value) -> Value:
    values = _list(items)
    return celtypes.BoolType(all(a <= b for a, b in itertools.pairwise(values)))


def list_sum(items: Value) -> Value:
    values = _list(items)
    if not values:
        return celtypes.IntType(0)
    total = values[0]
    for value in values[1:]:
        total = total + value
    return total


def list_max(items: Value) -> Value:
    values = _list(items)
    if not values:
        return error("max(list) argument must not be empty")
    return max(values)


# --- regular expressions (library/regex.go) ---------------------------------------------------


@functools.lru_cache(maxsize=256)
def _regex(pattern: str) -> Any:
    return re2.compile(pattern)


def find(text: Value, pattern: Value) -> Value:
    try:
        match = _regex(_string(pattern)).search(_string(text))
    except re2.error as e:
        return error(f"error parsing regexp: {e}")
    return celtypes.StringType(match.group(0) if match else "")


def find_all(text: Value, pattern: Value, limit: Value = None) -> Value:
    n = -1 if limit is None else _int(limit)
    try:
        found = [m.group(0) for m in _regex(_string(pattern)).finditer(_string(text))]
    except re2.error as e:
        return error(f"error parsing regexp: {e}")
    return celtypes.ListType(celtypes.StringType(f) for f in (found if n < 0 else found[:n]))


# --- URLs (library/urls.go) -------------------------------------------------------------------


class URL(celtypes.StringType):
    """A parsed URL (`url("https://…")`), kept as its text."""


def _parsed(value: str) -> urllib.parse.SplitResult | None:
    """The URL as Go's url.ParseRequestURI takes it: absolute, or a path from the root."""
    try:
        parts = urllib.parse.urlsplit(value)
        parts.port  # noqa: B018 - an invalid port raises here
    except ValueError:
        return None
    if not (parts.scheme or value.startswith("/")) or " " in value:
        return None
    return parts


def url(text: Value) -> Value:
    value = _string(text)
    if _parsed(value) is None:
        return error(f"URL parse error during conversion from string: parse {value!r}")
    return URL(value)


def is_url(text: Value) -> Value:
    return celtypes.BoolType(_parsed(_string(text)) is not None)


def _url(value: Value) -> urllib.parse.SplitResult:
    if not isinstance(value, URL):
        raise TypeError("no such overload")
    parsed = _parsed(str(value))
    assert parsed is not None  # a URL value was parsed when made
    return parsed


def get_scheme(value: Value) -> Value:
    return celtypes.StringType(_url(value).scheme)


def get_host(value: Value) -> Value:
    return celtypes.StringType(_url(value).netloc.rpartition("@")[2])


def get_hostname(value: Value) -> Value:
    host = _url(value).netloc.rpartition("@")[2]
    if host.startswith("["):
        return celtypes.StringType(host[1 : host.find("]")])
    return celtypes.StringType(host.partition(":")[0])


def get_port(value: Value) -> Value:
    host = _url(value).netloc.rpartition("@")[2]
    return celtypes.StringType(host.rpartition("]")[2].partition(":")[2])


def get_escaped_path(value: Value) -> Value:
    return celtypes.StringType(_url(value).path)


def get_query(value: Value) -> Value:
    query: dict[celtypes.StringType, celtypes.ListType] = {}
    for key, item in urllib.parse.parse_qsl(_url(value).query, keep_blank_values=True):
        query.setdefault(celtypes.StringType(key), celtypes.ListType()).append(
            celtypes.StringType(item)
        )
    return celtypes.MapType(query)


# --- quantities (library/quantity.go) ---------------------------------------------------------


class CELQuantity(celtypes.StringType):
    """A resource quantity (`quantity("1Gi")`), kept as its text."""

    @property
    def quantity(self) -> Quantity:
        return Quantity(str(self))


def quantity(text: Value) -> Value:
    try:
        return CELQuantity(str(Quantity(_string(text))))
    except QuantityError:
        return error(
            "quantities must match the regular expression "
            "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
        )


def is_quantity(text: Value) -> Value:
    try:
        Quantity(_string(text))
    except QuantityError:
        return celtypes.BoolType(False)
    return celtypes.BoolType(True)


def _quantity(value: Value) -> Quantity:
    if isinstance(value, CELQuantity):
        return value.quantity
    if isinstance(value, int) and not isinstance(value, bool | celtypes.BoolType):
        return Quantity(int(value))
    raise TypeError("no such overload")


def q_sign(value: Value) -> Value:
    return celtypes.IntType(_quantity(value).sign())


def q_is_integer(value: Value) -> Value:
    return celtypes.BoolType(_quantity(value).as_fraction().denominator == 1)


def q_as_integer(value: Value) -> Value:
    amount = _quantity(value).as_fraction()
    if amount.denominator != 1 or not -(2**63) <= amount < 2**63:
        return error("cannot convert value to integer")
    return celtypes.IntType(int(amount))


def q_as_approximate_float(value: Value) -> Value:
    return celtypes.DoubleType(float(_quantity(value).as_fraction()))


def q_add(value: Value, other: Value) -> Value:
    return CELQuantity(str(_quantity(value) + _quantity(other)))


def q_sub(value: Value, other: Value) -> Value:
    return CELQuantity(str(_quantity(value) - _quantity(other)))


def q_compare(value: Value, other: Value) -> Value:
    a, b = _quantity(value).as_fraction(), _quantity(other).as_fraction()
    return celtypes.IntType((a > b) - (a < b))


def q_greater(value: Value, other: Value) -> Value:
    return celtypes.BoolType(_quantity(value).as_fraction() > _quantity(other).as_fraction())


def q_less(value: Value, other: Value) -> Value:
    return celtypes.BoolType(_quantity(value).as_fraction() < _quantity(other).as_fraction())


# --- optional values (cel-go's optional types, for optionalOldSelf) --------------------------


class Optional:
    """`optional.of(v)`, or `optional.none()` when `value` is None."""

    __slots__ = ("value",)

    def __init__(self, value: Value) -> None:
        self.value = value


def _optional(value: Value) -> Optional:
    if not isinstance(value, Optional):
        raise TypeError("no such overload")
    return value


def has_value(optional: Value) -> Value:
    return celtypes.BoolType(_optional(optional).value is not None)


def optional_value(optional: Value) -> Value:
    found = _optional(optional).value
    return error("optional.none() dereference") if found is None else found


def or_value(optional: Value, default: Value) -> Value:
    found = _optional(optional).value
    return default if found is None else found


# --- what celpy lacks -------------------------------------------------------------------------


def getitem(container: Value, index: Value) -> Value:
    """`_[_]` with cel-go's words for an index out of bounds (the index in the error)."""
    if isinstance(container, list) and isinstance(index, int | float):
        i = int(index)
        if i != index or not 0 <= i < len(container):
            raise IndexError(index)
        return container[i]
    return container[index]


def _number(value: Value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool | celtypes.BoolType)


def _numeric(compare: Callable[[Any, Any], bool], standard: Function) -> Function:
    """cel-go's cross-type numeric comparisons (an int against a double or uint), which
    Kubernetes' environment enables; other operands as celpy compares them."""

    def compared(a: Value, b: Value) -> Value:
        if _number(a) and _number(b) and type(a) is not type(b):
            return celtypes.BoolType(compare(Fraction(a), Fraction(b)))
        return standard(a, b)

    return compared


def functions() -> dict[str, Function]:
    """The functions a rule may call beyond celpy's own (which these override)."""
    from celpy import evaluation

    base = evaluation.base_functions
    return {
        "_[_]": getitem,
        "_<_": _numeric(lambda a, b: a < b, base["_<_"]),
        "_<=_": _numeric(lambda a, b: a <= b, base["_<=_"]),
        "_>_": _numeric(lambda a, b: a > b, base["_>_"]),
        "_>=_": _numeric(lambda a, b: a >= b, base["_>=_"]),
        "_==_": _numeric(lambda a, b: a == b, base["_==_"]),
        "_!=_": _numeric(lambda a, b: a != b, base["_!=_"]),
        "charAt": char_at,
        "indexOf": index_of,
        "lastIndexOf": last_index_of,
        "lowerAscii": lower_ascii,
        "upperAscii": upper_ascii,
        "replace": replace,
        "split": split,
        "substring": substring,
        "trim": trim,
        "join": join,
        "isSorted": is_sorted,
        "sum": list_sum,
        "max": list_max,
        "find": find,
        "findAll": find_all,
        "url": url,
        "isURL": is_url,
        "getScheme": get_scheme,
        "getHost": get_host,
        "getHostname": get_hostname,
        "getPort": get_port,
        "getEscapedPath": get_escaped_path,
        "getQuery": get_query,
        "quantity": quantity,
        "isQuantity": is_quantity,
        "sign": q_sign,
        "isInteger": q_is_integer,
        "asInteger": q_as_integer,
        "asApproximateFloat": q_as_approximate_float,
        "add": q_add,
        "sub": q_sub,
        "compareTo": q_compare,
        "isGreaterThan": q_greater,
        "isLessThan": q_less,
        "hasValue": has_value,
        "value": optional_value,
        "orValue": or_value,
    }

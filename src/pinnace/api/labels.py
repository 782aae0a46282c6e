"""Label selectors: the string syntax (`app=web,tier in (a,b),!canary`) and metav1.LabelSelector.

Follows apimachinery's pkg/labels and apis/meta/v1 helpers. Each requirement is compiled
once into a small predicate so that `matches` costs a few dict look-ups per requirement.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from pinnace.api import field as fielderr
from pinnace.api.field import FieldError, Path
from pinnace.api.names import is_qualified_name, is_valid_label_value

Labels = Mapping[str, str]

IN = "in"
NOT_IN = "notin"
EQUALS = "="
DOUBLE_EQUALS = "=="
NOT_EQUALS = "!="
GREATER_THAN = "gt"
LESS_THAN = "lt"
EXISTS = "exists"
DOES_NOT_EXIST = "!"

_BINARY_OPERATORS = (IN, NOT_IN, EQUALS, DOUBLE_EQUALS, NOT_EQUALS, GREATER_THAN, LESS_THAN)
_OPERATORS = (*_BINARY_OPERATORS, EXISTS, DOES_NOT_EXIST)

# metav1.LabelSelectorOperator -> selection operator
_SELECTOR_OPERATORS = {"In": IN, "NotIn": NOT_IN, "Exists": EXISTS, "DoesNotExist": DOES_NOT_EXIST}

_INT64 = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


class SelectorError(ValueError):
    """A selector that cannot be parsed or built; the message is worded as Kubernetes'."""


def _parse_int64(value: str) -> int | None:
    """Go's strconv.ParseInt(value, 10, 64), None where it fails."""
    if not _INT64.fullmatch(value):
        return None
    number = int(value)
    return number if _INT64_MIN <= number <= _INT64_MAX else None


def _compile(key: str, op: str, values: tuple[str, ...]) -> Callable[[Labels], bool]:
    if op in (IN, EQUALS, DOUBLE_EQUALS):
        if len(values) == 1:
            only = values[0]
            return lambda labels: labels.get(key) == only
        wanted = frozenset(values)
        return lambda labels: labels.get(key) in wanted
    if op in (NOT_IN, NOT_EQUALS):
        # A missing key (None) is never among the values, so it matches, as in Kubernetes.
        unwanted = frozenset(values)
        return lambda labels: labels.get(key) not in unwanted
    if op == EXISTS:
        return lambda labels: key in labels
    if op == DOES_NOT_EXIST:
        return lambda labels: key not in labels
    bound = _parse_int64(values[0]) if len(values) == 1 else None
    if bound is None:
        return lambda labels: False
    greater = op == GREATER_THAN

    def compare(labels: Labels) -> bool:
        value = labels.get(key)
        if value is None:
            return False
        number = _parse_int64(value)
        if number is None:
            return False
        return number > bound if greater else number < bound

    return compare


@dataclass(frozen=True)
class Requirement:
    """One `key op values` term of a selector; build it with `new_requirement`."""

    key: str
    operator: str
    values: tuple[str, ...]
    _match: Callable[[Labels], bool] = field(repr=False, compare=False)

    def matches(self, labels: Labels) -> bool:
        return self._match(labels)

    def __str__(self) -> str:
        op = self.operator
        if op == EXISTS:
            return self.key
        if op == DOES_NOT_EXIST:
            return "!" + self.key
        shown = ",".join(sorted(self.values))
        if op in (IN, NOT_IN):
            return f"{self.key} {op} ({shown})"
        symbol = {GREATER_THAN: ">", LESS_THAN: "<"}.get(op, op)
        return f"{self.key}{symbol}{shown}"


def _key_error(key: str, path: Path | str) -> FieldError | None:
    errs = is_qualified_name(key)
    return fielderr.invalid(path, key, "; ".join(errs)) if errs else None


def new_requirement(
    key: str, operator: str, values: Iterable[str], path: Path | None = None
) -> Requirement:
    """Check and compile a requirement, as labels.NewRequirement; raise SelectorError."""
    vals = tuple(values)
    errs: list[FieldError] = []
    key_err = _key_error(key, path.child("key") if path else "key")
    if key_err:
        errs.append(key_err)
    values_path = path.child("values") if path else Path("values")
    if operator in (IN, NOT_IN):
        if not vals:
            errs.append(
                fielderr.invalid(
                    values_path,
                    list(vals),
                    "for 'in', 'notin' operators, values set can't be empty",
                )
            )
    elif operator in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS):
        if len(vals) != 1:
            errs.append(
                fielderr.invalid(
                    values_path, list(vals), "exact-match compatibility requires one single value"
                )
            )
    elif operator in (EXISTS, DOES_NOT_EXIST):
        if vals:
            errs.append(
                fielderr.invalid(
                    values_path,
                    list(vals),
                    "values set must be empty for exists and does not exist",
                )
            )
    elif operator in (GREATER_THAN, LESS_THAN):
        if len(vals) != 1:
            errs.append(
                fielderr.invalid(
                    values_path,
                    list(vals),
                    "for 'Gt', 'Lt' operators, exactly one value is required",
                )
            )
        for i, value in enumerate(vals):
            if _parse_int64(value) is None:
                errs.append(
                    fielderr.invalid(
                        values_path.index(i),
                        value,
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    )
                )
    else:
        op_path = path.child("operator") if path else "operator"
        errs.append(fielderr.not_supported(op_path, operator, _OPERATORS))
    for i, value in enumerate(vals):
        msgs = is_valid_label_value(value)
        if msgs:
            errs.append(fielderr.invalid(values_path.index(i).key(key), value, "; ".join(msgs)))
    if errs:
        raise SelectorError(fielderr.aggregate_message(errs))
    return Requirement(key, operator, vals, _compile(key, operator, vals))


class LabelSelector:
    """An AND of requirements, kept sorted by key as Kubernetes does.

    `LabelSelector.nothing()` matches no labels at all (a nil metav1.LabelSelector).
    """

    __slots__ = ("_matchers", "_nothing", "requirements")

    def __init__(self, requirements: Iterable[Requirement] = (), *, nothing: bool = False):
        self.requirements: tuple[Requirement, ...] = tuple(
            sorted(requirements, key=lambda r: r.key)
        )
        self._matchers = tuple(r._match for r in self.requirements)
        self._nothing = nothing

    @classmethod
    def everything(cls) -> LabelSelector:
        return cls()

    @classmethod
    def nothing(cls) -> LabelSelector:
        return cls(nothing=True)

    @property
    def empty(self) -> bool:
        """True when the selector does not restrict anything (it matches every label set)."""
        return not self._nothing and not self.requirements

    def matches(self, labels: Labels) -> bool:
        if self._nothing:
            return False
        # A plain loop: this runs millions of times per scheduling cycle.
        for match in self._matchers:  # noqa: SIM110
            if not match(labels):
                return False
        return True

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)

    def __repr__(self) -> str:
        return "LabelSelector.nothing()" if self._nothing else f"LabelSelector({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, LabelSelector)
            and other._nothing == self._nothing
            and other.requirements == self.requirements
        )

    def __hash__(self) -> int:
        return hash((self._nothing, self.requirements))


def required_json(selector: LabelSelector) -> tuple[tuple[bytes, ...], ...]:
    """What the JSON text (orjson's compact form) of an object whose labels the selector
    matches contains: for each requirement that only a label with its key meets (=, ==, in,
    exists, gt, lt), one of its labels as that text writes them, `"key":"value"` (or
    `"key":` where any value will do). Requirements met without the key (!=, notin, !) add
    nothing. A text lacking them all is an object the selector passes over undecoded."""
    required: list[tuple[bytes, ...]] = []
    for r in selector.requirements:
        key = orjson.dumps(r.key) + b":"
        if r.operator in (IN, EQUALS, DOUBLE_EQUALS):
            required.append(tuple(key + orjson.dumps(value) for value in r.values))
        elif r.operator in (EXISTS, GREATER_THAN, LESS_THAN):
            required.append((key,))
    return tuple(required)


def selector_from_set(labels: Labels) -> LabelSelector:
    """A selector matching exactly these labels (an empty set selects everything)."""
    return LabelSelector(
        Requirement(k, EQUALS, (v,), _compile(k, EQUALS, (v,))) for k, v in labels.items()
    )


def selector_from_dict(selector: Mapping[str, Any] | None) -> LabelSelector:
    """Convert a metav1.LabelSelector, as LabelSelectorAsSelector.

    None (a nil selector) matches nothing; `{}` matches everything.
    """
    if selector is None:
        return LabelSelector.nothing()
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not match_labels and not expressions:
        return LabelSelector.everything()
    reqs = [new_requirement(k, EQUALS, (v,)) for k, v in match_labels.items()]
    for expr in expressions:
        operator = expr.get("operator", "")
        op = _SELECTOR_OPERATORS.get(operator)
        if op is None:
            raise SelectorError(f"{_go_quote(operator)} is not a valid label selector operator")
        reqs.append(new_requirement(expr.get("key", ""), op, expr.get("values") or ()))
    return LabelSelector(reqs)


def _go_quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


# --- the string syntax -------------------------------------------------------------------

_SPECIAL = frozenset("=!(),><")
_WHITESPACE = frozenset(" \t\r\n")
_TOKENS = {
    ")": ")",
    ",": ",",
    "!": "!",
    "==": "==",
    "=": "=",
    ">": ">",
    "in": "in",
    "<": "<",
    "!=": "!=",
    "notin": "notin",
    "(": "(",
}
_ID = "identifier"
_END = "end"
_OPERATOR_TOKENS = {
    "in": IN,
    "notin": NOT_IN,
    "=": EQUALS,
    "==": DOUBLE_EQUALS,
    "!=": NOT_EQUALS,
    ">": GREATER_THAN,
    "<": LESS_THAN,
}


def _lex(text: str) -> list[tuple[str, str]]:
    """Split a selector into (token, literal) pairs, ending with (_END, "")."""
    items: list[tuple[str, str]] = []
    pos, n = 0, len(text)
    while True:
        while pos < n and text[pos] in _WHITESPACE:
            pos += 1
        if pos >= n:
            items.append((_END, ""))
            return items
        start = pos
        if text[pos] in _SPECIAL:
            # The longest run of special characters that is still a known operator.
            best = ""
            while pos < n and text[pos] in _SPECIAL:
                candidate = text[start : pos + 1]
                if candidate in _TOKENS:
                    best = candidate
                elif best:
                    break
                pos += 1
            pos = start + len(best)
            items.append((_TOKENS[best], best))
        else:
            while pos < n and text[pos] not in _SPECIAL and text[pos] not in _WHITESPACE:
                pos += 1
            word = text[start:pos]
            items.append((_TOKENS.get(word, _ID), word))


class _Parser:
    def __init__(self, text: str) -> None:
        self.items = _lex(text)
        self.pos = 0

    def peek(self, values: bool = True) -> tuple[str, str]:
        return self._as(self.items[self.pos], values)

    def take(self, values: bool = True) -> tuple[str, str]:
        item = self.items[self.pos]
        self.pos += 1
        return self._as(item, values)

    @staticmethod
    def _as(item: tuple[str, str], values: bool) -> tuple[str, str]:
        # Where a value is expected, `in` and `notin` are plain words.
        if values and item[0] in ("in", "notin"):
            return (_ID, item[1])
        return item

    def parse(self) -> list[Requirement]:
        reqs: list[Requirement] = []
        while True:
            tok, lit = self.peek()
            if tok == _END:
                return reqs
            if tok not in (_ID, "!"):
                raise SelectorError(f"found '{lit}', expected: !, identifier, or 'end of string'")
            try:
                reqs.append(self.requirement())
            except SelectorError as err:
                raise SelectorError(f"unable to parse requirement: {err}") from None
            tok, lit = self.take()
            if tok == _END:
                return reqs
            if tok != ",":
                raise SelectorError(f"found '{lit}', expected: ',' or 'end of string'")
            tok, lit = self.peek()
            if tok not in (_ID, "!"):
                raise SelectorError(f"found '{lit}', expected: identifier after ','")

    def requirement(self) -> Requirement:
        operator = ""
        tok, key = self.take()
        if tok == "!":
            operator = DOES_NOT_EXIST
            tok, key = self.take()
        if tok != _ID:
            raise SelectorError(f"found '{key}', expected: identifier")
        # A key checked before any operator has no field path: Go prints a nil path as <nil>.
        key_err = _key_error(key, "<nil>")
        if key_err:
            raise SelectorError(str(key_err))
        if self.peek()[0] in (_END, ","):
            return new_requirement(key, operator or EXISTS, ())
        if operator == DOES_NOT_EXIST:
            return new_requirement(key, operator, ())
        tok, lit = self.take(values=False)
        op = _OPERATOR_TOKENS.get(tok)
        if op is None:
            raise SelectorError(f"found '{lit}', expected: {', '.join(_BINARY_OPERATORS)}")
        values = self.value_set() if op in (IN, NOT_IN) else self.exact_value()
        return new_requirement(key, op, sorted(values))

    def value_set(self) -> set[str]:
        tok, lit = self.take()
        if tok != "(":
            raise SelectorError(f"found '{lit}' expected: '('")
        tok, lit = self.peek()
        if tok == ")":
            self.take()
            return {""}
        if tok not in (_ID, ","):
            raise SelectorError(f"found '{lit}', expected: ',', ')' or identifier")
        values = self.identifiers()
        if self.take()[0] != ")":
            raise SelectorError(f"found '{lit}', expected: ')'")
        return values

    def identifiers(self) -> set[str]:
        values: set[str] = set()
        while True:
            tok, lit = self.take()
            if tok == _ID:
                values.add(lit)
                nxt, nlit = self.peek()
                if nxt == ")":
                    return values
                if nxt != ",":
                    raise SelectorError(f"found '{nlit}', expected: ',' or ')'")
            elif tok == ",":
                # Commas with nothing between them stand for the empty value.
                nxt = self.peek()[0]
                if not values or nxt in (")", ","):
                    values.add("")
                if nxt == ")":
                    return values
            else:
                raise SelectorError(f"found '{lit}', expected: ',', or identifier")

    def exact_value(self) -> set[str]:
        if self.peek()[0] in (_END, ","):
            return {""}
        tok, lit = self.take()
        if tok == _ID:
            return {lit}
        raise SelectorError(f"found '{lit}', expected: identifier")


def parse_selector(text: str) -> LabelSelector:
    """Parse the string form, as labels.Parse (`kubectl get -l`, `?labelSelector=`)."""
    return LabelSelector(_Parser(text).parse())


# --- validation of stored objects ----------------------------------------------------------


def validate_label_name(name: str, path: Path) -> list[FieldError]:
    return [fielderr.invalid(path, name, msg) for msg in is_qualified_name(name)]


def validate_labels(labels: Mapping[str, str], path: Path) -> list[FieldError]:
    """Check `metadata.labels`-style maps: keys qualified names, values label values."""
    errs: list[FieldError] = []
    for key, value in labels.items():
        errs.extend(validate_label_name(key, path))
        errs.extend(fielderr.invalid(path, value, msg) for msg in is_valid_label_value(value))
    return errs


def validate_label_selector(
    selector: Mapping[str, Any] | None,
    path: Path,
    allow_invalid_label_value_in_selector: bool = False,
) -> list[FieldError]:
    """Check a metav1.LabelSelector, as metav1validation.ValidateLabelSelector."""
    if selector is None:
        return []
    errs = validate_labels(selector.get("matchLabels") or {}, path.child("matchLabels"))
    for i, expr in enumerate(selector.get("matchExpressions") or []):
        errs.extend(
            _validate_requirement(
                expr, path.child("matchExpressions").index(i), allow_invalid_label_value_in_selector
            )
        )
    return errs


def _validate_requirement(
    expr: Mapping[str, Any], path: Path, allow_invalid_values: bool
) -> list[FieldError]:
    errs: list[FieldError] = []
    operator = expr.get("operator", "")
    values = expr.get("values") or []
    if operator in ("In", "NotIn"):
        if not values:
            errs.append(
                fielderr.required(
                    path.child("values"), "must be specified when `operator` is 'In' or 'NotIn'"
                )
            )
    elif operator in ("Exists", "DoesNotExist"):
        if values:
            errs.append(
                fielderr.forbidden(
                    path.child("values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                )
            )
    else:
        errs.append(
            fielderr.invalid(path.child("operator"), operator, "not a valid selector operator")
        )
    errs.extend(validate_label_name(expr.get("key", ""), path.child("key")))
    if not allow_invalid_values:
        for i, value in enumerate(values):
            errs.extend(
                fielderr.invalid(path.child("values").index(i), value, msg)
                for msg in is_valid_label_value(value)
            )
    return errs

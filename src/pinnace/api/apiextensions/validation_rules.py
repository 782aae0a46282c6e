"""`x-kubernetes-validations` at work, as apiextensions-apiserver v1.32 runs them
(apiserver/schema/cel/validation.go, values.go; their CRD-time checks in
apis/apiextensions/validation/validation.go): a CRD version's rules compiled once into a tree
that follows its schema, evaluated against each custom resource written (transition rules
against the stored one too), and their compile errors and field paths reported on the CRD.

CEL itself is `pinnace.api.apiextensions.cel_program`'s.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from celpy import celtypes

from pinnace.api import field as fields
from pinnace.api.apiextensions import cel_library, cel_program
from pinnace.api.apiextensions.cel_program import CompileError, CostExceeded, Meter, Program
from pinnace.api.field import FieldError, Path
from pinnace.api.goquote import quote

Schema = dict[str, Any]
_VARIABLES = frozenset({"self", "oldSelf"})
_ROOT = "<nil>"
"""The field of an error at the resource's root: v1.32 validates from a nil field.Path."""
_OUT_OF_BUDGET = (
    "validation failed due to running out of cost budget, no further validation rules will be run"
)
_RESERVED = frozenset(
    {
        "true", "false", "null", "in", "as", "break", "const", "continue", "else", "for",
        "function", "if", "import", "let", "loop", "package", "namespace", "return", "var",
        "void", "while",
    }
)  # fmt: skip


_METADATA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "generateName": {"type": "string"}},
}
"""What a rule sees of a resource's metadata (model.WithTypeAndObjectMeta)."""

# --- values -----------------------------------------------------------------------------------


def escaped(name: str) -> str | None:
    """A property's name as a CEL field (k8s.io/apiserver/pkg/cel Escape), None if it has none."""
    if name in _RESERVED:
        return f"__{name}__"
    if not re.fullmatch(r"[a-zA-Z_][a-zA-Z0-9_./-]*", name):
        return None
    name = name.replace("__", "__underscores__")
    return name.replace(".", "__dot__").replace("-", "__dash__").replace("/", "__slash__")


def to_cel(value: Any, schema: Schema | None, *, resource_root: bool = False) -> Any:
    """A JSON value as CEL sees it through its schema (values.go's UnstructuredToVal): an
    integer of a `number` field is a double, an object's properties go by their escaped
    names, and a resource's metadata shows only its name and generateName."""
    schema = schema or {}
    if value is None:
        return None
    if isinstance(value, bool):
        return celtypes.BoolType(value)
    if isinstance(value, int | float):
        if schema.get("type") == "number" or (isinstance(value, float) and not value.is_integer()):
            return celtypes.DoubleType(value)
        return celtypes.IntType(int(value))
    if isinstance(value, str):
        return _string(value, schema.get("format"))
    if isinstance(value, list):
        items = schema.get("items")
        return celtypes.ListType(to_cel(v, items) for v in value)
    if not isinstance(value, dict):
        return None
    properties = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    converted: dict[Any, Any] = {}
    if resource_root or schema.get("x-kubernetes-embedded-resource"):
        properties = {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": _METADATA,
            **properties,
        }
    for key, item in value.items():
        if key in properties:
            name = escaped(key)
            if name is not None:
                converted[celtypes.StringType(name)] = to_cel(item, properties[key])
        elif (
            isinstance(additional, dict)
            or additional is True
            or schema.get("x-kubernetes-preserve-unknown-fields")
        ):
            sub = additional if isinstance(additional, dict) else None
            converted[celtypes.StringType(key)] = to_cel(item, sub)
    return celtypes.MapType(converted)


def _string(value: str, string_format: Any) -> Any:
    """A string as its format makes it: a timestamp (`date`, `date-time`), a duration or
    bytes (`byte`, base64); one its format does not read stays a string."""
    try:
        if string_format in ("date", "date-time"):
            return celtypes.TimestampType(value)
        if string_format == "duration":
            return celtypes.DurationType(value)
        if string_format == "byte":
            return celtypes.BytesType(base64.b64decode(value, validate=True))
    except (ValueError, TypeError, binascii.Error):
        pass
    return celtypes.StringType(value)


# --- compiled rules ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CompiledRule:
    rule: dict[str, Any]
    program: Program
    message: Program | None
    field_path: str


@dataclass
class RuleValidator:
    """The compiled rules of a schema node and of the nodes under it that have some."""

    schema: Schema
    rules: list[CompiledRule]
    resource_root: bool
    properties: dict[str, RuleValidator] = field(default_factory=dict)
    additional: RuleValidator | None = None
    items: RuleValidator | None = None


def validator(schema: Any, *, resource_root: bool = True) -> RuleValidator | None:
    """The rules under `schema` (an openAPIV3Schema) compiled, None if it has none."""
    if not isinstance(schema, dict):
        return None
    compiled = [c for c in (_compiled(r, schema) for r in _rules(schema)) if c is not None]
    node = RuleValidator(schema, compiled, resource_root)
    for name, sub in (schema.get("properties") or {}).items():
        child = validator(sub, resource_root=_embedded(sub))
        if child is not None:
            node.properties[name] = child
    additional = schema.get("additionalProperties")
    node.additional = validator(additional, resource_root=_embedded(additional))
    node.items = validator(schema.get("items"), resource_root=_embedded(schema.get("items")))
    if compiled or node.properties or node.additional or node.items:
        return node
    return None


def _embedded(schema: Any) -> bool:
    return isinstance(schema, dict) and bool(schema.get("x-kubernetes-embedded-resource"))


def _rules(schema: Schema) -> list[dict[str, Any]]:
    return [rule for _, rule in _indexed_rules(schema)]


def _indexed_rules(schema: Schema) -> list[tuple[int, dict[str, Any]]]:
    rules = schema.get("x-kubernetes-validations")
    listed = rules if isinstance(rules, list) else []
    return [(i, rule) for i, rule in enumerate(listed) if isinstance(rule, dict)]


def _compiled(rule: dict[str, Any], schema: Schema) -> CompiledRule | None:
    """A rule the CRD's validation let through compiles; one that no longer does (celpy's
    grammar changed under a stored CRD) is skipped rather than failing every write."""
    text = str(rule.get("rule") or "")
    if not text.strip():
        return None
    try:
        program = cel_program.compile_expression(text, _VARIABLES, "bool")
        expression = str(rule.get("messageExpression") or "")
        message = (
            cel_program.compile_expression(expression, _VARIABLES, "string")
            if expression.strip()
            else None
        )
        path = valid_field_path(str(rule.get("fieldPath") or ""), schema)
    except (CompileError, ValueError):
        return None
    return CompiledRule(rule, program, message, path)


# --- evaluation -------------------------------------------------------------------------------


class _Budget:
    """What is left of the cost and the CPU time the rules of one object may spend."""

    def __init__(self) -> None:
        self.left = cel_program.RUNTIME_COST_BUDGET
        self.deadline = time.thread_time() + cel_program.RUNTIME_SECONDS

    def meter(self) -> Meter:
        """A meter for one evaluation, within what is left."""
        seconds = min(cel_program.PER_CALL_SECONDS, self.deadline - time.thread_time())
        return Meter(cel_program.PER_CALL_LIMIT, seconds)

    def spend(self, meter: Meter) -> None:
        self.left -= meter.spent
        if time.thread_time() > self.deadline:
            self.left = -1


class _Stop(Exception):
    """No further rule runs (the budget or a call's limit was exhausted)."""


_BLOCKING = frozenset(
    {
        fields.ErrorType.NOT_SUPPORTED,
        fields.ErrorType.REQUIRED,
        fields.ErrorType.TOO_LONG,
        fields.ErrorType.TOO_MANY,
        fields.ErrorType.TYPE_INVALID,
    }
)
_NOT_CHECKED = (
    "some validation rules were not checked because the object was invalid; correct the "
    "existing errors to complete validation"
)


def validate(
    node: RuleValidator | None, obj: Any, old: Any = None, found: Sequence[FieldError] = ()
) -> list[FieldError]:
    """The errors of the rules under `node` for `obj` (a custom resource), with `old` the
    stored object on an update (transition rules are evaluated only where it has a value);
    none are evaluated, and a note says so, when the errors `found` before them include one
    of the kinds that leave the object unfit for them (strategy.go's hasBlockingErr)."""
    if node is None:
        return []
    if any(e.type in _BLOCKING for e in found):
        return [fields.invalid(_ROOT, None, _NOT_CHECKED)]
    errs: list[FieldError] = []
    with contextlib.suppress(_Stop):
        _validate(node, None, obj, old, _Budget(), errs)
    return errs


def _validate(
    node: RuleValidator, path: Path | None, obj: Any, old: Any, budget: _Budget,
    errs: list[FieldError],
) -> None:  # fmt: skip
    if obj is None:
        return
    if node.rules:
        _evaluate(node, path, obj, old, budget, errs)
    if isinstance(obj, list) and node.items is not None:
        olds = _correlated_items(node.schema, obj, old)
        for i, item in enumerate(obj):
            _validate(node.items, _index(path, i), item, olds[i], budget, errs)
    elif isinstance(obj, dict):
        correlatable = node.schema.get("x-kubernetes-map-type") != "atomic"
        old_map = old if correlatable and isinstance(old, dict) else {}
        for key, value in obj.items():
            sub = node.properties.get(key)
            if sub is not None:
                _validate(sub, _child(path, key), value, old_map.get(key), budget, errs)
            elif node.additional is not None and key not in (node.schema.get("properties") or {}):
                _validate(node.additional, _key(path, key), value, old_map.get(key), budget, errs)


def _correlated_items(schema: Schema, items: list[Any], old: Any) -> list[Any]:
    """The old item of each item: only a map list's items have one, the old item with the
    same keys (validation.go's makeMapList)."""
    keys = schema.get("x-kubernetes-list-map-keys") or []
    if schema.get("x-kubernetes-list-type") != "map" or not keys or not isinstance(old, list):
        return [None] * len(items)
    by_key = {tuple(o.get(k) for k in keys): o for o in old if isinstance(o, dict)}
    return [
        by_key.get(tuple(item.get(k) for k in keys)) if isinstance(item, dict) else None
        for item in items
    ]


def _evaluate(
    node: RuleValidator, path: Path | None, obj: Any, old: Any, budget: _Budget,
    errs: list[FieldError],
) -> None:  # fmt: skip
    if budget.left <= 0:
        errs.append(_invalid(path, node, _OUT_OF_BUDGET))
        raise _Stop
    variables = {"self": to_cel(obj, node.schema, resource_root=node.resource_root)}
    old_self = None if old is None else to_cel(old, node.schema, resource_root=node.resource_root)
    if old_self is not None:
        variables["oldSelf"] = old_self
    optional = {**variables, "oldSelf": cel_library.Optional(old_self)}
    for compiled in node.rules:
        optional_old_self = compiled.rule.get("optionalOldSelf") is True
        if compiled.program.uses_old_self and old is None and not optional_old_self:
            continue
        given = optional if optional_old_self else variables
        result = _run(compiled.program, given, budget, path, node, compiled, errs)
        if isinstance(result, str):
            errs.append(_invalid(path, node, result))
            continue
        if cel_program.is_true(result):
            continue
        at = path
        if compiled.field_path:
            at = Path(compiled.field_path) if path is None else path.child(compiled.field_path)
        detail = _message(compiled, variables, budget, at, node, errs)
        errs.append(_for_reason(at, node, detail, compiled.rule.get("reason")))


def _run(
    program: Program, variables: dict[str, Any], budget: _Budget, path: Path | None,
    node: RuleValidator, compiled: CompiledRule, errs: list[FieldError],
) -> Any:  # fmt: skip
    """The rule's value, or the detail of its error; _Stop when it runs out of cost."""
    meter = budget.meter()
    try:
        value = program.evaluate(variables, meter)
    except CostExceeded:
        detail = (
            "'operation cancelled: actual cost limit exceeded': no further validation rules "
            f"will be run due to call cost exceeds limit for rule: {_rule_text(compiled)}"
        )
        errs.append(_invalid(path, node, detail))
        raise _Stop from None
    budget.spend(meter)
    if budget.left < 0:
        errs.append(_invalid(path, node, _OUT_OF_BUDGET))
        raise _Stop
    if isinstance(value, cel_program.CELEvalError):
        message = cel_program.error_message(value)
        if message == "no such overload":
            return (
                "'no such overload': call arguments did not match a supported operator, "
                f"function or macro signature for rule: {_rule_text(compiled)}"
            )
        return f"{message} evaluating rule: {_rule_text(compiled)}"
    if not isinstance(value, celtypes.BoolType):
        return f"cel expression must evaluate to a bool evaluating rule: {_rule_text(compiled)}"
    return value


def _message(
    compiled: CompiledRule, variables: dict[str, Any], budget: _Budget, at: Path | None,
    node: RuleValidator, errs: list[FieldError],
) -> str:  # fmt: skip
    """The messageExpression's value where it gives a usable one, else the message."""
    if compiled.message is not None:
        meter = budget.meter()
        try:
            value = compiled.message.evaluate(variables, meter)
        except CostExceeded:
            expression = compiled.rule.get("messageExpression")
            detail = (
                "no further validation rules will be run due to call cost exceeds limit for "
                f'messageExpression: "{expression}"'
            )
            errs.append(_invalid(at, node, detail))
            raise _Stop from None
        budget.spend(meter)
        if isinstance(value, str) and value.strip() and "\n" not in value.strip():
            return value.strip()
    return _default_message(compiled)


def _default_message(compiled: CompiledRule) -> str:
    message = str(compiled.rule.get("message") or "")
    return message.strip() if message else f"failed rule: {_rule_text(compiled)}"


def _rule_text(compiled: CompiledRule) -> str:
    message = str(compiled.rule.get("message") or "")
    return message.strip() if message else compiled.program.text.strip()


def _for_reason(at: Path | None, node: RuleValidator, detail: str, reason: Any) -> FieldError:
    where = _ROOT if at is None else at
    if reason == "FieldValueForbidden":
        return fields.forbidden(where, detail)
    if reason == "FieldValueRequired":
        return fields.required(where, detail)
    if reason == "FieldValueDuplicate":
        return fields.duplicate(where, node.schema.get("type"))
    return _invalid(at, node, detail)


def _invalid(at: Path | None, node: RuleValidator, detail: str) -> FieldError:
    """v1.32 reports the schema's type as the bad value (`Invalid value: "object"`)."""
    return fields.invalid(_ROOT if at is None else at, node.schema.get("type") or "", detail)


def _child(path: Path | None, name: str) -> Path:
    return Path(name) if path is None else path.child(name)


def _key(path: Path | None, key: str) -> Path:
    return Path().key(key) if path is None else path.key(key)


def _index(path: Path | None, i: int) -> Path:
    return Path().index(i) if path is None else path.index(i)


# --- fieldPath --------------------------------------------------------------------------------

_PATH_TOKENS = re.compile(r"'(?:[^'\\]|\\.)*'|[.\[\]]|[^.\[\]']+")
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def valid_field_path(json_path: str, schema: Schema) -> str:
    """A rule's fieldPath as a field path under `schema` (ValidFieldPath): `.a.b`, `.m['k']`;
    a ValueError in v1.32's words when it does not name a field of the schema."""
    if not json_path:
        return ""
    tokens = iter(_PATH_TOKENS.findall(json_path))
    path: Path | None = None
    for token in tokens:
        if token == "[":
            quoted = next(tokens, None)
            if quoted is None:
                raise ValueError("unexpected end of JSON path")
            if len(quoted) < 2 or quoted[0] != "'" or quoted[-1] != "'":
                raise ValueError(f"expected single quoted string but got {quoted}")
            name = _unquoted(quoted[1:-1])
            path, schema = _step(path, schema, name)
            closing = next(tokens, None)
            if closing is None:
                raise ValueError("unexpected end of JSON path")
            if closing != "]":
                raise ValueError(f"expected ] but got {closing}")
        elif token == ".":
            step = next(tokens, None)
            if step is None:
                raise ValueError("unexpected end of JSON path")
            path, schema = _step(path, schema, step)
        else:
            raise ValueError(f"expected [ or . but got: {token}")
    return str(path) if path is not None else ""


def _unquoted(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        c = match.group(0)[1]
        if c in _ESCAPES:
            return _ESCAPES[c]
        if c in "'\\":
            return c
        raise ValueError(f"invalid string literal: invalid escape char {match.group(0)}")

    return re.sub(r"\\.", one, text)


def _step(path: Path | None, schema: Schema, name: str) -> tuple[Path, Schema]:
    properties = schema.get("properties")
    additional = schema.get("additionalProperties")
    if properties:
        if name not in properties:
            raise ValueError("does not refer to a valid field")
        return _child(path, name), properties[name]
    if isinstance(additional, dict):
        return _key(path, name), additional
    raise ValueError("does not refer to a valid field")


# --- the CRD's checks -------------------------------------------------------------------------


def field_path_errors(schema: Schema, path: Path) -> list[FieldError]:
    """The rules' field paths of one schema node that name no field of it."""
    errs: list[FieldError] = []
    for i, rule in _indexed_rules(schema):
        field_path = str(rule.get("fieldPath") or "")
        if not field_path.strip():
            continue
        try:
            valid_field_path(field_path, schema)
        except ValueError:
            at = path.child("x-kubernetes-validations").index(i).child("fieldPath")
            errs.append(fields.invalid(at, field_path, "fieldPath must be a valid path"))
    return errs


def compile_errors(schema: Schema, path: Path, uncorrelatable: Path | None) -> Iterator[FieldError]:
    """The rules of one schema node that v1.32 refuses on the CRD: those that do not compile,
    and those that use oldSelf where there is none (under `uncorrelatable`, a list that is no
    map list or an atomic map) or set optionalOldSelf without using it."""
    for i, rule in _indexed_rules(schema):
        at = path.child("x-kubernetes-validations").index(i)
        text = str(rule.get("rule") or "")
        program = _compile(text, "bool", at.child("rule"), rule, "compilation failed: ")
        if isinstance(program, FieldError):
            yield program
        elif program is not None and program.uses_old_self:
            if uncorrelatable is not None:
                detail = (
                    "oldSelf cannot be used on the uncorrelatable portion of the schema within "
                    f"{uncorrelatable}"
                )
                yield fields.invalid(at.child("rule"), text, detail)
        elif program is not None and rule.get("optionalOldSelf") is not None:
            detail = "may not be set if oldSelf is not used in rule"
            yield fields.invalid(at.child("optionalOldSelf"), rule["optionalOldSelf"], detail)
        expression = str(rule.get("messageExpression") or "")
        wording = "messageExpression compilation failed: "
        message = _compile(expression, "string", at.child("messageExpression"), rule, wording)
        if isinstance(message, FieldError):
            yield message


def _compile(
    text: str, result: str, at: Path, rule: dict[str, Any], wording: str
) -> Program | FieldError | None:
    """The expression compiled, or the error that says why it does not; None if empty."""
    if not text.strip():
        return None
    try:
        return cel_program.compile_expression(text, _VARIABLES, result)
    except CompileError as e:
        detail = f"{wording}{e}" if str(e).startswith("ERROR:") else str(e)
        return fields.invalid(at, GoRule(rule), detail)


def uncorrelatable(schema: Any, path: Path, within: Path | None = None) -> dict[int, Path]:
    """The nodes under `schema` (by id) where oldSelf has no value to take, each with the
    highest node that makes it so (specStandardValidatorV3's forbidOldSelfValidations)."""
    found: dict[int, Path] = {}
    if not isinstance(schema, dict):
        return found
    if within is not None:
        found[id(schema)] = within
    atomic = schema.get("x-kubernetes-map-type") == "atomic"
    for name, sub in (schema.get("properties") or {}).items():
        below = within or (path if atomic else None)
        found |= uncorrelatable(sub, path.child("properties").key(name), below)
    additional = schema.get("additionalProperties")
    found |= uncorrelatable(additional, path.child("additionalProperties"), within)
    if schema.get("x-kubernetes-list-type") != "map":
        found |= uncorrelatable(schema.get("items"), path.child("items"), within or path)
    else:
        found |= uncorrelatable(schema.get("items"), path.child("items"), within)
    return found


@dataclass(frozen=True)
class GoRule:
    """A rule as Go's %#v prints apiextensions.ValidationRule, the bad value v1.32 reports
    with a rule that does not compile (a set pointer shows a fixed address)."""

    rule: dict[str, Any]

    def __str__(self) -> str:
        def quoted(key: str) -> str:
            return quote(str(self.rule.get(key) or ""))

        reason = "(*apiextensions.FieldValueErrorReason)(nil)"
        if self.rule.get("reason") is not None:
            reason = "(*apiextensions.FieldValueErrorReason)(0xc000000000)"
        optional = "(*bool)(nil)"
        if self.rule.get("optionalOldSelf") is not None:
            optional = "(*bool)(0xc000000008)"
        return (
            f"apiextensions.ValidationRule{{Rule:{quoted('rule')}, Message:{quoted('message')}, "
            f"MessageExpression:{quoted('messageExpression')}, Reason:{reason}, "
            f"FieldPath:{quoted('fieldPath')}, OptionalOldSelf:{optional}}}"
        )

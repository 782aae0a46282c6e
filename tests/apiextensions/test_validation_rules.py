"""`x-kubernetes-validations` rules evaluated on custom resources as apiextensions-apiserver
v1.32 evaluates them (apiserver/schema/cel/validation.go), and compiled on the CRD as it
compiles them (apis/apiextensions/validation/validation.go), in its words."""

from __future__ import annotations

from typing import Any

import pytest
from tests.apiextensions.gadgets import gadget_crd

from pinnace.api.apiextensions import cel_program
from pinnace.api.apiextensions.crd import validate_crd
from pinnace.api.apiextensions.custom import served_kinds
from pinnace.api.kind import Kind
from pinnace.api.objects import Object


def _crd(spec_schema: dict[str, Any], root_rules: list[Any] | None = None) -> Object:
    schema: dict[str, Any] = {"type": "object", "properties": {"spec": spec_schema}}
    if root_rules:
        schema["x-kubernetes-validations"] = root_rules
    return gadget_crd(schema)


def _kind(spec_schema: dict[str, Any], root_rules: list[Any] | None = None) -> Kind:
    crd = _crd(spec_schema, root_rules)
    assert validate_crd(crd) == []
    kind, _ = served_kinds(crd)
    return kind


def _gadget(spec: dict[str, Any], name: str = "g") -> Object:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": name, "namespace": "default", "resourceVersion": "1"},
        "spec": spec,
    }


def _errors(kind: Kind, spec: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    if old is None:
        return [str(e) for e in kind.validate(_gadget(spec))]
    return [str(e) for e in kind.validate_update(_gadget(spec), _gadget(old))]


def _spec(rules: list[Any], **properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "x-kubernetes-validations": rules}


INT = {"type": "integer"}
NUMBER = {"type": "number"}
STRING = {"type": "string"}


def test_a_rule_that_fails_gives_its_message_or_the_default_one() -> None:
    kind = _kind(
        _spec(
            [
                {"rule": "self.replicas <= self.maxReplicas", "message": "too many replicas"},
                {"rule": "self.name.startsWith('g')"},
            ],
            replicas=INT,
            maxReplicas=INT,
            name=STRING,
        )
    )
    assert _errors(kind, {"replicas": 2, "maxReplicas": 3, "name": "gear"}) == []
    assert _errors(kind, {"replicas": 5, "maxReplicas": 3, "name": "cog"}) == [
        'spec: Invalid value: "object": too many replicas',
        "spec: Invalid value: \"object\": failed rule: self.name.startsWith('g')",
    ]


def test_reasons_field_paths_and_message_expressions() -> None:
    kind = _kind(
        _spec(
            [
                {"rule": "self.min <= self.max", "reason": "FieldValueForbidden",
                 "fieldPath": ".min", "messageExpression": "'min ' + string(self.min) + ' > max'"},
                {"rule": "has(self.owner)", "reason": "FieldValueRequired", "message": "owner"},
                {"rule": "self.tags.size() < 3", "reason": "FieldValueDuplicate"},
                {"rule": "self.tags.all(t, t != '')", "reason": "FieldValueInvalid",
                 "fieldPath": ".tags", "messageExpression": "''"},
            ],
            min=INT,
            max=INT,
            owner=STRING,
            tags={"type": "array", "items": STRING},
        )
    )  # fmt: skip
    assert _errors(kind, {"min": 5, "max": 1, "tags": ["a", "b", "", "d"]}) == [
        "spec.min: Forbidden: min 5 > max",
        "spec: Required value: owner",
        'spec: Duplicate value: "object"',
        # An empty messageExpression falls back to the default message.
        "spec.tags: Invalid value: \"object\": failed rule: self.tags.all(t, t != '')",
    ]


def test_rules_at_the_root_and_in_items_and_maps_name_their_fields() -> None:
    item = {
        "type": "object",
        "properties": {"port": INT},
        "x-kubernetes-validations": [{"rule": "self.port > 0", "message": "port"}],
    }
    labels = {
        "type": "object",
        "additionalProperties": {
            "type": "string",
            "x-kubernetes-validations": [{"rule": "self.size() < 4", "message": "short"}],
        },
    }
    kind = _kind(
        {"type": "object", "properties": {"ports": {"type": "array", "items": item},
                                          "labels": labels}},
        root_rules=[{"rule": "self.metadata.name.size() > 1 && self.kind == 'Gadget'",
                     "message": "name"}],
    )  # fmt: skip
    assert _errors(kind, {"ports": [{"port": 1}, {"port": 0}], "labels": {"a": "long!"}}) == [
        '<nil>: Invalid value: "object": name',
        'spec.ports[1]: Invalid value: "object": port',
        'spec.labels[a]: Invalid value: "string": short',
    ]


def test_transition_rules_run_on_update_only_where_there_is_an_old_value() -> None:
    rules = [{"rule": "self == oldSelf", "message": "immutable"}]
    kind = _kind(
        {
            "type": "object",
            "properties": {
                "name": {"type": "string", "x-kubernetes-validations": rules},
                "slots": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["id"],
                    "items": {
                        "type": "object",
                        "required": ["id"],
                        "properties": {"id": STRING, "size": INT},
                        "x-kubernetes-validations": [
                            {"rule": "self.size >= oldSelf.size", "message": "no shrinking"}
                        ],
                    },
                },
            },
        }
    )
    assert _errors(kind, {"name": "a", "slots": [{"id": "x", "size": 1}]}) == []
    old = {"name": "a", "slots": [{"id": "x", "size": 2}, {"id": "y", "size": 2}]}
    assert _errors(kind, {"name": "a", "slots": [{"id": "y", "size": 3}, {"id": "z"}]}, old) == []
    assert _errors(kind, {"name": "b", "slots": [{"id": "x", "size": 1}]}, old) == [
        'spec.name: Invalid value: "string": immutable',
        'spec.slots[0]: Invalid value: "object": no shrinking',
    ]
    # A field that had no value before is new: its transition rules do not run.
    assert _errors(kind, {"name": "b"}, {}) == []


def test_optional_old_self_rules_run_on_create_too() -> None:
    rule = {
        "rule": "!oldSelf.hasValue() ? self.size() < 3 : self.size() >= oldSelf.value().size()",
        "optionalOldSelf": True,
        "message": "grow only",
    }
    kind = _kind(_spec([], tags={"type": "array", "items": STRING,
                                 "x-kubernetes-validations": [rule]}))  # fmt: skip
    assert _errors(kind, {"tags": ["a", "b", "c"]}) == [
        'spec.tags: Invalid value: "array": grow only'
    ]
    assert _errors(kind, {"tags": ["a", "b", "c"]}, {"tags": ["a", "b"]}) == []
    assert _errors(kind, {"tags": ["a"]}, {"tags": ["a", "b"]}) == [
        'spec.tags: Invalid value: "array": grow only'
    ]


def test_evaluation_errors_in_cel_gos_words() -> None:
    kind = _kind(
        _spec(
            [
                {"rule": "self.missing == 1"},
                {"rule": "self.big + 1 > 0"},
                {"rule": "self.items[3] == 1"},
                {"rule": "self.big / self.zero > 0"},
                {"rule": "self.big > 'a'"},
            ],
            missing=INT,
            big=INT,
            zero=INT,
            items={"type": "array", "items": INT},
        )
    )
    assert _errors(kind, {"big": 2**63 - 1, "zero": 0, "items": [1]}) == [
        'spec: Invalid value: "object": no such key: missing evaluating rule: self.missing == 1',
        'spec: Invalid value: "object": integer overflow evaluating rule: self.big + 1 > 0',
        'spec: Invalid value: "object": index out of bounds: 3 evaluating rule: self.items[3] == 1',
        'spec: Invalid value: "object": division by zero evaluating rule: self.big / self.zero > 0',
        # celpy does not type-check: a mismatch cel-go refuses on the CRD is found here.
        "spec: Invalid value: \"object\": 'no such overload': call arguments did not match a "
        "supported operator, function or macro signature for rule: self.big > 'a'",
    ]


def test_schema_errors_that_leave_the_object_unfit_skip_the_rules() -> None:
    kind = _kind(_spec([{"rule": "self.replicas > 100"}], replicas=INT))
    assert _errors(kind, {"replicas": "three"}) == [
        'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: '
        '"string"',
        '<nil>: Invalid value: "null": some validation rules were not checked because the object '
        "was invalid; correct the existing errors to complete validation",
    ]


@pytest.mark.parametrize(
    "rule",
    [
        # Macros and size.
        "self.items.all(i, i > 0) && self.items.exists(i, i == 2)",
        "self.items.exists_one(i, i == 3) && self.items.map(i, i * 2) == [2, 4, 6]",
        "self.items.filter(i, i > 1).size() == 2 && size(self.name) == 6",
        "has(self.name) && !has(self.owner)",
        # Kubernetes' string library and regular expressions.
        "self.name.lowerAscii() == 'widget' && self.name.upperAscii() == 'WIDGET'",
        "self.name.indexOf('d') == 2 && self.name.lastIndexOf('t') == 5",
        "self.csv.split(',') == ['a', 'b', 'c'] && ['a', 'b'].join('-') == 'a-b'",
        "self.name.substring(1, 3) == 'id' && self.name.charAt(0) == 'W'",
        "'  x '.trim() == 'x' && self.name.replace('W', 'w') == 'widget'",
        "self.name.matches('^W[a-z]+$') && self.name.find('[a-z]+') == 'idget'",
        "'a1b22'.findAll('[0-9]+') == ['1', '22']",
        # Lists.
        "self.items.isSorted() && self.items.sum() == 6 && self.items.max() == 3",
        "self.items.min() == 1 && self.items.indexOf(2) == 1 && [3, 1].isSorted() == false",
        # Numbers: a `number` field is a double, ints and doubles compare.
        "self.ratio == 2.0 && self.ratio > 1 && 1u + 2u == 3u && type(self.ratio) == double",
        # URLs and quantities.
        "url(self.endpoint).getHost() == 'example.com:8443' && isURL(self.endpoint)",
        "url(self.endpoint).getHostname() == 'example.com' && url(self.endpoint).getPort() "
        "== '8443' && url(self.endpoint).getScheme() == 'https'",
        "quantity(self.memory).isGreaterThan(quantity('1Gi')) && isQuantity('100m')",
        "quantity(self.memory).add(quantity('512Mi')).compareTo(quantity('2560Mi')) == 0",
        # Formats: timestamps, durations and bytes.
        "self.at < timestamp('2025-01-01T00:00:00Z') && self.every > duration('1m')",
        "self.at.getFullYear() == 2024 && self.blob == b'hi'",
        # Property names CEL cannot spell are escaped.
        "self.__namespace__ == 'n' && self.x__dash__y == 1",
    ],
)
def test_the_functions_operator_crds_use(rule: str) -> None:
    kind = _kind(
        _spec(
            [{"rule": rule}],
            name=STRING,
            owner=STRING,
            csv=STRING,
            items={"type": "array", "items": INT},
            ratio=NUMBER,
            endpoint=STRING,
            memory=STRING,
            namespace=STRING,
            at={"type": "string", "format": "date-time"},
            every={"type": "string", "format": "duration"},
            blob={"type": "string", "format": "byte"},
            **{"x-y": INT},
        )
    )
    spec = {
        "name": "Widget",
        "csv": "a,b,c",
        "items": [1, 2, 3],
        "ratio": 2,
        "endpoint": "https://example.com:8443/p?q=1",
        "memory": "2Gi",
        "namespace": "n",
        "at": "2024-05-06T07:08:09Z",
        "every": "1h30m",
        "blob": "aGk=",
        "x-y": 1,
    }
    assert _errors(kind, spec) == []


def test_a_runaway_rule_is_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cel_program, "PER_CALL_LIMIT", 10_000)
    kind = _kind(
        _spec(
            [
                {"rule": "self.items.all(x, self.items.all(y, self.items.all(z, x + y + z > 0)))"},
                {"rule": "false", "message": "not reached"},
            ],
            items={"type": "array", "items": INT},
        )
    )
    assert _errors(kind, {"items": list(range(1, 100))}) == [
        "spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no "
        "further validation rules will be run due to call cost exceeds limit for rule: "
        "self.items.all(x, self.items.all(y, self.items.all(z, x + y + z > 0)))"
    ]


RULES = "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations"


def _crd_errors(rules: list[Any]) -> list[str]:
    return [str(e) for e in validate_crd(_crd(_spec(rules, a=INT)))]


def test_a_crd_whose_rules_do_not_compile_is_refused() -> None:
    assert _crd_errors(
        [
            {"rule": "self.a == b"},
            {"rule": "self.a ==", "message": "m", "reason": "FieldValueForbidden"},
            {"rule": "self.a + 1"},
            {"rule": "self.a.lowerAsci() == 'x'"},
            {"rule": "self.a > 0", "messageExpression": "'x' + nope"},
        ]
    ) == [
        f'{RULES}[0].rule: Invalid value: apiextensions.ValidationRule{{Rule:"self.a == b", '
        'Message:"", MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(nil), '
        'FieldPath:"", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:11: '
        "undeclared reference to 'b' (in container '')\n | self.a == b\n | ..........^",
        f'{RULES}[1].rule: Invalid value: apiextensions.ValidationRule{{Rule:"self.a ==", '
        'Message:"m", MessageExpression:"", '
        'Reason:(*apiextensions.FieldValueErrorReason)(0xc000000000), FieldPath:"", '
        "OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:10: Syntax error: "
        "mismatched input '<EOF>'\n | self.a ==\n | .........^",
        f'{RULES}[2].rule: Invalid value: apiextensions.ValidationRule{{Rule:"self.a + 1", '
        'Message:"", MessageExpression:"", Reason:(*apiextensions.FieldValueErrorReason)(nil), '
        'FieldPath:"", OptionalOldSelf:(*bool)(nil)}: cel expression must evaluate to a bool',
        f'{RULES}[3].rule: Invalid value: apiextensions.ValidationRule{{Rule:"self.a.lowerAsci() '
        '== \'x\'", Message:"", MessageExpression:"", '
        'Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", '
        "OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:17: undeclared "
        "reference to 'lowerAsci' (in container '')\n | self.a.lowerAsci() == 'x'\n"
        " | ................^",
        f'{RULES}[4].messageExpression: Invalid value: apiextensions.ValidationRule{{Rule:"self.a '
        '> 0", Message:"", MessageExpression:"\'x\' + nope", '
        'Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:"", '
        "OptionalOldSelf:(*bool)(nil)}: messageExpression compilation failed: ERROR: "
        "<input>:1:7: undeclared reference to 'nope' (in container '')\n | 'x' + nope\n"
        " | ......^",
    ]


def test_field_paths_and_old_self_where_v1_32_refuses_them() -> None:
    # A fieldPath naming no field: the node's rules are not compiled (`nope` goes unreported).
    assert _crd_errors([{"rule": "self.a > nope", "fieldPath": ".b"}]) == [
        f'{RULES}[0].fieldPath: Invalid value: ".b": fieldPath must be a valid path'
    ]
    assert _crd_errors([{"rule": "self.a > 0", "optionalOldSelf": True}]) == [
        f"{RULES}[0].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not "
        "used in rule"
    ]
    items = {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "b": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}
            },
        },
    }
    crd = _crd({"type": "object", "properties": {"list": items}})
    spec = "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[list]"
    assert [str(e) for e in validate_crd(crd)] == [
        f"{spec}.items.properties[b].x-kubernetes-validations[0].rule: Invalid value: "
        f'"self == oldSelf": oldSelf cannot be used on the uncorrelatable portion of the schema '
        f"within {spec}"
    ]

"""Field errors read exactly as kube-apiserver prints them."""

from pinnace.api import field
from pinnace.api.field import Path


def test_path_renders_children_indexes_and_keys() -> None:
    path = Path("spec").child("containers").index(0).child("resources", "limits").key("cpu")
    assert str(path) == "spec.containers[0].resources.limits[cpu]"


def test_path_is_immutable_and_comparable() -> None:
    spec = Path("spec")
    assert spec.child("a") == Path("spec", "a")
    assert str(spec) == "spec"
    assert len({Path("a").index(1), Path("a").index(1)}) == 1


def test_a_subscript_on_an_empty_path_and_paths_below_it() -> None:
    keyed = Path().key("k")
    assert str(keyed) == "[k]"
    assert str(keyed.child("a").index(2).key("x")) == "[k].a[2][x]"
    assert str(Path("").child("a")) == ".a"
    assert Path("a", "b[0]") == Path("a").child("b").index(0)


def test_invalid_quotes_strings_like_go() -> None:
    err = field.invalid(
        Path("spec", "containers").index(0).child("resources", "limits").key("cpu"),
        "1.5.5",
        "quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    )
    assert str(err) == (
        'spec.containers[0].resources.limits[cpu]: Invalid value: "1.5.5": quantities must '
        "match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )


def test_numbers_and_booleans_print_bare() -> None:
    assert str(field.invalid("spec.replicas", -1, "must be greater than or equal to 0")) == (
        "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
    )
    assert field.invalid("x", True).body == "Invalid value: true"
    assert field.invalid("x", None).body == 'Invalid value: "null"'


def test_required_and_forbidden_never_show_the_value() -> None:
    assert str(field.required(Path("spec", "containers"))) == "spec.containers: Required value"
    assert str(field.forbidden("spec.x", "may not be set")) == "spec.x: Forbidden: may not be set"


def test_not_supported_lists_the_supported_values_quoted() -> None:
    err = field.not_supported("spec.restartPolicy", "Sometimes", ["Always", "OnFailure", "Never"])
    assert str(err) == (
        'spec.restartPolicy: Unsupported value: "Sometimes": supported values: '
        '"Always", "OnFailure", "Never"'
    )


def test_too_long_and_too_many() -> None:
    assert field.too_long("metadata.annotations", "x" * 10, 5).body == (
        "Too long: must have at most 5 bytes"
    )
    assert field.too_many("spec.items", 7, 5).body == "Too many: 7: must have at most 5 items"


def test_causes_carry_reason_message_and_field() -> None:
    err = field.duplicate(Path("spec", "containers").index(1).child("name"), "app")
    assert err.cause() == {
        "reason": "FieldValueDuplicate",
        "message": 'Duplicate value: "app"',
        "field": "spec.containers[1].name",
    }


def test_aggregate_brackets_several_and_drops_repeats() -> None:
    a = field.required("a")
    b = field.required("b")
    assert field.aggregate_message([a]) == "a: Required value"
    assert field.aggregate_message([a, b, a]) == "[a: Required value, b: Required value]"

"""Label selectors and label validation, with vectors from apimachinery's selector_test.go."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pinnace.api.field import Path
from pinnace.api.labels import (
    LabelSelector,
    SelectorError,
    parse_selector,
    selector_from_dict,
    selector_from_set,
    validate_label_selector,
    validate_labels,
)


@pytest.mark.parametrize(
    "text",
    ["x=a,y=b,z=c", "", "x!=a,y=b", "x=", "x= ", "x=,z= ", "x= ,z= ", "!x", "x>1", "x>1,z<5"],
)
def test_parse_round_trips(text: str) -> None:
    assert str(parse_selector(text)) == text.replace(" ", "")


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("\rx", "x"),
        ("this-is-a-dns.domain.com/key-with-dash", "this-is-a-dns.domain.com/key-with-dash"),
        (
            "0.1.2.domain/99 notin (10.10.100.1, tick.tack.clock)",
            "0.1.2.domain/99 notin (10.10.100.1,tick.tack.clock)",
        ),
        ("foo  in\t (abc)", "foo in (abc)"),
        ("x notin\n (abc)", "x notin (abc)"),
        ("x in (def,abc,def)", "x in (abc,def)"),
        ("x in (abc,)", "x in (,abc)"),
        ("x in ()", "x in ()"),
        ("x notin ( )", "x notin ()"),
        ("x notin (, a)", "x notin (,a)"),
        ("x notin (abc,def),bar,z in (),w", "bar,w,x notin (abc,def),z in ()"),
        ("x,y in (a)", "x,y in (a)"),
        ("a in (x,y,notin, z,in)", "a in (in,notin,x,y,z)"),
        ("y==jkl,x=abc,z!=a,z", "x=abc,y==jkl,z!=a,z"),
        ("x=a,a=x", "a=x,x=a"),
        ("notin=in", "notin=in"),
        ("a ", "a"),
    ],
)
def test_parse_canonical_string(text: str, canonical: str) -> None:
    assert str(parse_selector(text)) == canonical


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x==a==b", "found '==', expected: ',' or 'end of string'"),
        ("!x=a", "found '=', expected: ',' or 'end of string'"),
        ("x,,y", "found ',', expected: identifier after ','"),
        (",x,y", "found ',', expected: !, identifier, or 'end of string'"),
        ("a in (xyz),", "found '', expected: identifier after ','"),
        ("a in (xyz)b notin ()", "found 'b', expected: ',' or 'end of string'"),
        (
            "x nott in (y)",
            "unable to parse requirement: found 'nott', expected: in, notin, =, ==, !=, gt, lt",
        ),
        ("a in (xyz abc)", "unable to parse requirement: found 'abc', expected: ',' or ')'"),
        ("a notin(", "unable to parse requirement: found '', expected: ',', ')' or identifier"),
        ("a (", "unable to parse requirement: found '(', expected: in, notin, =, ==, !=, gt, lt"),
        ("(", "found '(', expected: !, identifier, or 'end of string'"),
        ("x in a", "unable to parse requirement: found 'a' expected: '('"),
        ("x=(", "unable to parse requirement: found '(', expected: identifier"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
        (
            "x<a",
            'unable to parse requirement: values[0]: Invalid value: "a": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        (
            "x=a@b",
            'unable to parse requirement: values[0][x]: Invalid value: "a@b": a valid label '
            "must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and "
            "must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  "
            "or '12345', regex used for validation is "
            "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ),
        (
            "-x",
            'unable to parse requirement: <nil>: Invalid value: "-x": name part must consist of '
            "alphanumeric characters, '-', '_' or '.', and must start and end with an "
            "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
            "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ),
    ],
)
def test_parse_errors(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as err:
        parse_selector(text)
    assert str(err.value) == message


def test_pipes_are_part_of_a_value_not_an_operator() -> None:
    with pytest.raises(SelectorError) as err:
        parse_selector("x=a||y=b")
    assert str(err.value).startswith(
        'unable to parse requirement: values[0][x]: Invalid value: "a||y": a valid label'
    )


@pytest.mark.parametrize(
    ("text", "labels"),
    [
        ("", {"x": "y"}),
        ("x=y", {"x": "y"}),
        ("x=y,z=w", {"x": "y", "z": "w"}),
        ("x!=y,z!=w", {"x": "z", "z": "a"}),
        ("notin=in", {"notin": "in"}),
        ("x", {"x": "z"}),
        ("!x", {"y": "z"}),
        ("x>1", {"x": "2"}),
        ("x<1", {"x": "0"}),
        ("x<1", {"x": "-5"}),
        ("foo=bar,baz=blah", {"foo": "bar", "baz": "blah"}),
        ("x in (foo),y notin (alpha)", {"x": "foo", "y": "baz"}),
        ("x notin (),y", {"y": ""}),
        ("!x,y", {"y": ""}),
        ("x notin (a)", {}),
    ],
)
def test_matches(text: str, labels: dict[str, str]) -> None:
    assert parse_selector(text).matches(labels)


@pytest.mark.parametrize(
    ("text", "labels"),
    [
        ("x=z", {}),
        ("x=y", {"x": "z"}),
        ("x=y,z=w", {"x": "w", "z": "w"}),
        ("x!=y,z!=w", {"x": "z", "z": "w"}),
        ("x", {"y": "z"}),
        ("!x", {"x": "z"}),
        ("x>1", {"x": "0"}),
        ("x<1", {"x": "2"}),
        ("x>1", {"x": "v2"}),
        ("x>1", {}),
        ("x>1", {"x": "99999999999999999999"}),
        ("foo=bar,foobar=bar,baz=blah", {"foo": "bar", "baz": "blah"}),
        ("x in (foo),y in (alpha)", {"x": "foo", "y": "baz"}),
        ("x notin (),!y", {"y": ""}),
        ("x in ()", {"y": "baz"}),
    ],
)
def test_does_not_match(text: str, labels: dict[str, str]) -> None:
    assert not parse_selector(text).matches(labels)


def test_empty_everything_and_nothing() -> None:
    assert parse_selector("").empty
    assert not parse_selector("x").empty
    assert LabelSelector.everything().matches({})
    nothing = LabelSelector.nothing()
    assert not nothing.empty
    assert not nothing.matches({})
    assert str(nothing) == ""


def test_selector_from_dict_nil_and_empty() -> None:
    assert not selector_from_dict(None).matches({"a": "b"})
    assert selector_from_dict({}).matches({"a": "b"})
    assert selector_from_dict({}).empty
    assert selector_from_dict({"matchLabels": {}, "matchExpressions": []}).empty


def test_selector_from_dict() -> None:
    sel = selector_from_dict(
        {
            "matchLabels": {"tier": "web", "app": "shop"},
            "matchExpressions": [
                {"key": "zone", "operator": "In", "values": ["b", "a"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "env", "operator": "NotIn", "values": ["dev"]},
                {"key": "gpu", "operator": "Exists"},
            ],
        }
    )
    assert str(sel) == "app=shop,!canary,env notin (dev),gpu,tier=web,zone in (a,b)"
    pod = {"app": "shop", "tier": "web", "zone": "a", "gpu": "1"}
    assert sel.matches(pod)
    assert not sel.matches({**pod, "canary": "yes"})
    assert not sel.matches({**pod, "env": "dev"})
    assert not sel.matches({**pod, "zone": "c"})


def test_selector_from_dict_errors() -> None:
    with pytest.raises(SelectorError, match=r'^"Gt" is not a valid label selector operator$'):
        selector_from_dict({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]})
    with pytest.raises(SelectorError) as err:
        selector_from_dict({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]})
    assert "values: Invalid value: " in str(err.value)
    assert str(err.value).endswith("for 'in', 'notin' operators, values set can't be empty")
    with pytest.raises(SelectorError, match=r'^key: Invalid value: "a/b/c": a qualified name'):
        selector_from_dict({"matchLabels": {"a/b/c": "x"}})


def test_selector_from_set() -> None:
    sel = selector_from_set({"foo": "bar", "baz": "blah"})
    assert str(sel) == "baz=blah,foo=bar"
    assert sel.matches({"foo": "bar", "baz": "blah", "x": "y"})
    assert not sel.matches({"foo": "bar"})
    assert selector_from_set({}).empty


label_keys = st.sampled_from(["a", "b", "c", "example.com/d"])
label_values = st.sampled_from(["", "x", "y", "1", "2"])


@given(
    st.dictionaries(label_keys, label_values),
    st.dictionaries(label_keys, label_values, min_size=1),
)
def test_set_selector_is_subset_check(labels: dict[str, str], wanted: dict[str, str]) -> None:
    expected = all(labels.get(k) == v for k, v in wanted.items())
    assert selector_from_set(wanted).matches(labels) is expected
    assert parse_selector(str(selector_from_set(wanted))).matches(labels) is expected


@given(
    st.lists(st.sampled_from(["x", "y", "1"]), min_size=1, max_size=3, unique=True),
    st.dictionaries(label_keys, label_values),
)
def test_in_and_notin_are_complements_when_key_present(
    values: list[str], labels: dict[str, str]
) -> None:
    inside = parse_selector(f"a in ({','.join(values)})")
    outside = parse_selector(f"a notin ({','.join(values)})")
    if "a" in labels:
        assert inside.matches(labels) != outside.matches(labels)
    else:
        assert not inside.matches(labels) and outside.matches(labels)


def test_validate_labels() -> None:
    path = Path("metadata", "labels")
    assert validate_labels({"app": "web", "example.com/tier": ""}, path) == []
    errs = validate_labels({"-bad": "ok", "good": "not ok"}, path)
    assert [e.field for e in errs] == ["metadata.labels", "metadata.labels"]
    assert str(errs[0]).startswith(
        'metadata.labels: Invalid value: "-bad": name part must consist of alphanumeric'
    )
    assert str(errs[1]).startswith(
        'metadata.labels: Invalid value: "not ok": a valid label must be an empty string'
    )


def test_validate_label_selector() -> None:
    path = Path("spec", "selector")
    assert validate_label_selector(None, path) == []
    good = {
        "matchLabels": {"app": "web"},
        "matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}],
    }
    assert validate_label_selector(good, path) == []
    bad = {
        "matchExpressions": [
            {"key": "a", "operator": "In"},
            {"key": "b", "operator": "Exists", "values": ["x"]},
            {"key": "c", "operator": "Gt", "values": ["1"]},
            {"key": "-d", "operator": "NotIn", "values": ["-x"]},
        ]
    }
    assert [str(e) for e in validate_label_selector(bad, path)] == [
        "spec.selector.matchExpressions[0].values: Required value: "
        "must be specified when `operator` is 'In' or 'NotIn'",
        "spec.selector.matchExpressions[1].values: Forbidden: "
        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
        'spec.selector.matchExpressions[2].operator: Invalid value: "Gt": '
        "not a valid selector operator",
        'spec.selector.matchExpressions[3].key: Invalid value: "-d": name part must consist of '
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        'spec.selector.matchExpressions[3].values[0]: Invalid value: "-x": a valid label must be '
        "an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
        "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', "
        "regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    ]
    relaxed = validate_label_selector(bad, path, allow_invalid_label_value_in_selector=True)
    assert len(relaxed) == 4

"""Name and key format checks, with vectors from apimachinery's validation_test.go."""

import itertools
import re
from collections.abc import Callable
from random import Random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pinnace.api import names
from pinnace.api.names import (
    NAME_SUFFIX_ALPHABET,
    is_c_identifier,
    is_config_map_key,
    is_dns1035_label,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_env_var_name,
    is_good_dns1123_label,
    is_good_dns1123_subdomain,
    is_qualified_name,
    is_valid_label_value,
    is_valid_percent,
    is_valid_port_name,
    is_valid_port_num,
    random_suffix,
)

COMMON_BAD = [
    "", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-", "-a", "1-", "-1",
    "_", "a_", "_a", "a_b", "1_", "_1", "1_2", " ", "a ", " a", "a b", "1 ", " 1", "1 2",
]  # fmt: skip


@pytest.mark.parametrize(
    "value", ["a", "ab", "abc", "a1", "a-1", "a--1--2--b", "0", "01", "1a", "1--a--b--2", "a" * 63]
)
def test_dns1123_label_accepts(value: str) -> None:
    assert is_dns1123_label(value) == []


@pytest.mark.parametrize("value", [*COMMON_BAD, ".", "a.", ".a", "1.", ".1", "a" * 64])
def test_dns1123_label_rejects(value: str) -> None:
    assert is_dns1123_label(value)


def test_dns1123_label_messages() -> None:
    assert is_dns1123_label("My-Name") == [
        "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
        "and must start and end with an alphanumeric character (e.g. 'my-name',  or "
        "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
    ]
    assert is_dns1123_label("a.b") == ["must not contain dots"]
    assert is_dns1123_label("a" * 64) == ["must be no more than 63 characters"]


@pytest.mark.parametrize(
    "value",
    ["a.a", "a--1--2--b.1", "0.1", "1--a--b--2.1", "a.b.c.d.e", "1.2.3.4.5", "a" * 253],
)
def test_dns1123_subdomain_accepts(value: str) -> None:
    assert is_dns1123_subdomain(value) == []


@pytest.mark.parametrize(
    "value",
    [*COMMON_BAD, ".", "a.", ".a", "a..b", "1..2", "A.a", "ab.A", "a.B.c.d.e", "a@b", "a:b"],
)
def test_dns1123_subdomain_rejects(value: str) -> None:
    assert is_dns1123_subdomain(value)


def test_dns1123_subdomain_message() -> None:
    assert is_dns1123_subdomain("a" * 254) == ["must be no more than 253 characters"]
    assert is_dns1123_subdomain("Foo") == [
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
        "'-' or '.', and must start and end with an alphanumeric character (e.g. "
        "'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    ]


@pytest.mark.parametrize("value", ["0", "01", "1a", "1--a--b--2", *COMMON_BAD, "a.b", "a" * 64])
def test_dns1035_label_rejects(value: str) -> None:
    assert is_dns1035_label(value)


def test_dns1035_label() -> None:
    assert is_dns1035_label("a--1--2--b") == []
    assert is_dns1035_label("a" * 63) == []
    assert is_dns1035_label("1abc") == [
        "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
        "with an alphabetic character, and end with an alphanumeric character (e.g. "
        "'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
    ]


@pytest.mark.parametrize(
    "value",
    [
        "simple", "now-with-dashes", "1-starts-with-num", "1234", "simple/simple",
        "now.with.dots/simple", "1-num.2-num/3-num", "1.2.3.4/5678", "Uppercase_Is_OK_123",
        "example.com/Uppercase_Is_OK_123", "requests.storage-foo", "a" * 63,
        "a" * 253 + "/" + "b" * 63,
    ],
)  # fmt: skip
def test_qualified_name_accepts(value: str) -> None:
    assert is_qualified_name(value) == []


@pytest.mark.parametrize(
    "value",
    [
        "nospecialchars%^=@", "cantendwithadash-", "-cantstartwithadash-", "only/one/slash",
        "Example.com/abc", "example_com/abc", "example.com/", "/simple", "a" * 64,
        "a" * 254 + "/abc",
    ],
)  # fmt: skip
def test_qualified_name_rejects(value: str) -> None:
    assert is_qualified_name(value)


QNAME_REGEX = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with "
    "an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def test_qualified_name_messages() -> None:
    assert is_qualified_name("/simple") == ["prefix part must be non-empty"]
    assert is_qualified_name("example.com/") == [
        "name part must be non-empty",
        "name part " + QNAME_REGEX,
    ]
    assert is_qualified_name("a" * 64) == ["name part must be no more than 63 characters"]
    assert is_qualified_name("a/b/c") == [
        "a qualified name " + QNAME_REGEX
        + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
    ]  # fmt: skip
    assert is_qualified_name("Example.com/abc")[0].startswith(
        "prefix part a lowercase RFC 1123 subdomain"
    )


@pytest.mark.parametrize(
    "value",
    ["simple", "now-with-dashes", "1-starts-with-num", "end-with-num-1", "1234", "a" * 63, ""],
)
def test_label_value_accepts(value: str) -> None:
    assert is_valid_label_value(value) == []


@pytest.mark.parametrize(
    "value",
    [
        "nospecialchars%^=@", "Tama-nui-te-rā.is.Māori.sun", "\\backslashes\\are\\bad",
        "-starts-with-dash", "ends-with-dash-", ".starts.with.dot", "ends.with.dot.", "a" * 64,
    ],
)  # fmt: skip
def test_label_value_rejects(value: str) -> None:
    assert is_valid_label_value(value)


def test_label_value_message() -> None:
    assert is_valid_label_value("-x") == [
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
        "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
        "'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    ]


def test_length_counts_utf8_bytes() -> None:
    assert "must be no more than 63 characters" in is_valid_label_value("ā" * 32)


@pytest.mark.parametrize(
    "value", ["telnet", "re-mail-ck", "pop3", "a", "a-1", "1-a", "a-1-b-2-c", "1-a-2-b-3"]
)
def test_port_name_accepts(value: str) -> None:
    assert is_valid_port_name(value) == []


@pytest.mark.parametrize(
    "value",
    ["longerthan15characters", "", "a" * 16, "12345", "1-2-3-4", "-begin", "end-", "two--hyphens",
     "whois++"],
)  # fmt: skip
def test_port_name_rejects(value: str) -> None:
    assert is_valid_port_name(value)


def test_port_name_messages() -> None:
    assert is_valid_port_name("-Ab--") == [
        "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
        "must not contain consecutive hyphens",
        "must not begin or end with a hyphen",
    ]
    assert is_valid_port_name("12345") == ["must contain at least one letter (a-z)"]


@given(st.integers(min_value=-(2**40), max_value=2**40))
def test_port_num(port: int) -> None:
    expected = [] if 1 <= port <= 65535 else ["must be between 1 and 65535, inclusive"]
    assert is_valid_port_num(port) == expected


def test_c_identifier() -> None:
    for good in ["a", "ab", "abc", "a1", "_a", "a_", "a_b", "a_1", "_", "A", "AB", "A_1"]:
        assert is_c_identifier(good) == []
    for bad in ["", "1", "123", "1a", "-", "a-", "-a", "a-b", " ", "a ", ".", "a.b", "#a"]:
        assert is_c_identifier(bad) == [
            "a valid C identifier must start with alphabetic character or '_', followed by a "
            "string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or "
            "'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')"
        ]


@pytest.mark.parametrize(
    "value",
    ["-", ":", "_", "+a", ">a", "<a", "a.", "a..", "*a", "%a", "?a", "a:a", "a_a", "aAz", "~a",
     "|a", "a0a", "a9", "/a", "a ", "#a", "0a", "0 a", "'a", "(a", "@a"],
)  # fmt: skip
def test_relaxed_env_var_name_accepts(value: str) -> None:
    assert is_env_var_name(value) == []


def test_relaxed_env_var_name_rejects() -> None:
    assert is_env_var_name("") == ["environment variable name must be non-empty"]
    printable = (
        "a valid environment variable name must consist only of printable ASCII characters "
        "other than '='"
    )
    for bad in ["=", "a=", "1=a", "a=b", "a\tb", "ā", "\x7f"]:
        assert is_env_var_name(bad) == [printable]


def test_strict_env_var_name() -> None:
    for good in ["A", "ab", "a_b", "A_1", "a.b", "a-b", "-a", ".a", "my.env-name"]:
        assert is_env_var_name(good, relaxed=False) == []
    assert is_env_var_name("1a", relaxed=False)[0].startswith(
        "a valid environment variable name must consist of alphabetic characters, digits, "
        "'_', '-', or '.', and must not start with a digit (e.g. 'my.env-name',  or "
    )
    assert is_env_var_name("..", relaxed=False) == ["must not be '..'"]
    assert is_env_var_name("..a", relaxed=False) == ["must not start with '..'"]


def test_config_map_key() -> None:
    for good in ["a", "good", "good-good", "still.good", "this.is.also.good", ".so.is.this",
                 "THIS_IS_GOOD", "so_is_this_17"]:  # fmt: skip
        assert is_config_map_key(good) == []
    assert is_config_map_key(".") == ["must not be '.'"]
    assert is_config_map_key("..") == ["must not be '..'"]
    assert is_config_map_key("..bad") == ["must not start with '..'"]
    assert is_config_map_key("b*d") == [
        "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. "
        "'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is "
        "'[-._a-zA-Z0-9]+')"
    ]
    assert is_config_map_key("a" * 254) == ["must be no more than 253 characters"]


@pytest.mark.parametrize("value", ["0%", "00000%", "1%", "01%", "99%", "100%", "101%"])
def test_percent_accepts(value: str) -> None:
    assert is_valid_percent(value) == []


@pytest.mark.parametrize(
    "value", ["", "0", "100", "0.0%", "99.9%", "hundred", " 1%", "1% ", "-0%", "-1%", "+1%", "1%\n"]
)
def test_percent_rejects(value: str) -> None:
    assert is_valid_percent(value) == [
        "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%', "
        " or '93%', regex used for validation is '[0-9]+%')"
    ]


@pytest.mark.parametrize(
    "check", [is_dns1123_label, is_dns1123_subdomain, is_qualified_name, is_valid_label_value]
)
def test_a_repeated_check_gives_the_same_answer_in_a_list_of_its_own(
    check: Callable[[str], list[str]],
) -> None:
    first = check("Not_Valid/a/b")
    first.append("changed by the caller")
    again = check("Not_Valid/a/b")
    assert again == first[:-1]
    assert again


def test_a_random_suffix_is_what_random_choice_draws_from_the_alphabet() -> None:
    """The names a seed generates stay the same: each character is `random.choice`'s."""
    for seed in range(200):
        ours, theirs = Random(seed), Random(seed)
        expected = "".join(theirs.choice(NAME_SUFFIX_ALPHABET) for _ in range(5))
        assert random_suffix(ours) == expected
        assert ours.random() == theirs.random()  # the same bits were drawn


@given(st.text(alphabet="az09-.Aé", max_size=70))
def test_a_good_dns1123_label_is_one_is_dns1123_label_finds_nothing_in(value: str) -> None:
    assert is_good_dns1123_label(value) == (is_dns1123_label(value) == [])
    for edge in ("a" * 63, "a" * 64, "", "é"):
        assert is_good_dns1123_label(edge) == (is_dns1123_label(edge) == [])


@given(st.text(alphabet="az09-.Aé", max_size=70))
def test_a_good_dns1123_subdomain_is_one_is_dns1123_subdomain_finds_nothing_in(
    value: str,
) -> None:
    assert is_good_dns1123_subdomain(value) == (is_dns1123_subdomain(value) == [])
    for edge in ("a" * 253, "a" * 254, "a." * 126 + "a", "a." * 126 + "ab", "", "é", "a.é"):
        assert is_good_dns1123_subdomain(edge) == (is_dns1123_subdomain(edge) == [])


@pytest.mark.parametrize(
    ("fmt", "pattern"),
    [
        (names._DNS1123_LABEL_FMT, names._DNS1123_LABEL),
        (names._DNS1123_SUBDOMAIN_FMT, names._DNS1123_SUBDOMAIN),
        (names._DNS1035_LABEL_FMT, names._DNS1035_LABEL),
    ],
)
def test_the_patterns_matched_are_the_formats_quoted(fmt: str, pattern: re.Pattern[str]) -> None:
    """Every string of up to six of these characters matches a pattern as it does its format."""
    quoted = re.compile(fmt)
    for n in range(7):
        for chars in itertools.product("a1-.A_", repeat=n):
            value = "".join(chars)
            assert bool(pattern.fullmatch(value)) == bool(quoted.fullmatch(value)), value

"""Quantity against apimachinery's resource.Quantity: vectors from quantity_test.go and its code."""

import copy
import pickle
import re
from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pinnace.resources.quantity import (
    ERR_FORMAT_WRONG,
    ERR_NUMERIC,
    ERR_SUFFIX,
    Quantity,
    QuantityError,
    canonical_quantity,
)

INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("1.5Gi", "1536Mi"),
        ("0.5", "500m"),
        ("1000m", "1"),
        ("1.5", "1500m"),
        ("1e3", "1e3"),
        ("1024Ki", "1Mi"),
        ("1024Mi", "1Gi"),
        ("1000M", "1G"),
        ("0.1Gi", "107374182400m"),  # a binary fraction is written in decimal
        ("0.5Mi", "512Ki"),
        ("512Ki", "512Ki"),
        ("0.5Ki", "512"),  # BinarySI below 1Ki is written in decimal
        ("1n", "1n"),
        ("0.0000000001", "1n"),  # finer than 1n rounds up
        ("3.001n", "4n"),
        ("0.00000012345", "124n"),
        ("1.1E-9", "2e-9"),
        (".001Ki", "1024m"),
        (".000001Ki", "1024u"),
        (".000000001Ki", "1024n"),
        (".000000000001Ki", "2n"),
        ("0.000000000001Ki", "2n"),
        ("100.035Ki", "102435840m"),
        ("0.05Gi", "53687091200m"),
        ("9.01", "9010m"),
        ("8.1k", "8100"),
        ("1.7E18", "1700e15"),
        ("1.3E+6", "1300e3"),
        ("0.5e-2", "5e-3"),
        ("1E", "1E"),
        ("12E", "12E"),
        ("1.01E", "1010P"),
        ("9Ei", "9223372036854775807"),  # BinarySI is capped at 2^63-1
        ("9223372036854775807Ki", "9223372036854775807"),
        ("3Ei", "3Ei"),
        ("10Ti", "10Ti"),
        ("-1.5Gi", "-1536Mi"),
        ("-0.5", "-500m"),
        ("-.001Ki", "-1024m"),
        ("-1000m", "-1"),
        ("0", "0"),
        ("-0", "0"),
        ("0Gi", "0"),
        ("0.000", "0"),
        (".5", "500m"),
        ("+.5", "500m"),
        (".", "0"),
        ("-", "0"),
        ("k", "0"),
        ("1.0", "1"),
        ("50k", "50k"),
        ("1500", "1500"),
        ("1080000000n", "1080m"),
    ],
)
def test_canonical_string(text: str, canonical: str) -> None:
    assert canonical_quantity(text) == canonical
    assert str(Quantity(text)) == canonical


@pytest.mark.parametrize(
    "text",
    # Parsed in a form Kubernetes deems canonical, so kube-apiserver echoes the input as written.
    [
        "+1",
        "01",
        "1E3",
        "1e+3",
        "1.",
        "1.G",
        "1.001",
        "100.035k",
        "7.123456M",
        "+1Ki",
        "1e-0",
        "-1",
    ],
)
def test_input_kept_when_kubernetes_keeps_it(text: str) -> None:
    assert str(Quantity(text)) == text


@pytest.mark.parametrize(
    ("text", "expected", "fmt"),
    [
        ("1", Fraction(1), "DecimalSI"),
        ("1Ki", Fraction(1024), "BinarySI"),
        ("7Mi", Fraction(7 * 2**20), "BinarySI"),
        ("3Ei", Fraction(3 * 2**60), "BinarySI"),
        ("5n", Fraction(5, 10**9), "DecimalSI"),
        ("4u", Fraction(4, 10**6), "DecimalSI"),
        ("50k", Fraction(50_000), "DecimalSI"),
        ("2P", Fraction(2 * 10**15), "DecimalSI"),
        ("1E-3", Fraction(1, 1000), "DecimalExponent"),
        ("1e13", Fraction(10**13), "DecimalExponent"),
        ("100.035k", Fraction(100035), "DecimalSI"),
        ("0.0005k", Fraction(1, 2), "DecimalSI"),
        ("0.5e-1", Fraction(5, 100), "DecimalExponent"),
        ("1.53E12", Fraction(153 * 10**10), "DecimalExponent"),
        ("0.5e-9", Fraction(1, 10**9), "DecimalExponent"),
        ("0.9n", Fraction(1, 10**9), "DecimalSI"),
        ("0.000000000001Ki", Fraction(2, 10**9), "DecimalSI"),
        ("100.035Ki", Fraction(10243584, 100), "BinarySI"),
        ("0.025Ti", Fraction(274877906944, 10), "BinarySI"),
        ("9Ei", Fraction(INT64_MAX), "BinarySI"),
        (".0001k", Fraction(1, 10), "DecimalSI"),
        ("0Ki", Fraction(0), "BinarySI"),
        ("e3", Fraction(0), "DecimalExponent"),
        ("-1.025Ti", -Fraction(1025 * 2**40, 1000), "BinarySI"),
        ("-0.9n", Fraction(-1, 10**9), "DecimalSI"),
    ],
)
def test_parsed_value_and_format(text: str, expected: Fraction, fmt: str) -> None:
    q = Quantity(text)
    assert q.as_fraction() == expected
    assert q.format == fmt


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", ERR_FORMAT_WRONG),
        (" 1", ERR_FORMAT_WRONG),
        ("1 ", ERR_FORMAT_WRONG),
        ("1 Gi", ERR_FORMAT_WRONG),
        ("1.5.5", ERR_FORMAT_WRONG),
        ("1.1.M", ERR_FORMAT_WRONG),
        ("1+1.0M", ERR_FORMAT_WRONG),
        ("1Gib", ERR_FORMAT_WRONG),
        ("0.1am", ERR_FORMAT_WRONG),
        ("aoeu", ERR_FORMAT_WRONG),
        ("1\n", ERR_FORMAT_WRONG),
        ("١", ERR_FORMAT_WRONG),  # only ASCII digits
        ("--1", ERR_SUFFIX),
        ("1e", ERR_SUFFIX),
        ("0.1mi", ERR_SUFFIX),
        (".5i", ERR_SUFFIX),
        ("1i", ERR_SUFFIX),
        ("-3.01i", ERR_SUFFIX),
        ("-3.01e-", ERR_SUFFIX),
        ("1ee3", ERR_SUFFIX),
        ("1e4294967297", ERR_SUFFIX),
        ("1e2147483648", ERR_SUFFIX),
        ("1e-2147483648", ERR_SUFFIX),
        ("1e99999999999999999999", ERR_SUFFIX),
        ("Ei", ERR_NUMERIC),
        ("-.Pi", ERR_NUMERIC),
        (".e-10", ERR_NUMERIC),
    ],
)
def test_rejections_carry_kubernetes_reason(text: str, reason: str) -> None:
    with pytest.raises(QuantityError) as caught:
        Quantity(text)
    assert caught.value.value == text
    assert caught.value.reason == reason
    assert str(caught.value) == f'invalid quantity "{text}": {reason}'
    assert isinstance(caught.value, ValueError)


def test_format_wrong_reason_quotes_the_kubernetes_expression() -> None:
    assert ERR_FORMAT_WRONG == (
        "quantities must match the regular expression "
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("1e1000000000", "10e999999999"),
        ("1e2147483647", "10e2147483646"),
        ("1e-2147483647", "1e-9"),
        ("-1e-2147483647", "-1e-9"),
        ("1000E", "1e21"),  # no SI suffix past E: exponent form, as upstream now writes it
        ("5000E", "5e21"),
        ("123456789012345678901234567890", "123456789012345678901234567890"),
    ],
)
def test_extreme_exponents_stay_cheap_and_exact(text: str, canonical: str) -> None:
    q = Quantity(text)
    assert str(q) == canonical
    assert Quantity(str(q)) == q


def test_huge_values_compare_without_expanding() -> None:
    huge, tiny = Quantity("1e1000000000"), Quantity("1e-2147483647")
    assert tiny < Quantity("1n") * 2 < Quantity("9Ei") < huge
    assert -huge < -tiny < 0
    assert huge.value() == INT64_MAX
    assert (-huge).milli_value() == INT64_MIN


@pytest.mark.parametrize(
    ("text", "value", "milli"),
    [
        ("1", 1, 1000),
        ("1.5", 2, 1500),
        ("-1.5", -2, -1500),  # away from zero, as int64Amount.AsScaledInt64
        ("100m", 1, 100),
        ("1n", 1, 1),
        ("-1n", -1, -1),
        ("1.0005", 2, 1001),
        ("1Ki", 1024, 1024000),
        ("0", 0, 0),
        ("9Ei", INT64_MAX, INT64_MAX),
        ("9223372036854775807", INT64_MAX, INT64_MAX),
        ("9223372036854775807m", 9223372036854776, INT64_MAX),
        ("-9223372036854775808", INT64_MIN, INT64_MIN),
        ("1e100", INT64_MAX, INT64_MAX),
    ],
)
def test_value_and_milli_value_round_away_from_zero(text: str, value: int, milli: int) -> None:
    q = Quantity(text)
    assert q.value() == value
    assert q.milli_value() == milli


def test_construction() -> None:
    assert str(Quantity(3)) == "3"
    assert Quantity(3).format == "DecimalSI"
    assert str(Quantity(-2000)) == "-2k"
    assert str(Quantity.from_milli(1500)) == "1500m"
    assert str(Quantity.from_milli(2000)) == "2"
    assert str(Quantity.from_milli(500, "BinarySI")) == "500m"
    assert str(Quantity.from_milli(2048000, "BinarySI")) == "2Ki"
    assert Quantity.from_milli(2048000, "BinarySI").format == "BinarySI"
    q = Quantity("1Gi")
    assert Quantity(q) is q
    assert repr(q) == 'Quantity("1Gi")'
    with pytest.raises(TypeError):
        Quantity(True)
    with pytest.raises(TypeError):
        Quantity(1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="format"):
        Quantity.from_milli(1, "Binary")  # type: ignore[arg-type]


def test_arithmetic_follows_go_add_sub_and_mul() -> None:
    assert str(Quantity("10") + Quantity("1Ki")) == "1034"
    assert (Quantity(10) + Quantity(1)).format == "DecimalSI"
    ten_binary = Quantity("10Ki") - Quantity("10Ki") + Quantity("10Ki")
    assert ten_binary.format == "BinarySI"
    # A zero left operand takes the right operand's format, in either order.
    assert str(Quantity(0) + Quantity("1Gi")) == "1Gi"
    assert str(Quantity("1Gi") + Quantity(0)) == "1Gi"
    assert str(Quantity("100m") + Quantity("0")) == "100m"
    assert str(Quantity(0) - Quantity("100m")) == "-100m"
    assert str(Quantity(0) - Quantity("1Gi")) == "-1Gi"
    assert str(sum([Quantity("1Gi"), Quantity("512Mi")])) == "1536Mi"
    assert str(sum([Quantity("100m"), Quantity("250m"), Quantity("1")])) == "1350m"
    assert str(-Quantity("9.01")) == "-9010m"
    assert str(abs(Quantity("-1.5Gi"))) == "1536Mi"
    assert str(Quantity("-50") * -50) == "2500"
    assert str(3 * Quantity("1Gi")) == "3Gi"
    assert str(Quantity("1Ei") * 1024) == "1180591620717411303424"  # past Ei: decimal
    assert str(Quantity(0) - Quantity(INT64_MIN) * 1) == "9223372036854775808"
    assert str(Quantity("0Ki") - Quantity("-4Ei") * 2) == "8Ei"  # 2^63, past parse's cap
    assert str(Quantity(10) - Quantity(INT64_MIN)) == "9223372036854775818"
    assert (Quantity(INT64_MAX) * 2).as_fraction() == 2 * INT64_MAX


def test_comparisons_and_hash() -> None:
    assert Quantity("10000T") > Quantity("100Gi")
    assert Quantity("100m") > Quantity("50m")
    assert Quantity("1") == Quantity("1000m") == 1
    assert Quantity("0") == 0
    assert Quantity("1Ki") == 1024
    assert Quantity("-1") < 0 <= Quantity("0")
    assert hash(Quantity("1")) == hash(Quantity("1000m")) == hash(1)
    assert len({Quantity("1Gi"), Quantity("1024Mi"), Quantity("1073741824")}) == 1
    assert Quantity("1") != "1"
    assert not Quantity("0")
    assert Quantity("1n")
    assert [Quantity("-1").sign(), Quantity("0").sign(), Quantity("1n").sign()] == [-1, 0, 1]
    assert Quantity("-0.0").is_zero()


def test_immutable_copies() -> None:
    q = Quantity("512Mi")
    assert copy.copy(q) is q
    assert copy.deepcopy(q) is q
    restored = pickle.loads(pickle.dumps(q))
    assert restored == q
    assert str(restored) == "512Mi"
    assert restored.format == "BinarySI"


# --- properties ---

_suffixes = st.sampled_from(
    ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
)
_exponents = st.integers(-30, 30).map(lambda e: f"e{e}") | st.integers(-30, 30).map(
    lambda e: f"E{e:+d}"
)


@st.composite
def quantity_strings(draw: st.DrawFn) -> str:
    sign = draw(st.sampled_from(["", "+", "-"]))
    whole = draw(st.text("0123456789", min_size=1, max_size=22))
    fraction = draw(st.none() | st.text("0123456789", max_size=14))
    suffix = draw(_suffixes | _exponents)
    return f"{sign}{whole}{'' if fraction is None else '.' + fraction}{suffix}"


quantities = st.one_of(
    quantity_strings().map(Quantity),
    st.integers(-(10**20), 10**20).map(Quantity),
    st.builds(
        Quantity.from_milli,
        st.integers(-(2**62), 2**62),
        st.sampled_from(["DecimalSI", "BinarySI", "DecimalExponent"]),
    ),
)


def _ceil_away(x: Fraction) -> int:
    magnitude = -(-abs(x.numerator) // x.denominator)
    return magnitude if x >= 0 else -magnitude


@given(quantities)
def test_string_round_trips_and_is_stable(q: Quantity) -> None:
    text = str(q)
    again = Quantity(text)
    assert again == q
    # Stable from the first parse on: a BinarySI amount that no binary suffix writes exactly
    # (29000) prints as a plain number, which parses as DecimalSI ("29k"), as in apimachinery.
    stable = str(again)
    assert Quantity(stable) == q
    assert str(Quantity(stable)) == stable
    assert canonical_quantity(stable) == stable
    if q.format != "BinarySI":
        assert stable == text


def test_a_binary_amount_without_an_exact_suffix_prints_plain_then_parses_as_decimal() -> None:
    q = Quantity.from_milli(29000 * 1000, "BinarySI")
    assert str(q) == "29000"
    assert str(Quantity(str(q))) == "29k"


_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


@given(quantity_strings())
def test_parse_is_exact_then_rounded_up_to_nano(text: str) -> None:
    split = re.fullmatch(r"([+-]?[0-9]*(?:\.[0-9]*)?)(.*)", text)
    assert split is not None
    number, suffix = split.groups()
    magnitude = abs(Fraction(number.rstrip(".")))
    if suffix in _BINARY:
        magnitude *= 2 ** _BINARY[suffix]
    else:
        magnitude *= Fraction(10) ** _DECIMAL.get(suffix, int(suffix[1:] or 0))
    magnitude = Fraction(-(-magnitude * 10**9 // 1), 10**9)  # up to the next nano
    if suffix in _BINARY:
        magnitude = min(magnitude, Fraction(INT64_MAX))
    assert Quantity(text).as_fraction() == (-magnitude if text[0] == "-" else magnitude)


@given(quantities, quantities)
def test_ordering_agrees_with_exact_values(a: Quantity, b: Quantity) -> None:
    x, y = a.as_fraction(), b.as_fraction()
    assert (a < b, a <= b, a == b, a >= b, a > b) == (x < y, x <= y, x == y, x >= y, x > y)
    if a == b:
        assert hash(a) == hash(b)


@given(quantities, quantities)
def test_addition_is_exact_and_cancels(a: Quantity, b: Quantity) -> None:
    assert (a + b).as_fraction() == a.as_fraction() + b.as_fraction()
    assert a + b - b == a
    assert -a + a == 0
    assert (a - a).is_zero()


@given(quantities)
def test_value_and_milli_value_round_away_from_zero_and_saturate(q: Quantity) -> None:
    x = q.as_fraction()
    assert q.value() == max(INT64_MIN, min(INT64_MAX, _ceil_away(x)))
    assert q.milli_value() == max(INT64_MIN, min(INT64_MAX, _ceil_away(x * 1000)))
    assert q.sign() == (x > 0) - (x < 0)

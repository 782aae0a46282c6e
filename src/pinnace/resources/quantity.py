"""Quantity: an exact fixed-point number with a unit suffix, as apimachinery's resource.Quantity.

Parsing, the serialised form and the arithmetic follow k8s.io/apimachinery/pkg/api/resource in
Kubernetes v1.32. Values are held as exact decimals (`decimal.Decimal` used only through an
unbounded context, never rounded implicitly), so an exponent such as `1e1000000000` costs a few
bytes, not a billion digits. No floats anywhere.

Deliberate differences from v1.32, each taken from a later upstream fix:
- an exponent outside [-(2**31 - 1), 2**31 - 1] is rejected (v1.32 wraps it to an unrelated
  value, or loops on it);
- a DecimalSI value whose exponent has no SI suffix (beyond E, below n) and a BinarySI value past
  Ei are written with an exponent (`1e21`) or in full, where v1.32 drops the magnitude ("1");
- value() and milli_value() saturate at the int64 bounds instead of overflowing.
"""

from __future__ import annotations

import re
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, ROUND_UP, Context, Decimal
from fractions import Fraction
from functools import lru_cache
from typing import Literal

__all__ = [
    "BINARY_SI",
    "DECIMAL_EXPONENT",
    "DECIMAL_SI",
    "ERR_FORMAT_WRONG",
    "ERR_NUMERIC",
    "ERR_SUFFIX",
    "Format",
    "Quantity",
    "QuantityError",
    "canonical_quantity",
]

Format = Literal["DecimalSI", "BinarySI", "DecimalExponent"]
DECIMAL_SI: Format = "DecimalSI"
BINARY_SI: Format = "BinarySI"
DECIMAL_EXPONENT: Format = "DecimalExponent"
_FORMATS: frozenset[str] = frozenset((DECIMAL_SI, BINARY_SI, DECIMAL_EXPONENT))

_SPLIT_RE = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$"
ERR_FORMAT_WRONG = f"quantities must match the regular expression '{_SPLIT_RE}'"
ERR_NUMERIC = "unable to parse numeric part of quantity"
ERR_SUFFIX = "unable to parse quantity's suffix"


class QuantityError(ValueError):
    """A string that is not a Quantity; `reason` is Kubernetes' wording."""

    def __init__(self, value: str, reason: str) -> None:
        super().__init__(f'invalid quantity "{value}": {reason}')
        self.value = value
        self.reason = reason


# Exact arithmetic: enough precision and exponent range that no operation ever rounds.
_EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN)
_NANO = Decimal("1e-9")
_INT64_MAX = 2**63 - 1
_INT64_MIN = -(2**63)
_INT32_MAX = 2**31 - 1
# The most a BinarySI quantity may hold when parsed (Kubernetes' maxAllowed).
_MAX_ALLOWED = Decimal(_INT64_MAX)

# suffix -> (base, exponent, format)
_SUFFIXES: dict[str, tuple[int, int, Format]] = {
    "n": (10, -9, DECIMAL_SI),
    "u": (10, -6, DECIMAL_SI),
    "m": (10, -3, DECIMAL_SI),
    "": (10, 0, DECIMAL_SI),
    "k": (10, 3, DECIMAL_SI),
    "M": (10, 6, DECIMAL_SI),
    "G": (10, 9, DECIMAL_SI),
    "T": (10, 12, DECIMAL_SI),
    "P": (10, 15, DECIMAL_SI),
    "E": (10, 18, DECIMAL_SI),
    "Ki": (2, 10, BINARY_SI),
    "Mi": (2, 20, BINARY_SI),
    "Gi": (2, 30, BINARY_SI),
    "Ti": (2, 40, BINARY_SI),
    "Pi": (2, 50, BINARY_SI),
    "Ei": (2, 60, BINARY_SI),
}
_DECIMAL_SUFFIX = {e: s for s, (b, e, _) in _SUFFIXES.items() if b == 10}
_BINARY_SUFFIX = ("", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei")  # by power of 1024

# The grammar ParseQuantity's scanner accepts: sign, digits, optional fraction, then suffix
# letters, an optional sign and digits. Anything else is ErrFormatWrong.
_GRAMMAR = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[+-]?[0-9]*)", re.ASCII)
_EXPONENT = re.compile(r"[+-]?0*([0-9]+)", re.ASCII)


class Quantity:
    """An immutable, exact quantity such as `100m`, `1.5Gi` or `1e3`.

    `Quantity("1.5Gi")` parses as resource.ParseQuantity; `Quantity(2)` is two whole units
    (DecimalSI). `str(q)` is the string kube-apiserver returns for it.
    """

    __slots__ = ("_amount", "_format", "_string")

    _amount: Decimal
    _format: Format
    _string: str | None

    def __new__(cls, value: str | int | Quantity) -> Quantity:
        if isinstance(value, Quantity):
            return value
        if isinstance(value, str):
            return _parse(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return _make(Decimal(value), DECIMAL_SI)
        raise TypeError(f"Quantity() takes a str or an int, not {type(value).__name__}")

    @classmethod
    def from_milli(cls, milli: int, format: Format = DECIMAL_SI) -> Quantity:
        """`milli` thousandths of a unit, as resource.NewMilliQuantity."""
        if format not in _FORMATS:
            raise ValueError(f"unknown quantity format {format!r}")
        return _make(Decimal(milli).scaleb(-3, _EXACT), format)

    @property
    def format(self) -> Format:
        return self._format

    def __str__(self) -> str:
        if self._string is None:
            self._string = _canonical(self._amount, self._format)
        return self._string

    def __repr__(self) -> str:
        return f'Quantity("{self}")'

    def value(self) -> int:
        """The value in whole units, rounded away from zero (Kubernetes' Value())."""
        return _scaled_value(self._amount, 0)

    def milli_value(self) -> int:
        """The value in thousandths, rounded away from zero (Kubernetes' MilliValue())."""
        return _scaled_value(self._amount, 3)

    def as_fraction(self) -> Fraction:
        return Fraction(self._amount)

    def sign(self) -> int:
        if self._amount.is_zero():
            return 0
        return -1 if self._amount.is_signed() else 1

    def is_zero(self) -> bool:
        return self._amount.is_zero()

    def __bool__(self) -> bool:
        return not self._amount.is_zero()

    # Comparison is by value only; the format plays no part.
    def __eq__(self, other: object) -> bool:
        amount = _amount_of(other)
        return NotImplemented if amount is None else self._amount == amount

    def __lt__(self, other: Quantity | int) -> bool:
        amount = _amount_of(other)
        return NotImplemented if amount is None else self._amount < amount

    def __le__(self, other: Quantity | int) -> bool:
        amount = _amount_of(other)
        return NotImplemented if amount is None else self._amount <= amount

    def __gt__(self, other: Quantity | int) -> bool:
        amount = _amount_of(other)
        return NotImplemented if amount is None else self._amount > amount

    def __ge__(self, other: Quantity | int) -> bool:
        amount = _amount_of(other)
        return NotImplemented if amount is None else self._amount >= amount

    def __hash__(self) -> int:
        # Decimal hashes equal numbers (ints, Fractions) alike.
        return hash(self._amount)

    # Arithmetic keeps the left operand's format unless it is zero, as Quantity.Add/Sub do.
    def __add__(self, other: Quantity | int) -> Quantity:
        right = _as_quantity(other)
        if right is None:
            return NotImplemented
        return _make(_EXACT.add(self._amount, right._amount), _result_format(self, right))

    def __radd__(self, other: int) -> Quantity:
        left = _as_quantity(other)
        return NotImplemented if left is None else left + self

    def __sub__(self, other: Quantity | int) -> Quantity:
        right = _as_quantity(other)
        if right is None:
            return NotImplemented
        return _make(_EXACT.subtract(self._amount, right._amount), _result_format(self, right))

    def __rsub__(self, other: int) -> Quantity:
        left = _as_quantity(other)
        return NotImplemented if left is None else left - self

    def __neg__(self) -> Quantity:
        return _make(self._amount.copy_negate(), self._format)

    def __abs__(self) -> Quantity:
        return self if not self._amount.is_signed() else -self

    def __mul__(self, other: int) -> Quantity:
        if not isinstance(other, int) or isinstance(other, bool):
            return NotImplemented
        return _make(_EXACT.multiply(self._amount, Decimal(other)), self._format)

    __rmul__ = __mul__

    # Instances are immutable: copies are the instance itself.
    def __copy__(self) -> Quantity:
        return self

    def __deepcopy__(self, memo: object) -> Quantity:
        return self

    def __reduce__(self) -> tuple[object, tuple[Decimal, Format, str | None]]:
        return _make, (self._amount, self._format, self._string)


def canonical_quantity(text: str) -> str:
    """The string kube-apiserver returns for the quantity `text`; raises QuantityError."""
    return str(_parse(text))


def _make(amount: Decimal, fmt: Format, string: str | None = None) -> Quantity:
    q = object.__new__(Quantity)
    q._amount = amount
    q._format = fmt
    q._string = string
    return q


def _amount_of(other: object) -> Decimal | None:
    if isinstance(other, Quantity):
        return other._amount
    if isinstance(other, int) and not isinstance(other, bool):
        return Decimal(other)
    return None


def _as_quantity(other: object) -> Quantity | None:
    if isinstance(other, Quantity):
        return other
    if isinstance(other, int) and not isinstance(other, bool):
        return _make(Decimal(other), DECIMAL_SI)
    return None


def _result_format(left: Quantity, right: Quantity) -> Format:
    return right._format if left._amount.is_zero() else left._format


@lru_cache(maxsize=65536)
def _parse(text: str) -> Quantity:
    if not text:
        raise QuantityError(text, ERR_FORMAT_WRONG)
    if text == "0":
        return _make(Decimal(0), DECIMAL_SI, "0")
    match = _GRAMMAR.fullmatch(text)
    if match is None:
        raise QuantityError(text, ERR_FORMAT_WRONG)
    sign, whole, fraction, suffix = match.groups()
    fraction = fraction or ""
    base, exponent, fmt = _interpret(text, suffix)
    negative = sign == "-"
    num = whole.lstrip("0") or "0"
    digits = num + fraction

    # Kubernetes parses short numbers into an int64 and everything else into a big decimal.
    # The values agree, but only the int64 path keeps the input as the serialised form when
    # it looks canonical, and only the big-decimal path can fail on a number with no digits.
    if base == 10:
        scale = exponent - len(fraction)
        if len(digits) <= 18 and scale >= -9:
            n = int(digits)
            amount = Decimal(f"{'-' if negative and n else ''}{n}E{scale}")
            keep = scale % 3 == 0 and not digits.endswith("000") and digits[0] != "0"
            return _make(amount, fmt, text if keep else None)
    elif not fraction and 14 - len(num) - 3 * exponent // 10 >= 0:
        n = int(num)
        amount = Decimal(-(n << exponent) if negative else n << exponent)
        return _make(amount, fmt, text if n & 7 else None)

    if not whole and not fraction:
        raise QuantityError(text, ERR_NUMERIC)
    amount = Decimal(f"{num}.{fraction}")
    if base == 10:
        amount = amount.scaleb(exponent, _EXACT)
    else:
        amount = _EXACT.multiply(amount, Decimal(1 << exponent))
    # Anything finer than 1n is rounded up to the next nano, so a tiny request is never zero.
    if not amount.is_zero() and _exponent(amount) < -9:
        amount = amount.quantize(_NANO, rounding=ROUND_UP, context=_EXACT)
    if fmt == BINARY_SI:
        if amount > _MAX_ALLOWED:
            amount = _MAX_ALLOWED
        elif 0 < amount < 1:
            fmt = DECIMAL_SI
    return _make(amount.copy_negate() if negative and amount else amount, fmt)


def _interpret(text: str, suffix: str) -> tuple[int, int, Format]:
    known = _SUFFIXES.get(suffix)
    if known is not None:
        return known
    if len(suffix) > 1 and suffix[0] in "eE":
        match = _EXPONENT.fullmatch(suffix, 1)
        if match is not None and len(match.group(1)) <= 10:
            exponent = int(suffix[1:])
            if -_INT32_MAX <= exponent <= _INT32_MAX:
                return 10, exponent, DECIMAL_EXPONENT
    raise QuantityError(text, ERR_SUFFIX)


def _canonical(amount: Decimal, fmt: Format) -> str:
    """Kubernetes' CanonicalizeBytes: no fraction digits, the largest suffix that is exact."""
    if amount.is_zero():
        return "0"
    normal = amount.normalize(_EXACT)
    if fmt == BINARY_SI:
        # Below 1Ki, or with a fraction, a binary quantity is written in decimal.
        if normal.copy_abs() >= 1024 and _exponent(normal) >= 0:
            n = int(normal)
            power = ((n & -n).bit_length() - 1) // 10
            if power < len(_BINARY_SUFFIX):
                return f"{n >> (10 * power)}{_BINARY_SUFFIX[power]}"
        fmt = DECIMAL_SI
    sign, digit_tuple, _ = normal.as_tuple()
    exponent = _exponent(normal)
    shift = exponent % 3
    mantissa = "".join(map(str, digit_tuple)) + "0" * shift
    exponent -= shift
    suffix = _DECIMAL_SUFFIX.get(exponent) if fmt == DECIMAL_SI else None
    if suffix is None:
        suffix = f"e{exponent}" if exponent else ""
    return f"{'-' if sign else ''}{mantissa}{suffix}"


def _exponent(amount: Decimal) -> int:
    exponent = amount.as_tuple().exponent
    assert isinstance(exponent, int)  # quantities are always finite
    return exponent


def _scaled_value(amount: Decimal, places: int) -> int:
    """ceil(|amount| * 10**places) with amount's sign, saturated to int64 (ScaledValue)."""
    if amount.is_zero():
        return 0
    if amount.adjusted() + places >= 19:
        return _INT64_MIN if amount.is_signed() else _INT64_MAX
    scaled = amount.scaleb(places, _EXACT).to_integral_value(rounding=ROUND_UP, context=_EXACT)
    return max(_INT64_MIN, min(_INT64_MAX, int(scaled)))

"""Go's time.ParseDuration (src/time/format.go), the one duration syntax Kubernetes reads, and
time.Duration's String, the one it writes (a metav1.Duration in JSON: "15s", "1m0s").

A duration is an optional sign and one or more decimal numbers, each with an optional fraction
and a unit: "300ms", "-1.5h", "2h45m", ".5s". The units are ns, us (or µs, μs), ms, s, m and h;
"0" alone needs none. Each fraction is added in float64 and truncated to a nanosecond, as Go
does, and a total beyond an int64 of nanoseconds is invalid. Errors have Go's wording.
"""

from __future__ import annotations

_UNITS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 micro sign
    "μs": 1_000,  # U+03BC Greek small letter mu
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_DIGITS = "0123456789"
_LIMIT = 1 << 63


def parse_duration(text: str) -> int:
    """`text` in nanoseconds; ValueError with Go's message when it is not a duration."""
    invalid = ValueError(f"time: invalid duration {_quote(text)}")
    rest = text
    negative = rest[:1] == "-"
    if rest[:1] in ("-", "+"):
        rest = rest[1:]
    if rest == "0":
        return 0
    if not rest:
        raise invalid
    total = 0
    while rest:
        if rest[0] != "." and rest[0] not in _DIGITS:
            raise invalid
        whole, after = _leading_int(rest)
        if whole is None:
            raise invalid
        digits_before = len(after) != len(rest)
        fraction, scale, digits_after = 0, 1.0, False
        if after[:1] == ".":
            fraction, scale, remainder = _leading_fraction(after[1:])
            digits_after = len(remainder) != len(after) - 1
            after = remainder
        if not digits_before and not digits_after:
            raise invalid
        unit, rest = _leading_unit(after)
        if not unit:
            raise ValueError(f"time: missing unit in duration {_quote(text)}")
        if unit not in _UNITS:
            raise ValueError(f"time: unknown unit {_quote(unit)} in duration {_quote(text)}")
        nanos = _part(whole, fraction, scale, _UNITS[unit])
        if nanos is None:
            raise invalid
        total += nanos
        if total > _LIMIT:
            raise invalid
    if negative:
        return -total
    if total > _LIMIT - 1:
        raise invalid
    return total


def format_duration(nanos: int) -> str:
    """`nanos` as Go's Duration.String writes it: "0s", "750ms", "1.5s", "2m0s", "1h0m0s"."""
    if nanos == 0:
        return "0s"
    sign, size = ("-" if nanos < 0 else ""), abs(nanos)
    if size < 1_000:
        return f"{sign}{size}ns"
    if size < 1_000_000:
        return f"{sign}{_decimal(size, 1_000)}µs"
    if size < 1_000_000_000:
        return f"{sign}{_decimal(size, 1_000_000)}ms"
    minutes, rest = divmod(size, 60_000_000_000)
    hours, minutes = divmod(minutes, 60)
    text = _decimal(rest, 1_000_000_000) + "s"
    if minutes or hours:
        text = f"{minutes}m{text}"
    if hours:
        text = f"{hours}h{text}"
    return sign + text


def _decimal(value: int, unit: int) -> str:
    """value / unit in decimal, without trailing zeros."""
    whole, fraction = divmod(value, unit)
    if not fraction:
        return str(whole)
    digits = str(fraction).rjust(len(str(unit)) - 1, "0").rstrip("0")
    return f"{whole}.{digits}"


def _part(whole: int, fraction: int, scale: float, unit: int) -> int | None:
    """One number times its unit in nanoseconds; None on overflow."""
    if whole > _LIMIT // unit:
        return None
    nanos = whole * unit
    if fraction > 0:
        # float64 keeps a fraction of an hour nanosecond-accurate, as in Go
        nanos += int(float(fraction) * (float(unit) / scale))
        if nanos > _LIMIT:
            return None
    return nanos


def _leading_int(text: str) -> tuple[int | None, str]:
    """The leading digits' value (None past 2**63) and what follows them."""
    value = 0
    i = 0
    while i < len(text) and text[i] in _DIGITS:
        value = value * 10 + _DIGITS.index(text[i])
        if value > _LIMIT:
            return None, text
        i += 1
    return value, text[i:]


def _leading_fraction(text: str) -> tuple[int, float, str]:
    """The leading digits as an integer and the power of ten that divides it; digits that
    would overflow are consumed but ignored."""
    value, scale = 0, 1.0
    i = 0
    overflow = False
    while i < len(text) and text[i] in _DIGITS:
        following = value * 10 + _DIGITS.index(text[i])
        if not overflow and value <= (_LIMIT - 1) // 10 and following <= _LIMIT:
            value, scale = following, scale * 10
        else:
            overflow = True
        i += 1
    return value, scale, text[i:]


def _leading_unit(text: str) -> tuple[str, str]:
    i = 0
    while i < len(text) and text[i] != "." and text[i] not in _DIGITS:
        i += 1
    return text[:i], text[i:]


def _quote(text: str) -> str:
    """Go's time.quote: double quotes, a backslash before " and \\, and the UTF-8 bytes of
    anything not printable ASCII as \\x escapes."""
    out: list[str] = []
    for c in text:
        if c < " " or c >= "\x80":
            out.extend(f"\\x{b:02x}" for b in c.encode("utf-8", "surrogatepass"))
        elif c in '"\\':
            out.append("\\" + c)
        else:
            out.append(c)
    return '"' + "".join(out) + '"'

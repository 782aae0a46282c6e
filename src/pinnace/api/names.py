"""String format checks for names, keys and values, worded as apimachinery's util/validation.

Each `is_*` function returns the list of problems with a value (empty when valid); callers
wrap each message in a field error (`field.invalid(path, value, message)`).
Lengths are counted in UTF-8 bytes, as Go's `len` does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache, wraps
from random import Random

DNS1123_LABEL_MAX_LENGTH = 63
DNS1123_SUBDOMAIN_MAX_LENGTH = 253
DNS1035_LABEL_MAX_LENGTH = 63
QUALIFIED_NAME_MAX_LENGTH = 63
LABEL_VALUE_MAX_LENGTH = 63
PORT_NAME_MAX_LENGTH = 15
MIN_PORT = 1
MAX_PORT = 65535


def max_len_error(length: int) -> str:
    return f"must be no more than {length} characters"


def regex_error(message: str, fmt: str, *examples: str) -> str:
    """`<message> (e.g. 'a' or 'b', regex used for validation is '<fmt>')`."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{message} (e.g. {shown}regex used for validation is '{fmt}')"


def empty_error() -> str:
    return "must be non-empty"


def inclusive_range_error(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


def _remembered(check: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    """`check` answering from memory for strings it has seen: the same names and keys recur
    in every object. Each call still gets a list of its own."""
    known = lru_cache(maxsize=4096)(lambda value: tuple(check(value)))

    @wraps(check)
    def remembered(value: str) -> list[str]:
        return list(known(value)) if type(value) is str else check(value)

    return remembered


def _byte_len(value: str) -> int:
    return len(value.encode("utf-8", "surrogatepass"))


_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
# The patterns matched are the formats' own languages, written without their backtracking (a
# run of alphanumerics, then runs of dashes each followed by one): names are checked by the
# thousand. `test_names` holds them to the formats.
_DNS1123_LABEL = re.compile("[a-z0-9]+(?:-+[a-z0-9]+)*")

_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + r"(\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]+(?:(?:-+|\.)[a-z0-9]+)*")
"""Labels parted by single dots: alphanumeric runs parted by dashes or by one dot."""

_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
    "start with an alphabetic character, and end with an alphanumeric character"
)
_DNS1035_LABEL = re.compile("[a-z][a-z0-9]*(?:-+[a-z0-9]+)*")


@_remembered
def is_dns1123_label(value: str) -> list[str]:
    errs = []
    if _byte_len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not _DNS1123_LABEL.fullmatch(value):
        if _DNS1123_SUBDOMAIN.fullmatch(value):
            # A good subdomain that is not a good label can only be failing on its dots.
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_good_dns1123_label(value: str) -> bool:
    """Whether `is_dns1123_label(value)` finds nothing, worked out without remembering
    `value`: for a string seen once (a pod's name, its generated volume's), which would only
    push the recurring ones out of that memory, and costs more to remember than to check."""
    return len(value) <= DNS1123_LABEL_MAX_LENGTH and _DNS1123_LABEL.fullmatch(value) is not None


@_remembered
def is_dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if _byte_len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_good_dns1123_subdomain(value: str) -> bool:
    """Whether `is_dns1123_subdomain(value)` finds nothing, worked out without remembering
    `value` (see `is_good_dns1123_label`): for a name seen once, as a generated pod name."""
    return (
        len(value) <= DNS1123_SUBDOMAIN_MAX_LENGTH
        and _DNS1123_SUBDOMAIN.fullmatch(value) is not None
    )


def is_dns1035_label(value: str) -> list[str]:
    errs = []
    if _byte_len(value) > DNS1035_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1035_LABEL_MAX_LENGTH))
    if not _DNS1035_LABEL.fullmatch(value):
        errs.append(regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


_QUALIFIED_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED_NAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_QUALIFIED_NAME = re.compile(_QUALIFIED_NAME_FMT)
_QUALIFIED_NAME_EXAMPLES = ("MyName", "my.name", "123-abc")


@_remembered
def is_qualified_name(value: str) -> list[str]:
    """A label or annotation key: `name` or `dns-subdomain-prefix/name`."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part " + empty_error())
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return [
            "a qualified name "
            + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, *_QUALIFIED_NAME_EXAMPLES)
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part " + empty_error())
    elif _byte_len(name) > QUALIFIED_NAME_MAX_LENGTH:
        errs.append("name part " + max_len_error(QUALIFIED_NAME_MAX_LENGTH))
    if not _QUALIFIED_NAME.fullmatch(name):
        errs.append(
            "name part "
            + regex_error(_QUALIFIED_NAME_MSG, _QUALIFIED_NAME_FMT, *_QUALIFIED_NAME_EXAMPLES)
        )
    return errs


_LABEL_VALUE_FMT = "(" + _QUALIFIED_NAME_FMT + ")?"
_LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, "
    "'-', '_' or '.', and must start and end with an alphanumeric character"
)
_LABEL_VALUE = re.compile(_LABEL_VALUE_FMT)


@_remembered
def is_valid_label_value(value: str) -> list[str]:
    errs = []
    if _byte_len(value) > LABEL_VALUE_MAX_LENGTH:
        errs.append(max_len_error(LABEL_VALUE_MAX_LENGTH))
    if not _LABEL_VALUE.fullmatch(value):
        errs.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


_PORT_NAME_CHARSET = re.compile("[-a-z0-9]+")
_PORT_NAME_LETTER = re.compile("[a-z]")


def is_valid_port_name(port: str) -> list[str]:
    """An IANA_SVC_NAME (RFC 6335), lower case only."""
    errs = []
    if _byte_len(port) > PORT_NAME_MAX_LENGTH:
        errs.append(max_len_error(PORT_NAME_MAX_LENGTH))
    if not _PORT_NAME_CHARSET.fullmatch(port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _PORT_NAME_LETTER.search(port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def is_valid_port_num(port: int) -> list[str]:
    if MIN_PORT <= port <= MAX_PORT:
        return []
    return [inclusive_range_error(MIN_PORT, MAX_PORT)]


_C_IDENTIFIER_FMT = "[A-Za-z_][A-Za-z0-9_]*"
_C_IDENTIFIER_MSG = (
    "a valid C identifier must start with alphabetic character or '_', "
    "followed by a string of alphanumeric characters or '_'"
)
_C_IDENTIFIER = re.compile(_C_IDENTIFIER_FMT)


def is_c_identifier(value: str) -> list[str]:
    if _C_IDENTIFIER.fullmatch(value):
        return []
    return [regex_error(_C_IDENTIFIER_MSG, _C_IDENTIFIER_FMT, "my_name", "MY_NAME", "MyName")]


def _chdir_prefix_errors(value: str) -> list[str]:
    if value == ".":
        return ["must not be '.'"]
    if value == "..":
        return ["must not be '..'"]
    if value.startswith(".."):
        return ["must not start with '..'"]
    return []


_ENV_VAR_NAME_FMT = "[-._a-zA-Z][-._a-zA-Z0-9]*"
_ENV_VAR_NAME_MSG = (
    "a valid environment variable name must consist of alphabetic characters, digits, "
    "'_', '-', or '.', and must not start with a digit"
)
_ENV_VAR_NAME = re.compile(_ENV_VAR_NAME_FMT)
_RELAXED_ENV_VAR_NAME_MSG = (
    "a valid environment variable name must consist only of printable ASCII characters "
    "other than '='"
)


def is_env_var_name(value: str, relaxed: bool = True) -> list[str]:
    """An environment variable name.

    Kubernetes v1.32 turns the RelaxedEnvironmentVariableValidation gate on by default (beta),
    so any printable ASCII but '=' is accepted; `relaxed=False` gives the strict rule.
    """
    if relaxed:
        errs = []
        if not value:
            errs.append("environment variable name " + empty_error())
        if any(not (" " <= ch <= "~") or ch == "=" for ch in value):
            errs.append(_RELAXED_ENV_VAR_NAME_MSG)
        return errs
    errs = []
    if not _ENV_VAR_NAME.fullmatch(value):
        errs.append(
            regex_error(
                _ENV_VAR_NAME_MSG, _ENV_VAR_NAME_FMT, "my.env-name", "MY_ENV.NAME", "MyEnvName1"
            )
        )
    return errs + _chdir_prefix_errors(value)


_CONFIG_MAP_KEY_FMT = "[-._a-zA-Z0-9]+"
_CONFIG_MAP_KEY_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
_CONFIG_MAP_KEY = re.compile(_CONFIG_MAP_KEY_FMT)


def is_config_map_key(value: str) -> list[str]:
    """A key of a ConfigMap's or Secret's data."""
    errs = []
    if _byte_len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _CONFIG_MAP_KEY.fullmatch(value):
        errs.append(
            regex_error(
                _CONFIG_MAP_KEY_MSG, _CONFIG_MAP_KEY_FMT, "key.name", "KEY_NAME", "key-name"
            )
        )
    return errs + _chdir_prefix_errors(value)


_PERCENT_FMT = "[0-9]+%"
_PERCENT_MSG = "a valid percent string must be a numeric string followed by an ending '%'"
_PERCENT = re.compile(_PERCENT_FMT)


def is_valid_percent(percent: str) -> list[str]:
    if _PERCENT.fullmatch(percent):
        return []
    return [regex_error(_PERCENT_MSG, _PERCENT_FMT, "1%", "93%")]


NAME_SUFFIX_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""utilrand's alphabet: no vowels (no words) and no look-alike characters."""
GENERATE_NAME_MAX_BASE = 58
"""names.SimpleNameGenerator's maxGeneratedNameLength: how much of a generateName a generated
name keeps, before its 5-character suffix."""


_SUFFIX_BITS = len(NAME_SUFFIX_ALPHABET).bit_length()


def random_suffix(random: Random, length: int = 5) -> str:
    """utilrand.String(length), as names.SimpleNameGenerator appends to a generateName.

    The characters are those `random.choice` would draw, from the same bits (every create
    of a pod draws one, for its service account token's volume): `choice` draws
    `len(alphabet).bit_length()` bits until they index the alphabet."""
    draw = random.getrandbits
    alphabet, n = NAME_SUFFIX_ALPHABET, len(NAME_SUFFIX_ALPHABET)
    chars = []
    for _ in range(length):
        i = draw(_SUFFIX_BITS)
        while i >= n:
            i = draw(_SUFFIX_BITS)
        chars.append(alphabet[i])
    return "".join(chars)

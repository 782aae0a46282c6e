"""Reading request bodies: the 3 MiB limit (413), then JSON or YAML into plain objects, with
kube-apiserver's wording for bodies that do not parse (400)."""

from __future__ import annotations

import base64
import math
from collections.abc import Awaitable, Callable, Hashable
from typing import Any, NamedTuple

import yaml

from pinnace.api import status
from pinnace.api.decode import NO_REPEATS, Repeats
from pinnace.api.goquote import quote
from pinnace.api.status import StatusError
from pinnace.apiserver.http import gojson, protobuf
from pinnace.apiserver.http.negotiation import BodyType

MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024
"""kube-apiserver's MaxRequestBodyBytes."""

Receive = Callable[[], Awaitable[dict[str, Any]]]


class ClientDisconnected(Exception):
    """The client went away before it sent the whole body."""


async def read_body(receive: Receive, content_length: str | None) -> bytes:
    limit = MAX_REQUEST_BODY_BYTES
    if content_length is not None and content_length.isdigit() and int(content_length) > limit:
        raise status.request_entity_too_large(limit)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnected
        chunk = message.get("body", b"")
        if chunk:
            size += len(chunk)
            if size > limit:
                raise status.request_entity_too_large(limit)
            chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks) if len(chunks) != 1 else chunks[0]


def summarize(data: bytes, max_length: int = 30) -> str:
    """apiserver's summarizeData: the start of a body, as text for objects, else as hex."""
    if not data:
        return "<empty>"
    if data[:1] == b"{":
        text = data[:max_length].decode("utf-8", "replace")
        return text + " ..." if len(data) > max_length else text
    shown = data[:max_length].hex()
    return shown + " ..." if len(data) > max_length else shown


def parse_object_body(data: bytes, body_type: BodyType, kind_name: str) -> Any:
    """A create or update body (JSON or YAML) as a plain value; the kind's decoder checks its
    shape. A body that does not parse answers as kube-apiserver's transformDecodeError."""
    return _parse_object_body(data, body_type, kind_name)[0]


def _parse_object_body(data: bytes, body_type: BodyType, kind_name: str) -> tuple[Any, str]:
    """`parse_object_body`'s value, and for YAML the error of the keys it repeats."""
    if body_type is BodyType.PROTOBUF:
        return protobuf.decode(data), ""
    try:
        if body_type is BodyType.YAML:
            return yaml_to_json_strict(data)
        return gojson.loads(data), ""
    except (gojson.JSONSyntaxError, YAMLError) as e:
        reason = str(e)
        if isinstance(e, gojson.JSONSyntaxError):
            reason = f"couldn't get version/kind; json parse error: {reason}"
        raise status.bad_request(
            f"the object provided is unrecognized (must be of type {kind_name}): "
            f"{reason} ({summarize(data)})"
        ) from None


class WrittenBody(NamedTuple):
    value: Any
    repeats: Repeats
    """The fields its JSON text repeats (`gojson.duplicate_fields`), or the error of the keys
    its YAML text repeats, as sigs.k8s.io/yaml's YAMLToJSONStrict words it (`yaml: unmarshal
    errors:` and a line for each)."""


def parse_written_body(
    data: bytes, body_type: BodyType, kind_name: str, find_duplicates: bool
) -> WrittenBody:
    """A create or update body as `parse_object_body` reads it, with the fields its JSON or
    YAML text repeats when `find_duplicates` (field validation Strict or Warn: kube-apiserver's
    strict decoder reports them)."""
    value, yaml_duplicates = _parse_object_body(data, body_type, kind_name)
    if find_duplicates and yaml_duplicates:
        return WrittenBody(value, Repeats(yaml=yaml_duplicates))
    if not find_duplicates or body_type is not BodyType.JSON:
        return WrittenBody(value, NO_REPEATS)
    return WrittenBody(value, Repeats(gojson.duplicate_fields(data, value)))


def parse_json(data: bytes, content_type: str = "") -> Any:
    """A JSON body of options or a subresource (DeleteOptions, Eviction) as a plain value;
    protobuf too when `content_type` says so."""
    if content_type.split(";", 1)[0].strip() == protobuf.CONTENT_TYPE:
        return protobuf.decode(data)
    try:
        return gojson.loads(data)
    except gojson.JSONSyntaxError as e:
        raise status.bad_request(str(e)) from None


class YAMLError(ValueError):
    """A YAML body that does not parse; the message is shaped as sigs.k8s.io/yaml's."""


try:
    _SafeLoader: type = yaml.CSafeLoader  # libyaml's parser: several times faster
except AttributeError:  # PyYAML without libyaml
    _SafeLoader = yaml.SafeLoader

# YAML 1.1 as go-yaml reads it into JSON: timestamps stay strings.
_Loader: Any = type(
    "_Loader",
    (_SafeLoader,),
    {
        "yaml_implicit_resolvers": {
            first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
            for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
        }
    },
)
_INT_RANGE = range(-(2**63), 2**64)  # go-yaml's int64, then uint64


def _integer(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> int | float | str:
    """An integer as go-yaml resolves one: exact within int64 or uint64, else a float64, or
    the text itself when no float64 holds it."""
    text = loader.construct_scalar(node)
    digits = text.replace("_", "").lstrip("+-")
    if len(digits) <= 24:  # far below Python's limit on converting digits
        number = yaml.SafeLoader.construct_yaml_int(loader, node)
        if number in _INT_RANGE:
            return int(number)
    return _float_or_text(text)


def _float(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> float | str:
    text = loader.construct_scalar(node)
    number = yaml.SafeLoader.construct_yaml_float(loader, node)
    return number if math.isfinite(number) or text.lstrip("+-").startswith(".") else text


def _float_or_text(text: str) -> float | str:
    try:
        number = float(text.replace("_", ""))
    except ValueError:  # hexadecimal, octal, binary or sexagesimal
        return text
    return number if math.isfinite(number) else text


def _construct_mapping(loader: Any, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    """SafeConstructor's mapping, noting the keys it gives twice: it holds fewer keys than
    the node has pairs only then (or with a merge key), which one comparison tells."""
    mapping: dict[Any, Any] = yaml.SafeLoader.construct_mapping(loader, node, deep)
    if len(mapping) != len(node.value):
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = loader.construct_object(key_node, deep=True)
            if isinstance(key, Hashable):
                if key in seen:
                    loader.repeats.append((value_node.start_mark.line + 1, key))
                seen.add(key)
    return mapping


def _repeats_error(loader: Any) -> str:
    """sigs.k8s.io/yaml's (go-yaml v2's) strict error: a line per repeated key, in document
    order, numbered by where its value starts, the key as Go's %#v prints it."""
    repeats = loader.repeats
    if not repeats:
        return ""
    lines = [
        f"line {line}: key {quote(key) if isinstance(key, str) else _key(key)} already set in map"
        for line, key in sorted(repeats, key=lambda repeat: repeat[0])
    ]
    return "yaml: unmarshal errors:\n  " + "\n  ".join(lines)


_Loader.construct_mapping = _construct_mapping
_Loader.add_constructor("tag:yaml.org,2002:int", _integer)
_Loader.add_constructor("tag:yaml.org,2002:float", _float)


def yaml_to_json_strict(data: bytes) -> tuple[Any, str]:
    """The first YAML document as JSON values (map keys become strings, as YAMLToJSON does),
    and the error YAMLToJSONStrict gives for the keys the document repeats ("" when none).

    Aliases are expanded, up to a budget that a document without them never reaches (one
    value per byte, and some), so a "billion laughs" body is refused instead of eating the
    server; nesting too deep to walk is refused too."""
    try:
        loader = _Loader(data)
        loader.repeats = []
        try:
            value = loader.get_data() if loader.check_data() else None
        finally:
            loader.dispose()
        return _JSONValues(4 * len(data) + 10_000).convert(value), _repeats_error(loader)
    except yaml.MarkedYAMLError as e:
        if e.problem == _LIBYAML_TOO_DEEP:
            raise YAMLError(_TOO_DEEP) from None
        mark = e.problem_mark
        line = f"line {mark.line + 1}: " if mark is not None else ""
        raise YAMLError(f"error converting YAML to JSON: yaml: {line}{e.problem}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise YAMLError(f"error converting YAML to JSON: yaml: {e}") from None
    except RecursionError:
        raise YAMLError(_TOO_DEEP) from None


_LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"
_TOO_DEEP = "error converting YAML to JSON: yaml: exceeded max depth"


class _JSONValues:
    def __init__(self, budget: int) -> None:
        self.budget = budget

    def convert(self, value: Any) -> Any:
        self.budget -= 1
        if self.budget < 0:
            raise YAMLError(
                "error converting YAML to JSON: yaml: document contains excessive aliasing"
            )
        if isinstance(value, dict):
            return {_key(k): self.convert(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.convert(v) for v in value]
        if isinstance(value, bytes):
            return base64.b64encode(value).decode()
        return value


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if key is None:
        return "null"
    return str(key)


__all__ = [
    "MAX_REQUEST_BODY_BYTES",
    "ClientDisconnected",
    "StatusError",
    "WrittenBody",
    "YAMLError",
    "parse_json",
    "parse_object_body",
    "parse_written_body",
    "read_body",
    "summarize",
    "yaml_to_json_strict",
]

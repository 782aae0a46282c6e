"""/openapi/v2 in its protobuf form: the Swagger 2.0 document as gnostic's `openapi.v2.Document`
message, the form client-go's OpenAPISchema asks for (and nothing else).

kubectl reads it for `explain --output=plaintext-openapiv2` and, when a manifest's kind is
missing from OpenAPI v3, to decide how to validate it. Vendor extensions travel as YAML text,
as kube-openapi writes them. Only the Swagger keys Pinnace's document uses are encoded; any
other key is an error, so the two forms cannot drift apart silently.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import cache
from typing import Any

import yaml

from pinnace.api.openapi import openapi_v2
from pinnace.api.openapi.documents import PublishedDocuments

MEDIA_TYPES = (
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
)
"""What clients ask for; the first is also the answer's Content-Type (client-go parses it, and
the second is not a valid media type)."""

_VARINT, _BYTES = 0, 2


@cache
def openapi_v2_protobuf() -> bytes:
    return document(openapi_v2())


class PublishedProtobuf:
    """The protobuf form of the /openapi/v2 one server publishes, encoded again when it
    changes."""

    def __init__(self, documents: PublishedDocuments) -> None:
        self._documents = documents
        self._generation = -1
        self._encoded = b""

    def v2(self) -> bytes:
        generation = self._documents.generation
        if generation != self._generation:
            self._generation = generation
            v2 = self._documents.v2()
            self._encoded = openapi_v2_protobuf() if v2 is openapi_v2() else document(v2)
        return self._encoded


def document(doc: dict[str, Any]) -> bytes:
    return _message(
        doc,
        {
            "swagger": (1, _string),
            "info": (2, _sub({"title": (1, _string), "version": (2, _string)})),
            "paths": (8, _paths),
            "definitions": (9, _named_map(1, _schema)),
            "security": (12, _repeated(_named_map(1, _string_array))),
            "securityDefinitions": (13, _named_map(1, _security_definition)),
        },
    )


# --- the wire format ----------------------------------------------------------------------------


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _tag(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _length_delimited(field: int, data: bytes) -> bytes:
    return _tag(field, _BYTES) + _varint(len(data)) + data


Encoder = Callable[[int, Any], bytes]
Fields = dict[str, tuple[int, Encoder]]


def _string(field: int, value: str) -> bytes:
    return _length_delimited(field, value.encode()) if value else b""


def _bool(field: int, value: bool) -> bytes:
    return _tag(field, _VARINT) + b"\x01" if value else b""


def _repeated(encode: Encoder) -> Encoder:
    def each(field: int, values: Iterable[Any]) -> bytes:
        return b"".join(encode(field, v) for v in values)

    return each


def _strings(field: int, values: Iterable[str]) -> bytes:
    # Repeated strings are sent even when empty, unlike a singular one.
    return b"".join(_length_delimited(field, v.encode()) for v in values)


def _message(value: dict[str, Any], fields: Fields, extensions: int = 0) -> bytes:
    out = []
    for key, item in value.items():
        if key.startswith("x-") and extensions:
            named = _string(1, key) + _length_delimited(2, _string(2, _yaml(item)))
            out.append(_length_delimited(extensions, named))
            continue
        if key not in fields:
            raise ValueError(f"no protobuf field for OpenAPI v2 key {key!r}")
        number, encode = fields[key]
        out.append(encode(number, item))
    return b"".join(out)


def _sub(fields: Fields, extensions: int = 0) -> Encoder:
    def encode(field: int, value: dict[str, Any]) -> bytes:
        return _length_delimited(field, _message(value, fields, extensions))

    return encode


def _named_map(entries: int, encode_value: Encoder) -> Encoder:
    """A JSON object as gnostic's ordered (name, value) pairs in field `entries`."""

    def encode(field: int, value: dict[str, Any]) -> bytes:
        pairs = b"".join(
            _length_delimited(entries, _string(1, name) + encode_value(2, item))
            for name, item in value.items()
        )
        return _length_delimited(field, pairs)

    return encode


def _yaml(value: Any) -> str:
    text = yaml.safe_dump(value, default_flow_style=False, sort_keys=False)
    # PyYAML ends a lone scalar with a document end marker; Go's YAML writer does not.
    return text.removesuffix("...\n")


# --- the messages -------------------------------------------------------------------------------


def _schema(field: int, value: dict[str, Any]) -> bytes:
    return _length_delimited(field, _message(value, _SCHEMA_FIELDS, extensions=31))


def _type_item(field: int, value: str | list[str]) -> bytes:
    return _length_delimited(field, _strings(1, [value] if isinstance(value, str) else value))


def _items(field: int, value: dict[str, Any]) -> bytes:
    return _length_delimited(field, _schema(1, value))


def _additional_properties(field: int, value: dict[str, Any] | bool) -> bytes:
    if isinstance(value, bool):
        return _length_delimited(field, _tag(2, _VARINT) + (b"\x01" if value else b"\x00"))
    return _length_delimited(field, _schema(1, value))


_SCHEMA_FIELDS: Fields = {
    "$ref": (1, _string),
    "format": (2, _string),
    "description": (4, _string),
    "required": (19, _strings),
    "additionalProperties": (21, _additional_properties),
    "type": (22, _type_item),
    "items": (23, _items),
    "properties": (25, _named_map(1, _schema)),
}

_NON_BODY_PARAMETER = {"query": 3, "path": 4}
_NON_BODY_FIELDS: dict[str, Fields] = {
    "query": {
        "required": (1, _bool),
        "in": (2, _string),
        "description": (3, _string),
        "name": (4, _string),
        "type": (6, _string),
        "format": (7, _string),
        "uniqueItems": (20, _bool),
    },
    "path": {
        "required": (1, _bool),
        "in": (2, _string),
        "description": (3, _string),
        "name": (4, _string),
        "type": (5, _string),
        "format": (6, _string),
        "uniqueItems": (19, _bool),
    },
}
_BODY_FIELDS: Fields = {
    "description": (1, _string),
    "name": (2, _string),
    "in": (3, _string),
    "required": (4, _bool),
    "schema": (5, _schema),
}


def _parameter(field: int, value: dict[str, Any]) -> bytes:
    """A ParametersItem holding a Parameter: a body one, or a query or path one."""
    where = value.get("in")
    if where == "body":
        parameter = _length_delimited(1, _message(value, _BODY_FIELDS, extensions=6))
    elif where in _NON_BODY_PARAMETER:
        fields = _NON_BODY_FIELDS[where]
        sub = _length_delimited(_NON_BODY_PARAMETER[where], _message(value, fields, 23))
        parameter = _length_delimited(2, sub)
    else:
        raise ValueError(f"no protobuf form for a parameter in {where!r}")
    return _length_delimited(field, _length_delimited(1, parameter))


def _response(field: int, value: dict[str, Any]) -> bytes:
    """A ResponseValue holding a Response, whose schema is a SchemaItem."""
    fields: Fields = {
        "description": (1, _string),
        "schema": (2, lambda n, s: _length_delimited(n, _schema(1, s))),
    }
    return _length_delimited(field, _length_delimited(1, _message(value, fields, 5)))


_OPERATION = _sub(
    {
        "tags": (1, _strings),
        "description": (3, _string),
        "operationId": (5, _string),
        "produces": (6, _strings),
        "consumes": (7, _strings),
        "parameters": (8, _repeated(_parameter)),
        "responses": (9, _named_map(1, _response)),
        "schemes": (10, _strings),
    },
    extensions=13,
)

_PATH_ITEM = _sub(
    {
        "get": (2, _OPERATION),
        "put": (3, _OPERATION),
        "post": (4, _OPERATION),
        "delete": (5, _OPERATION),
        "patch": (8, _OPERATION),
        "parameters": (9, _repeated(_parameter)),
    },
    extensions=10,
)


def _paths(field: int, value: dict[str, Any]) -> bytes:
    return _named_map(2, _PATH_ITEM)(field, value)


def _string_array(field: int, value: list[str]) -> bytes:
    return _length_delimited(field, _strings(1, value))


def _security_definition(field: int, value: dict[str, Any]) -> bytes:
    """A SecurityDefinitionsItem; Pinnace describes bearer tokens, an apiKey scheme."""
    if value.get("type") != "apiKey":
        raise ValueError(f"no protobuf form for a {value.get('type')!r} security scheme")
    fields: Fields = {
        "type": (1, _string),
        "name": (2, _string),
        "in": (3, _string),
        "description": (4, _string),
    }
    return _length_delimited(field, _length_delimited(2, _message(value, fields, 5)))

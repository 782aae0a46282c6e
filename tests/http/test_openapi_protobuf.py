"""/openapi/v2's protobuf form, byte for byte on small documents (gnostic's field numbers)."""

from __future__ import annotations

import pytest

from pinnace.apiserver.http.openapi_protobuf import document


def test_header_fields() -> None:
    encoded = document({"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.32.0"}})
    assert encoded == b"\x0a\x032.0" + b"\x12\x15" + b"\x0a\x0aKubernetes" + b"\x12\x07v1.32.0"


def test_a_definition_with_a_vendor_extension() -> None:
    doc = {"definitions": {"a.B": {"type": "object", "x-kubernetes-map-type": "atomic"}}}
    extension = b"\x0a\x15x-kubernetes-map-type" + b"\x12\x09" + b"\x12\x07atomic\n"
    schema = b"\xb2\x01\x08\x0a\x06object" + b"\xfa\x01" + bytes([len(extension)]) + extension
    named = b"\x0a\x03a.B" + b"\x12" + bytes([len(schema)]) + schema
    definitions = b"\x0a" + bytes([len(named)]) + named
    assert document(doc) == b"\x4a" + bytes([len(definitions)]) + definitions


def test_a_query_parameter() -> None:
    operation = {"parameters": [{"in": "query", "name": "limit", "type": "integer"}]}
    query = b"\x12\x05query" + b"\x22\x05limit" + b"\x32\x07integer"
    parameter = b"\x12" + bytes([len(query) + 2]) + b"\x1a" + bytes([len(query)]) + query
    item = b"\x0a" + bytes([len(parameter)]) + parameter
    op = b"\x42" + bytes([len(item)]) + item
    path_item = b"\x12" + bytes([len(op)]) + op
    named = b"\x0a\x02/x" + b"\x12" + bytes([len(path_item)]) + path_item
    paths = b"\x12" + bytes([len(named)]) + named
    assert document({"paths": {"/x": {"get": operation}}}) == b"\x42" + bytes([len(paths)]) + paths


def test_a_key_without_a_protobuf_field_is_an_error() -> None:
    with pytest.raises(ValueError, match="no protobuf field for OpenAPI v2 key 'host'"):
        document({"swagger": "2.0", "host": "example.com"})

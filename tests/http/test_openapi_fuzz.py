"""A property-based run over /openapi/v2, as schemathesis runs one: every POST, PUT and PATCH the
document describes is sent bodies that parse but are malformed (each field its schema names given
a value of the right shape or of any JSON type, to a depth of a few levels), and must be answered
as kube-apiserver answers bad input, with a 4xx (400 for what cannot be decoded, 422 for what
fails validation), never with a 5xx of Pinnace's own (only the 500s kube-apiserver gives too).

The requests go to the HTTP app in process, on a virtual clock, with a fixed budget of examples
per operation and hypothesis derandomized, so the run is the same in every CI run and takes
seconds.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from tests.apiserver.conftest import Harness
from tests.http.test_app import call

from pinnace.api.openapi.documents import openapi_v2
from pinnace.apiserver.http.app import APIApp
from pinnace.clock import Randomness

EXAMPLES = 30
"""Examples per operation: the 204 operations take about 50 s of CPU at this budget."""
DEPTH = 3
"""How deep the bodies follow their schema; below that a field gets any JSON value."""
KUBE_INTERNAL_ERROR = (
    "Internal error occurred: resourceVersion should not be set on objects to be created"
)
"""The one 500 InternalError kube-apiserver itself answers to a client's body."""

DOCUMENT = openapi_v2()
DEFINITIONS: dict[str, Any] = DOCUMENT["definitions"]
OPERATIONS = [
    (method, path)
    for path, item in DOCUMENT["paths"].items()
    for method in ("post", "put", "patch")
    if method in item
]
PATCH_TYPES = (
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/json-patch+json",
    "application/apply-patch+yaml",
)

SEEDS: list[tuple[str, dict[str, Any]]] = [
    ("/api/v1/namespaces", {"metadata": {"name": "fuzz"}}),
    ("/api/v1/nodes", {"metadata": {"name": "fuzz"}}),
    ("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "fuzz"}}),
    (
        "/api/v1/namespaces/default/pods",
        {"metadata": {"name": "fuzz"}, "spec": {"containers": [{"name": "c", "image": "i"}]}},
    ),
]
"""Objects named as the fuzzed paths name theirs, so PUT, PATCH and subresources reach them."""


ANY_JSON: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=6,
)


def shaped(schema: dict[str, Any], depth: int) -> st.SearchStrategy[Any]:
    """A value shaped as `schema` says down to `depth`, any JSON value anywhere instead."""
    if "$ref" in schema:
        return _defined(schema["$ref"].rpartition("/")[2], depth)
    if depth <= 0:
        return ANY_JSON
    kind = schema.get("type")
    if kind == "object" and schema.get("properties"):
        fields = {k: shaped(v, depth - 1) for k, v in schema["properties"].items()}
        return ANY_JSON | st.fixed_dictionaries({}, optional=fields)
    if kind == "array" and "items" in schema:
        return ANY_JSON | st.lists(shaped(schema["items"], depth - 1), max_size=3)
    return ANY_JSON


@functools.cache
def _defined(name: str, depth: int) -> st.SearchStrategy[Any]:
    # Built once: the strategies of a definition are shared by every schema that refers to it.
    return shaped(DEFINITIONS[name], depth)


@functools.cache
def body_for(method: str, path: str) -> st.SearchStrategy[tuple[str, Any]]:
    """(content type, body) for one request."""
    operation = DOCUMENT["paths"][path][method]
    # A patch's body is described as a Patch; it is shaped as the object it patches.
    schema = operation["responses"]["200"]["schema"]
    gvk = operation.get("x-kubernetes-group-version-kind") or {}
    api_version = f"{gvk['group']}/{gvk['version']}" if gvk.get("group") else gvk.get("version")
    named = st.fixed_dictionaries(
        {"apiVersion": st.just(api_version), "kind": st.just(gvk.get("kind"))},
        optional={"metadata": st.fixed_dictionaries({"name": st.just("fuzz")})},
    )
    fields = sorted(DEFINITIONS[schema["$ref"].rpartition("/")[2]]["properties"])
    objects = st.tuples(named, shaped(schema, DEPTH), st.sampled_from(fields), ANY_JSON).map(
        _merged
    )
    if method != "patch":
        return st.tuples(st.just("application/json"), objects)
    operations = st.lists(
        st.fixed_dictionaries(
            {"op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test"])},
            optional={
                "path": st.sampled_from(["/metadata/labels/a", "/spec", "/status", "/x/0", ""]),
                "from": st.sampled_from(["/metadata", "/spec/x"]),
                "value": ANY_JSON,
            },
        ),
        max_size=3,
    )
    return st.one_of(
        st.tuples(st.sampled_from(PATCH_TYPES), objects),
        st.tuples(st.just("application/json-patch+json"), operations | ANY_JSON),
    )


def text(body: Any) -> bytes:
    """JSON text of `body`, in UTF-8 rather than \\u escapes (surrogate pairs included)."""
    return json.dumps(body, ensure_ascii=False).encode()


def _merged(parts: tuple[dict[str, Any], Any, str, Any]) -> Any:
    """The body named as the URL names it, but for one top-level field given any value."""
    identity, body, field, value = parts
    if not isinstance(body, dict):
        return body
    return {**body, **identity, field: value}


@pytest.fixture(scope="module")
def app() -> Iterator[tuple[Harness, APIApp]]:
    harness = Harness()
    app = APIApp(harness.server, Randomness(1))
    for path, body in SEEDS:
        code, answer = harness.run(call(app, "POST", path, body=json.dumps(body).encode()))
        assert code == 201, answer
    yield harness, app
    harness.loop.close()
    asyncio.set_event_loop(None)


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
@settings(
    max_examples=EXAMPLES,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.generate],
)
@given(data=st.data())
def test_no_malformed_body_gets_a_server_error(
    app: tuple[Harness, APIApp], method: str, path: str, data: st.DataObject
) -> None:
    harness, asgi = app
    content_type, body = data.draw(body_for(method, path))
    url = path.replace("{namespace}", "default").replace("{name}", "fuzz")
    query = b"fieldManager=fuzz" if content_type.startswith("application/apply") else b""
    code, answer = harness.run(call(asgi, method.upper(), url, query, text(body), content_type))
    if code >= 500:
        # Besides that one, kube-apiserver answers 500 with no reason to what its handlers
        # return as plain Go errors (ErrorToAPIStatus): an apply that does not fit the kind's
        # schema, a strategic merge patch item without its merge key. A failure of Pinnace's
        # own is a 500 InternalError, "an error on the server".
        status = json.loads(answer)
        plain = (code, status.get("reason", "")) == (500, "")
        assert plain or status["message"] == KUBE_INTERNAL_ERROR, f"{code} {status}"

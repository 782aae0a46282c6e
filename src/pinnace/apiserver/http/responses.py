"""What a handler answers, and how objects are encoded for the representation the client
negotiated: JSON, YAML, a `meta.k8s.io` Table (what `kubectl get` prints) or
PartialObjectMetadata."""

from __future__ import annotations

import builtins
import unicodedata
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson
import yaml

from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.api.tables import IncludeObject, to_table
from pinnace.api.versions import ServedVersion
from pinnace.api.written import written
from pinnace.apiserver.http import negotiation
from pinnace.apiserver.http.negotiation import Negotiated, Output

if TYPE_CHECKING:
    from pinnace.apiserver.http.connections import Upgraded

Headers = list[tuple[str, str]]


@dataclass
class Response:
    status: int
    body: bytes = b""
    content_type: str = negotiation.JSON
    headers: Headers = field(default_factory=list)
    stream: AsyncIterator[bytes] | None = None
    """A watch or a followed log: chunks sent as they come, until the stream ends or `timeout`
    passes (None: no time limit)."""
    timeout: float | None = 0.0
    upgraded: Callable[[Upgraded], Awaitable[None]] | None = None
    """A 101's protocol, spoken on the connection once the answer is sent (`Request.upgrade`)."""


_GO_ESCAPES = tuple(
    (raw.encode(), f"\\u{ord(raw):04x}".encode()) for raw in ("<", ">", "&", "\u2028", "\u2029")
)
_LINE_SEPARATORS_LEAD = "\u2028".encode()[:1]
"""The first byte of U+2028 and U+2029 in UTF-8: looking for one byte first is several times
faster than for their three, in text that mostly holds neither."""


def go_json(value: Any, *, indent: bool = False) -> bytes:
    """JSON as Go's encoding/json writes it: compact (or indented by two spaces, as
    MarshalIndent), with `<`, `>`, `&`, U+2028 and U+2029 escaped. These characters only
    occur inside strings, so escaping them in the encoded text is exact."""
    data = orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else 0)
    escapes = _GO_ESCAPES if _LINE_SEPARATORS_LEAD in data else _GO_ESCAPES[:3]
    for raw, escaped in escapes:
        if raw in data:
            data = data.replace(raw, escaped)
    return data


def encode_json(value: Any) -> bytes:
    """An API object as kube-apiserver's JSON serializer writes it (json.Encoder), ending
    with a newline."""
    return go_json(value) + b"\n"


def indented(response: Response) -> Response:
    """A negotiated JSON answer as kube-apiserver's pretty serializer writes it (MarshalIndent,
    no final newline); any other answer as it is."""
    if response.stream is not None or not response.content_type.startswith(negotiation.JSON):
        return response
    try:
        value = orjson.loads(response.body)
    except orjson.JSONDecodeError:
        return response
    response.body = go_json(value, indent=True)
    return response


def json_response(value: Any, status: int = 200, content_type: str = negotiation.JSON) -> Response:
    return Response(status, encode_json(value), content_type)


def created_response(answer: Any) -> Response:
    """A create's 201; a Status answer (a binding's, an eviction's) takes that code, as
    kube-apiserver's create handler fills it in."""
    if isinstance(answer, dict) and answer.get("kind") == "Status" and not answer.get("code"):
        answer = {**answer, "code": 201}
    return json_response(answer, 201)


def raw_json_response(value: Any) -> Response:
    """What kube-apiserver writes with WriteRawJSON (/version, the root path list): indented,
    without a final newline."""
    return Response(200, go_json(value, indent=True))


TEXT_PLAIN = "text/plain; charset=utf-8"


def text_response(text: str, status: int = 200) -> Response:
    return Response(status, text.encode(), TEXT_PLAIN)


def status_response(error: StatusError) -> Response:
    """The Status; a `Retry-After` header when it says when to retry (429s, 5xx), which
    client-go honours."""
    response = json_response(error.status(), error.code)
    retry_after = (error.details or {}).get("retryAfterSeconds")
    if retry_after and (error.code == 429 or error.code >= 500):
        response.headers.append(("Retry-After", str(retry_after)))
    return response


def warning_headers(warnings: list[str]) -> Headers:
    """`Warning: 299 - "<text>"`, as kube-apiserver's warning recorder writes them
    (apimachinery's NewWarningHeader): `"` and `\\` escaped, everything else as it is; a
    text holding a control character (or a lone surrogate: not UTF-8) is left out."""
    return [
        ("Warning", '299 - "' + w.replace("\\", "\\\\").replace('"', '\\"') + '"')
        for w in dict.fromkeys(warnings)
        if w and not any(unicodedata.category(c) in ("Cc", "Cs") for c in w)
    ]


def _untyped(obj: Object) -> Object:
    """A built-in list's item as kube-apiserver writes it: converted to the external type
    with an empty TypeMeta, so without kind and apiVersion (kubernetes/kubernetes#3030; a
    custom resource's unstructured items keep theirs)."""
    return {k: v for k, v in obj.items() if k != "kind" and k != "apiVersion"}


@dataclass(frozen=True)
class Encoder:
    """Encodes a request's answers in the representation it negotiated."""

    kind: Kind
    negotiated: Negotiated
    include_object: IncludeObject
    now: Callable[[], float]
    """The clock ages are measured by, read at each conversion: a watch converts each event
    as it sends it, as kube-apiserver's watch encoder does, so a later row's AGE is its own."""
    conversion: ServedVersion | None = None
    """Objects go out at this other version of the kind."""

    def object(self, obj: Object, status: int = 200) -> Response:
        if self._partial(as_list=True) and obj.get("kind") == self.kind.kind:
            raise self._not_that_partial("PartialObjectMetadataList", "is not a list", "")
        return self._encode(self.convert_object(obj), status)

    @property
    def plain_json(self) -> bool:
        """Whether an object's answer is its JSON alone (`json`): it depends on nothing but
        the object, the kind and the version served."""
        return self.negotiated.output is Output.JSON

    def json(self, obj: Object) -> bytes:
        """The body `object` answers with `obj`, when `plain_json`."""
        return encode_json(self.convert_object(obj))

    def list(self, listed: Object) -> Response:
        if self._partial(as_list=False):
            raise self._not_that_partial("PartialObjectMetadata", "is a list", "List")
        return self._encode(self.convert_list(listed), 200)

    def _partial(self, as_list: bool) -> bool:
        negotiated = self.negotiated
        return negotiated.output is Output.PARTIAL and negotiated.as_list == as_list

    def _not_that_partial(self, asked: str, what: str, suffix: str) -> StatusError:
        """handlers/response.go's asPartialObjectMetadata(List) refusing the other shape; the
        Go type named is the handler's: the internal one, or unstructured's."""
        if self.kind.custom:
            go_type = f"*unstructured.Unstructured{suffix}"
        else:
            go_type = f"*{self.kind.group.split('.')[0] or 'core'}.{self.kind.kind}{suffix}"
        message = f"you requested {asked}, but the requested object {what} ({go_type})"
        return StatusError(406, "NotAcceptable", message)

    def convert_object(self, obj: Object, no_headers: bool = False) -> Object:
        """`obj` as the negotiated kind; Status and other kinds' objects stay as they are, and
        so do a watch's objects asked for as PartialObjectMetadataList (kube-apiserver's
        watch encoder sends what it fails to transform as it is)."""
        output = self.negotiated.output
        if obj.get("kind") != self.kind.kind or self._partial(as_list=True):
            return obj
        if output in (Output.JSON, Output.YAML):
            return self._at_version(obj)
        m = obj.get("metadata") or {}
        if output is Output.TABLE:
            rv = {"resourceVersion": m["resourceVersion"]} if m.get("resourceVersion") else {}
            return self._table([obj], rv, no_headers)
        return {
            "kind": "PartialObjectMetadata",
            "apiVersion": f"meta.k8s.io/{self.negotiated.version}",
            "metadata": m,
        }

    def convert_list(self, listed: Object) -> Object:
        output = self.negotiated.output
        if output is Output.TABLE:
            return self._table(listed["items"], listed["metadata"], False)
        if output is Output.PARTIAL:
            version = f"meta.k8s.io/{self.negotiated.version}"
            items = [
                {"kind": "PartialObjectMetadata", "apiVersion": version, "metadata": i["metadata"]}
                for i in listed["items"]
            ]
            return {
                "kind": "PartialObjectMetadataList",
                "apiVersion": version,
                "metadata": listed["metadata"],
                "items": items,
            }
        if self.conversion is not None:
            converted = [self.conversion.from_stored(i) for i in listed["items"]]
            api_version = self.conversion.served.api_version
            return {**listed, "apiVersion": api_version, "items": converted}
        if not self.kind.custom:
            model = self.kind.model
            return {**listed, "items": [_untyped(written(model, i)) for i in listed["items"]]}
        return {**listed, "items": [self._at_version(i) for i in listed["items"]]}

    def _at_version(self, obj: Object) -> Object:
        """`obj` at the version it is served at, as Go writes it (`pinnace.api.written`).
        A custom resource written before its CRD's storage version changed is still stored at
        the old one: apiextensions-apiserver converts it on the way out (strategy None: only
        apiVersion changes)."""
        if self.conversion is not None:
            return self.conversion.from_stored(obj)
        if not self.kind.custom:
            return written(self.kind.model, obj)
        if obj.get("apiVersion") == self.kind.api_version:
            return obj
        return {**obj, "apiVersion": self.kind.api_version}

    def _table(
        self, objects: builtins.list[Object], list_meta: dict[str, Any], no_headers: bool
    ) -> Object:
        table = to_table(
            self.kind,
            objects,
            include_object=self.include_object,
            now=self.now(),
            list_meta=list_meta,
            no_headers=no_headers,
        )
        table["apiVersion"] = f"meta.k8s.io/{self.negotiated.version}"
        return table

    def _encode(self, value: Object, status: int) -> Response:
        if self.negotiated.output is Output.YAML:
            text = yaml.safe_dump(value, default_flow_style=False, sort_keys=True)
            return Response(status, text.encode(), negotiation.YAML)
        return json_response(value, status)

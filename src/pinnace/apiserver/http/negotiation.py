"""Content negotiation: which representation a response takes (the `Accept` header) and how a
request body is encoded (`Content-Type`), as kube-apiserver's negotiation package decides.

Pinnace speaks JSON (and YAML for request bodies). Clients that ask for protobuf always list
JSON as a fallback (client-go, kubectl); one that accepts nothing Pinnace can send gets 406.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from enum import Enum

from pinnace.api.discovery import AGGREGATED_GROUP, AGGREGATED_KIND, AGGREGATED_VERSIONS
from pinnace.api.patch import PatchType
from pinnace.api.status import StatusError

JSON = "application/json"
YAML = "application/yaml"
PROTOBUF = "application/vnd.kubernetes.protobuf"
META_GROUP = "meta.k8s.io"


class Output(Enum):
    """What a resource response is encoded as."""

    JSON = "json"
    YAML = "yaml"
    TABLE = "table"
    PARTIAL = "partial"
    """PartialObjectMetadata (or its List): the objects' metadata only."""


@dataclass(frozen=True)
class MediaType:
    type: str
    """`application/json`, lower case, without parameters."""
    params: dict[str, str]
    q: float = 1.0


@dataclass(frozen=True)
class Negotiated:
    output: Output
    version: str = "v1"
    """For tables and partial metadata: meta.k8s.io/v1 or v1beta1."""
    as_list: bool = False
    """Partial metadata asked for as PartialObjectMetadataList, not PartialObjectMetadata."""


def parse_media_types(header: str) -> list[MediaType]:
    """The clauses of an Accept header, best first (by q, keeping the client's order)."""
    found: list[MediaType] = []
    for clause in header.split(","):
        clause = clause.strip()
        if not clause:
            continue
        media_type = parse_media_type(clause)
        if media_type.q > 0:
            found.append(media_type)
    found.sort(key=lambda m: -m.q)
    return found


def parse_media_type(text: str) -> MediaType:
    kind, *raw_params = text.split(";")
    params: dict[str, str] = {}
    q = 1.0
    for raw in raw_params:
        key, _, value = raw.strip().partition("=")
        key, value = key.strip().lower(), value.strip().strip('"')
        if key == "q":
            try:
                q = float(value)
            except ValueError:
                q = 0.0
        elif key:
            params[key] = value
    return MediaType(kind.strip().lower(), params, q)


def _is_json(media_type: str) -> bool:
    return media_type in (JSON, "application/*", "*/*")


@functools.lru_cache(maxsize=256)
def negotiate_resource(accept: str) -> Negotiated:
    """The output for a resource request (get, list, watch, writes); remembered, as clients
    send the same few Accept headers again and again."""
    if not accept:
        return Negotiated(Output.JSON)
    for media in parse_media_types(accept):
        if media.type == YAML and not media.params.get("as"):
            return Negotiated(Output.YAML)
        if not _is_json(media.type):
            continue
        target = media.params.get("as")
        if not target:
            return Negotiated(Output.JSON)
        if media.params.get("g") != META_GROUP or media.params.get("v") not in ("v1", "v1beta1"):
            continue
        if target == "Table":
            return Negotiated(Output.TABLE, media.params["v"])
        if target in ("PartialObjectMetadata", "PartialObjectMetadataList"):
            return Negotiated(
                Output.PARTIAL, media.params["v"], target == "PartialObjectMetadataList"
            )
    raise not_acceptable(accept)


_HUMAN_AGENTS = ("curl", "Wget", "Mozilla/5.0")
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})


def pretty(query_pretty: str | None, user_agent: str, accept: str) -> bool:
    """Whether JSON goes out indented, as negotiation.NegotiateOutputMediaType decides: the
    chosen Accept clause says `pretty=1`, or `?pretty=` parses as Go's true, or, without that
    parameter, the client is curl, Wget or a browser."""
    if "pretty" in accept:
        for media in parse_media_types(accept):
            if _is_json(media.type):
                if media.params.get("pretty") == "1":
                    return True
                break
    if query_pretty:
        return query_pretty in _GO_TRUE
    return user_agent.startswith(_HUMAN_AGENTS)


def negotiate_discovery(accept: str) -> str | None:
    """The aggregated discovery version asked for ("v2", "v2beta1"), or None for the legacy
    documents (APIVersions, APIGroupList)."""
    for media in parse_media_types(accept):
        if media.type == JSON and media.params.get("as") == AGGREGATED_KIND:
            if (
                media.params.get("g") == AGGREGATED_GROUP
                and media.params.get("v") in AGGREGATED_VERSIONS
            ):
                return media.params["v"]
            continue
        if _is_json(media.type) and not media.params.get("as"):
            return None
    if not accept:
        return None
    raise not_acceptable(accept)


def discovery_content_type(version: str) -> str:
    return f"{JSON};g={AGGREGATED_GROUP};v={version};as={AGGREGATED_KIND}"


def not_acceptable(accept: str = "") -> StatusError:
    return StatusError(
        406,
        "NotAcceptable",
        "only the following media types are accepted: " + ", ".join(ACCEPTED_OUTPUT),
    )


def unsupported_media_type(accepted: tuple[str, ...]) -> StatusError:
    return StatusError(
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(accepted),
    )


class BodyType(Enum):
    JSON = "json"
    YAML = "yaml"
    PROTOBUF = "protobuf"


_WRITE_TYPES = {
    JSON: BodyType.JSON,
    YAML: BodyType.YAML,
    "application/x-yaml": BodyType.YAML,
    PROTOBUF: BodyType.PROTOBUF,
}
PATCH_CONTENT_TYPES = tuple(t.value for t in PatchType)
_CUSTOM_PATCH_TYPES = tuple(t for t in PATCH_CONTENT_TYPES if t != PatchType.STRATEGIC_MERGE)
ACCEPTED_INPUT = (JSON, YAML, PROTOBUF)
ACCEPTED_OUTPUT = (JSON, YAML)


def body_type(content_type: str) -> BodyType:
    """How a POST or PUT body is encoded; 415 when Pinnace cannot read it. A missing
    Content-Type is read as JSON, as Go's decoder sniffs it."""
    media = content_type.split(";", 1)[0].strip()
    found = _WRITE_TYPES.get(media.lower() or JSON)
    if found is None:
        raise unsupported_media_type(ACCEPTED_INPUT)
    return found


def patch_type(content_type: str, custom: bool = False) -> PatchType:
    """The patch type a PATCH body's Content-Type names; 415 for any other, and for a
    strategic merge patch of a custom resource (`custom`), which has no patch strategies."""
    media = content_type.split(";", 1)[0].strip()
    accepted = _CUSTOM_PATCH_TYPES if custom else PATCH_CONTENT_TYPES
    if media not in accepted:
        raise unsupported_media_type(accepted)
    return PatchType(media)

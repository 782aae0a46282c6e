"""serviceaccounts/token: a TokenRequest (authentication.k8s.io/v1) answered with a signed
token for the service account, as v1.32's TokenREST (pkg/registry/core/serviceaccount/storage/
token.go, pkg/apis/authentication/validation). Nothing is stored.

expirationSeconds defaults to 3600 and must lie between 10 minutes and 2^32 seconds; above
`--service-account-max-token-expiration` it is cut to that, with a warning. Audiences default
to the API audiences. A boundObjectRef names a Pod (running as this service account; the token
also names its node), a Node (ServiceAccountTokenNodeBinding, beta and on in v1.32) or a Secret
that must exist, with the uid given if one is. A pod-bound
token asked for 3607 s, for the API audiences (the kube-api-access volume's), is extended to a
year (or the maximum expiration) with `warnafter` at 3607 s, while the answer's
expirationTimestamp says 3607 s, so the kubelet renews it as if it expired then.

`grant_token` answers a request but for its token's signature (an ES256 signature, most of a
request's cost), which `Grant.sign` makes later: the simulated mode's kubelet has a pod's first
token signed when it is read (docs/simulation.md).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pinnace.api import catalog, field, status
from pinnace.api.decode import as_decoded, decode
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.apiserver.auth.tokens import (
    EXPIRATION_EXTENSION,
    WARN_ONLY_EXPIRATION,
    Bound,
)
from pinnace.apiserver.server import Result
from pinnace.clock.rfc3339 import format_time

if TYPE_CHECKING:
    from pinnace.apiserver.server import APIServer

AUTHENTICATION = "authentication.k8s.io"
TOKEN_REQUEST = Kind(
    AUTHENTICATION,
    "v1",
    "TokenRequest",
    "tokenrequests",
    namespaced=True,
    model="AuthenticationV1TokenRequest",
)
"""The body's kind, decoded as the create handler decodes any body."""
SERVICE_ACCOUNTS = catalog.kind("", "serviceaccounts")
PODS = catalog.kind("", "pods")
NODES = catalog.kind("", "nodes")
SECRETS = catalog.kind("", "secrets")
DEFAULT_EXPIRATION = 60 * 60
MIN_EXPIRATION = 10 * 60
MAX_EXPIRATION = 1 << 32
_EXPIRATION = Path("spec", "expirationSeconds")


def validate_token_request(request: Object) -> list[FieldError]:
    """ValidateTokenRequest."""
    seconds = request["spec"]["expirationSeconds"]
    if seconds < MIN_EXPIRATION:
        why = "may not specify a duration less than 10 minutes"
    elif seconds > MAX_EXPIRATION:
        why = "may not specify a duration larger than 2^32 seconds"
    else:
        return []
    return [field.invalid(_EXPIRATION, seconds, why)]


def _decoded(body: Any, decoded: bool = False) -> Object:
    request = (as_decoded if decoded else decode)(body, TOKEN_REQUEST).obj
    spec = request.get("spec")
    request["spec"] = spec = dict(spec) if isinstance(spec, dict) else {}
    if spec.get("expirationSeconds") is None:
        spec["expirationSeconds"] = DEFAULT_EXPIRATION  # SetDefaults_TokenRequestSpec
    return request


def _must_match(request: Object, key: str, value: str, what: str) -> None:
    given = (request.get("metadata") or {}).get(key) or ""
    if given and given != value:
        path = Path("metadata", key)
        errs = [field.invalid(path, given, f"must match the service account {what} if specified")]
        raise status.invalid(TOKEN_REQUEST.kind, value, errs, AUTHENTICATION)


@dataclass(frozen=True)
class Grant:
    """A TokenRequest answered but for its token's signature: every check made, the claims
    set; `request` has the status with an empty token, which `sign()` makes (holding the
    claims only)."""

    request: Object
    warnings: list[str]
    sign: Callable[[], str]


async def request_token(
    server: APIServer, namespace: str, name: str, body: Any, issued_at: float | None = None
) -> Result:
    """The TokenRequest with its status: the token and when the kubelet should consider it
    expired; issued now, or at `issued_at` (the simulated mode's deferred refreshes)."""
    grant = await grant_token(server, namespace, name, body, issued_at)
    grant.request["status"]["token"] = grant.sign()
    return Result(grant.request, grant.warnings, created=True)


async def grant_token(
    server: APIServer,
    namespace: str,
    name: str,
    body: Any,
    issued_at: float | None = None,
    *,
    decoded: bool = False,
) -> Grant:
    """The TokenRequest answered as `request_token` answers it, but for the token's
    signature, the costly part (the simulated mode's first tokens, signed when read).
    `decoded`: the body is in the form decoding gives (`WriteOptions.decoded`)."""
    request = _decoded(body, decoded)
    _must_match(request, "name", name, "name")
    _must_match(request, "namespace", namespace, "namespace")
    errs = validate_token_request(request)
    if errs:
        raise status.invalid(TOKEN_REQUEST.kind, "", errs, AUTHENTICATION)
    account = _identity(name, await server.uid_of(SERVICE_ACCOUNTS, namespace, name), namespace)
    tokens = server.service_account_tokens
    spec = request["spec"]
    if not spec.get("audiences"):
        spec["audiences"] = list(tokens.audiences)
    now = server.clock.now() if issued_at is None else issued_at
    request["metadata"] = {
        **(request.get("metadata") or {}),
        "name": name,
        "namespace": namespace,
        "creationTimestamp": format_time(now),
    }
    bound = await _bound(server, namespace, name, spec.get("boundObjectRef"))
    warnings = []
    if tokens.max_expiration and spec["expirationSeconds"] > tokens.max_expiration:
        warnings.append(
            f"requested expiration of {spec['expirationSeconds']} seconds shortened to "
            f"{tokens.max_expiration} seconds"
        )
        spec["expirationSeconds"] = tokens.max_expiration
    expiration, warn_after = spec["expirationSeconds"], 0
    if (
        bound.pod is not None
        and expiration == WARN_ONLY_EXPIRATION
        and tokens.is_api_audiences(spec["audiences"])
    ):
        warn_after = expiration
        expiration = tokens.max_expiration or EXPIRATION_EXTENSION
    claims = tokens.claims(account, bound, now, expiration, warn_after, spec["audiences"])
    request["status"] = {
        "token": "",
        "expirationTimestamp": format_time(now + spec["expirationSeconds"]),
    }
    return Grant(request, warnings, functools.partial(tokens.sign, claims))


async def _bound(server: APIServer, namespace: str, account: str, ref: Any) -> Bound:
    """The object a boundObjectRef names, checked as TokenREST checks it."""
    if not isinstance(ref, dict):
        return Bound()
    kind, api_version = ref.get("kind") or "", ref.get("apiVersion") or ""
    group = api_version.rpartition("/")[0]
    name = ref.get("name") or ""
    if group == "" and kind == "Pod":
        pod = await server.get(PODS, namespace, name)
        if pod["spec"].get("serviceAccountName", "") != account:
            raise status.bad_request(
                f'cannot bind token for serviceaccount "{account}" to pod running with '
                "different serviceaccount name."
            )
        found, bound = pod, Bound(pod=pod, node=await _node(server, pod))
    elif group == "" and kind == "Node":
        found = await server.get(NODES, "", name)
        bound = Bound(node=found)
    elif group == "" and kind == "Secret":
        found = await server.get(SECRETS, namespace, name)
        bound = Bound(secret=found)
    else:
        raise status.bad_request(
            f"cannot bind token to object of type {_group_version_kind(api_version, kind)}"
        )
    uid = found["metadata"].get("uid", "")
    if ref.get("uid") and ref["uid"] != uid:
        raise status.conflict(
            kind,
            name,
            f"the UID in the bound object reference ({ref['uid']}) does not match the UID in "
            "record. The object might have been deleted and then recreated",
        )
    return bound


async def _node(server: APIServer, pod: Object) -> Object | None:
    """The pod's node, when it has one that can be read (ServiceAccountTokenPodNodeInfo), as
    much of it as the token names: read at resourceVersion "0", as TokenREST reads it."""
    node_name = pod["spec"].get("nodeName") or ""
    if not node_name:
        return None
    try:
        return _identity(node_name, await server.uid_of(NODES, "", node_name, "0"))
    except status.StatusError:
        return None


def _identity(name: str, uid: str, namespace: str = "") -> Object:
    """An object's metadata as far as a token's claims name it: all a TokenRequest reads of
    its service account and of its pod's node."""
    return {"metadata": {"name": name, "namespace": namespace, "uid": uid}}


def _group_version_kind(api_version: str, kind: str) -> str:
    """schema.GroupVersionKind's String(): `group/version, Kind=kind`."""
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={kind}" if group else f"/{version}, Kind={kind}"

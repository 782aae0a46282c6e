"""ServiceAccount tokens, as kube-apiserver v1.32 signs and checks them (pkg/serviceaccount:
jwt.go, claims.go; staging/src/k8s.io/apiserver/pkg/authentication/serviceaccount/util.go).

A token is a JWT signed with the service account signing key (ES256 here: an ECDSA P-256 key,
which `--service-account-signing-key-file` also takes; its `kid` is the unpadded base64url
SHA-256 of the public key's DER). Its claims: `iss`, `sub` (`system:serviceaccount:NS:NAME`),
`aud`, `exp`, `iat`, `nbf`, `jti`, and the private `kubernetes.io` claim naming the namespace,
the service account (name and uid), the pod, node or secret it is bound to, a pod's node, and
for a kube-api-access token its `warnafter`.

A bearer token is the service accounts' when it parses as a JWT whose `iss` is the issuer.
Then, in jwt.go's order: the signature, the audiences (one must be among those asked for: the
API audiences, or a TokenReview's), the times (with go-jose's minute of leeway), and that the
service account, and the pod, node or secret the token is bound to, still exist with the uids
it names (claims.go's validator). The user is the service account, in `system:serviceaccounts`
and `system:serviceaccounts:NS`, with the pod, node and credential id in its extra fields.

Legacy tokens (legacy.go), which the tokens controller puts in Secrets of type
`kubernetes.io/service-account-token`, have the issuer `kubernetes/serviceaccount`, no
audience (so the API audiences) and no expiry; one is good while its Secret holds it, is not
being deleted nor labelled invalid, and its service account is there with the uid it names.
Each day one is used, its Secret is labelled `kubernetes.io/legacy-token-last-used` with the
date (legacy token tracking, GA in v1.32).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import random
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature,
    encode_dss_signature,
)

from pinnace.apiserver.auth.user import (
    SERVICE_ACCOUNTS_GROUP,
    UserInfo,
    service_account_username,
)
from pinnace.clock import Randomness
from pinnace.clock.rfc3339 import format_time, parse_time

DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"
LEGACY_ISSUER = "kubernetes/serviceaccount"
LEGACY_CLAIM = "kubernetes.io/serviceaccount/"
LAST_USED_LABEL = "kubernetes.io/legacy-token-last-used"
INVALID_SINCE_LABEL = "kubernetes.io/legacy-token-invalid-since"
WARN_ONLY_EXPIRATION = 60 * 60 + 7
"""What the ServiceAccount admission plugin asks a kube-api-access token to last: the
TokenRequest extends such a pod-bound token to a year, warning after this long."""
EXPIRATION_EXTENSION = 24 * 365 * 60 * 60
LEEWAY = 60
"""go-jose's jwt.DefaultLeeway, for exp, nbf and iat."""

POD_NAME_KEY = "authentication.kubernetes.io/pod-name"
POD_UID_KEY = "authentication.kubernetes.io/pod-uid"
NODE_NAME_KEY = "authentication.kubernetes.io/node-name"
NODE_UID_KEY = "authentication.kubernetes.io/node-uid"
CREDENTIAL_ID_KEY = "authentication.kubernetes.io/credential-id"

INVALIDATED = "service account token has been invalidated"
BAD_SIGNATURE = "square/go-jose: error in cryptographic primitive"
_P256_ORDER = int("FFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551", 16)


class TokenError(Exception):
    """Why a token the service accounts' issuer signed (or seems to) authenticates no one, in
    kube-apiserver's words (a TokenReview's status.error)."""


ObjectGetter = Callable[[str, str, str], Awaitable[Mapping[str, Any] | None]]
"""(resource, namespace, name) -> the object as stored now, or None: serviceaccounts, pods,
secrets and nodes."""
SecretLabeller = Callable[[str, str, str, str], Awaitable[None]]
"""(namespace, secret name, label, value): label a Secret (legacy token tracking)."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _json(value: Any) -> bytes:
    """As Go's encoding/json writes a map: keys sorted, no spaces."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


class SigningKey:
    """The service account signing key (ECDSA P-256, ES256)."""

    def __init__(self, private_key: ec.EllipticCurvePrivateKey) -> None:
        self._key = private_key
        self._public = private_key.public_key()
        der = self._public.public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        self.key_id = _b64(hashlib.sha256(der).digest())

    @classmethod
    def from_pem(cls, pem: bytes) -> SigningKey:
        key = serialization.load_pem_private_key(pem, password=None)
        if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != "secp256r1":
            raise ValueError("the service account signing key must be an ECDSA P-256 key")
        return cls(key)

    @classmethod
    def from_seed(cls, rand: random.Random) -> SigningKey:
        """A key drawn from a seeded stream: the same seed, the same key (the simulated mode,
        and `pinnace up` without --tls, which authenticates no one)."""
        secret = rand.getrandbits(256) % (_P256_ORDER - 1) + 1
        return cls(ec.derive_private_key(secret, ec.SECP256R1()))

    def pem(self) -> bytes:
        return self._key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )

    def sign(self, claims: Mapping[str, Any]) -> str:
        header = _b64(_json({"alg": "ES256", "kid": self.key_id}))
        signed = f"{header}.{_b64(_json(claims))}"
        r, s = decode_dss_signature(self._key.sign(signed.encode(), ec.ECDSA(hashes.SHA256())))
        return f"{signed}.{_b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"

    def verify(self, token: str) -> None:
        """TokenError unless this key signed `token` (a JWS in compact form)."""
        signed, _, signature = token.rpartition(".")
        try:
            raw = _unb64(signature)
            header = json.loads(_unb64(signed.partition(".")[0]))
        except (binascii.Error, ValueError):
            raise TokenError(BAD_SIGNATURE) from None
        if not isinstance(header, dict) or header.get("alg") != "ES256" or len(raw) != 64:
            raise TokenError(BAD_SIGNATURE)
        der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
        try:
            self._public.verify(der, signed.encode(), ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            raise TokenError(BAD_SIGNATURE) from None


Ref = tuple[str, str]
"""An object's name and uid, as a token's private claim names it."""


def _ref(obj: Mapping[str, Any]) -> Ref:
    m = obj.get("metadata") or {}
    return m.get("name", ""), m.get("uid", "")


def _ref_claim(ref: Ref) -> dict[str, str]:
    """The claim of a ref: its name and uid, those that are not empty."""
    name, uid = ref
    return {k: v for k, v in (("name", name), ("uid", uid)) if v}


@dataclass(frozen=True)
class Bound:
    """What a token is bound to: a pod (and the node it runs on), a node or a secret."""

    pod: Mapping[str, Any] | None = None
    node: Mapping[str, Any] | None = None
    secret: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Claims:
    """A bound token's claims (claims.go's Claims) as the few strings and numbers they are
    made of, its `jti` drawn: what a token granted but not yet signed keeps (less memory than
    their text, ~480 bytes to ~780, its names and uids the objects' own strings), written out
    (`as_dict`) only when it is signed, which most granted tokens never are."""

    issuer: str
    audiences: tuple[str, ...]
    issued: int
    expiration: int
    warn_after: int
    jti: int
    """The 128 random bits of its uuid."""
    namespace: str
    account: Ref
    pod: Ref | None
    node: Ref | None
    secret: Ref | None

    def as_dict(self) -> dict[str, Any]:
        """The claims: the public ones and the `kubernetes.io` private one."""
        issued = self.issued
        kubernetes: dict[str, Any] = {
            "namespace": self.namespace,
            "serviceaccount": _ref_claim(self.account),
        }
        if self.pod is not None:
            kubernetes["pod"] = _ref_claim(self.pod)
            if self.node is not None:
                kubernetes["node"] = _ref_claim(self.node)
        elif self.secret is not None:
            kubernetes["secret"] = _ref_claim(self.secret)
        elif self.node is not None:
            kubernetes["node"] = _ref_claim(self.node)
        if self.warn_after:
            kubernetes["warnafter"] = issued + self.warn_after
        return {
            "aud": list(self.audiences),
            "exp": issued + self.expiration,
            "iat": issued,
            "iss": self.issuer,
            "jti": str(uuid.UUID(int=self.jti, version=4)),
            "kubernetes.io": kubernetes,
            "nbf": issued,
            "sub": service_account_username(self.namespace, self.account[0]),
        }


class ServiceAccountTokens:
    """The issuer: makes tokens (TokenRequest) and checks them (authentication,
    TokenReview)."""

    def __init__(
        self,
        key: SigningKey,
        rand: random.Random,
        issuer: str = DEFAULT_ISSUER,
        max_expiration: int = 0,
    ) -> None:
        self.key = key
        self._rand = rand
        self.issuer = issuer
        self.audiences: tuple[str, ...] = (issuer,)
        """The API audiences (--api-audiences defaults to the issuer)."""
        self.max_expiration = max_expiration
        """--service-account-max-token-expiration in seconds; 0: none."""

    def claims(
        self,
        account: Mapping[str, Any],
        bound: Bound,
        now: float,
        expiration: int,
        warn_after: int,
        audiences: Sequence[str],
    ) -> Claims:
        """The claims of a token for `account` bound to `bound`, issued `now`: its jti is
        drawn here, in the order of the requests."""
        m = account["metadata"]
        return Claims(
            self.issuer,
            tuple(audiences),
            int(now),
            expiration,
            warn_after,
            self._rand.getrandbits(128),
            m["namespace"],
            _ref(account),
            None if bound.pod is None else _ref(bound.pod),
            None if bound.node is None else _ref(bound.node),
            None if bound.secret is None else _ref(bound.secret),
        )

    def sign(self, claims: Claims) -> str:
        """The signed token of `claims`."""
        return self.key.sign(claims.as_dict())

    def legacy_token(self, account: Mapping[str, Any], secret_name: str) -> str:
        """A legacy token for a Secret of type kubernetes.io/service-account-token
        (LegacyClaims), as the tokens controller makes one."""
        m = account["metadata"]
        return self.key.sign(
            {
                "iss": LEGACY_ISSUER,
                f"{LEGACY_CLAIM}namespace": m["namespace"],
                f"{LEGACY_CLAIM}secret.name": secret_name,
                f"{LEGACY_CLAIM}service-account.name": m["name"],
                f"{LEGACY_CLAIM}service-account.uid": m.get("uid", ""),
                "sub": service_account_username(m["namespace"], m["name"]),
            }
        )

    def is_api_audiences(self, audiences: Sequence[str]) -> bool:
        return bool(audiences) and all(a in self.audiences for a in audiences)

    def issued_here(self, token: str) -> dict[str, Any] | None:
        """The unverified claims of a JWT whose `iss` is this issuer's (jwt.go's
        hasCorrectIssuer); None for any other token, which another authenticator may
        know."""
        parts = token.split(".")
        if len(parts) != 3:
            return None
        try:
            claims = json.loads(_unb64(parts[1]))
        except (binascii.Error, ValueError):
            return None
        if not isinstance(claims, dict) or claims.get("iss") not in (self.issuer, LEGACY_ISSUER):
            return None
        return claims

    async def authenticate(
        self,
        token: str,
        objects: ObjectGetter,
        now: float,
        audiences: Sequence[str] = (),
        label: SecretLabeller | None = None,
    ) -> tuple[UserInfo, tuple[str, ...]] | None:
        """The service account `token` authenticates, and the audiences it was accepted for;
        None when it is not this issuer's; TokenError when it is and fails a check.
        `audiences`: those asked for (a TokenReview's), the API audiences when empty."""
        claims = self.issued_here(token)
        if claims is None:
            return None
        self.key.verify(token)
        token_audiences = _strings(claims.get("aud"))
        wanted = tuple(audiences) or self.audiences
        accepted = tuple(a for a in (token_audiences or self.audiences) if a in wanted)
        if not accepted:
            raise TokenError(
                f"token audiences {_go_quoted(token_audiences or self.audiences)} is invalid "
                f"for the target audiences {_go_quoted(wanted)}"
            )
        _check_times(claims, now)
        if claims["iss"] == LEGACY_ISSUER:
            return await _validate_legacy(claims, token, objects, now, label), accepted
        return await _validate(claims, objects, now), accepted


def service_account_issuer(
    randomness: Randomness, key_pem: str = "", issuer: str = DEFAULT_ISSUER, max_expiration: int = 0
) -> ServiceAccountTokens:
    """The issuer with the signing key `key_pem` (PEM), or one drawn from `randomness`."""
    key = (
        SigningKey.from_pem(key_pem.encode())
        if key_pem
        else SigningKey.from_seed(randomness.child("service-account-key").random)
    )
    rand = randomness.child("service-account-tokens").random
    return ServiceAccountTokens(key, rand, issuer, max_expiration)


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _go_quoted(values: Sequence[str]) -> str:
    """A []string as Go's %q prints it."""
    return "[" + " ".join(json.dumps(v) for v in values) + "]"


def _number(claims: Mapping[str, Any], name: str) -> float | None:
    value = claims.get(name)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _check_times(claims: Mapping[str, Any], now: float) -> None:
    """jwt.Claims.Validate with the default leeway, in go-jose's order."""
    not_before, expiry, issued = (_number(claims, n) for n in ("nbf", "exp", "iat"))
    if not_before is not None and now + LEEWAY < not_before:
        raise TokenError("service account token is not valid yet")
    if expiry is not None and now - LEEWAY > expiry:
        raise TokenError("service account token has expired")
    if issued is not None and now + LEEWAY < issued:
        raise TokenError("service account token is issued in the future")


def _private(claims: Mapping[str, Any], name: str) -> dict[str, str] | None:
    value = (claims.get("kubernetes.io") or {}).get(name)
    if not isinstance(value, dict):
        return None
    return {k: str(value.get(k) or "") for k in ("name", "uid")}


def _deleted_before(obj: Mapping[str, Any], now: float) -> bool:
    """Marked for deletion longer ago than the leeway (a token outlives it that long)."""
    stamp = (obj.get("metadata") or {}).get("deletionTimestamp")
    return bool(stamp) and parse_time(stamp) < now - LEEWAY


async def _validate(claims: Mapping[str, Any], objects: ObjectGetter, now: float) -> UserInfo:
    """claims.go's validator: what the token names still exists, with the same uid."""
    private = claims.get("kubernetes.io")
    if not isinstance(private, dict):
        raise TokenError("service account token claims could not be validated")
    namespace = str(private.get("namespace") or "")
    account_ref = _private(claims, "serviceaccount") or {"name": "", "uid": ""}
    account = await objects("serviceaccounts", namespace, account_ref["name"])
    if account is None:
        raise TokenError(f'serviceaccounts "{account_ref["name"]}" not found')
    uid = account["metadata"].get("uid", "")
    if uid != account_ref["uid"]:
        raise TokenError(f"service account UID ({uid}) does not match claim ({account_ref['uid']})")
    if _deleted_before(account, now):
        raise TokenError(f"service account {namespace}/{account_ref['name']} has been deleted")
    secret_ref = _private(claims, "secret")
    if secret_ref is not None:
        await _bound("secrets", "secret", namespace, secret_ref, objects, now)
    extra: dict[str, tuple[str, ...]] = {}
    pod_ref = _private(claims, "pod")
    if pod_ref is not None:
        await _bound("pods", "pod", namespace, pod_ref, objects, now)
        extra[POD_NAME_KEY], extra[POD_UID_KEY] = (pod_ref["name"],), (pod_ref["uid"],)
    jti = claims.get("jti")
    if isinstance(jti, str) and jti:
        extra[CREDENTIAL_ID_KEY] = (f"JTI={jti}",)
    node_ref = _private(claims, "node")
    if node_ref is not None and pod_ref is None:
        # Bound to the node itself (ServiceAccountTokenNodeBindingValidation): it must stay.
        await _bound("nodes", "node", "", node_ref, objects, now)
    if node_ref is not None and node_ref["name"]:
        extra[NODE_NAME_KEY] = (node_ref["name"],)
        if node_ref["uid"]:
            extra[NODE_UID_KEY] = (node_ref["uid"],)
    return UserInfo(
        service_account_username(namespace, account_ref["name"]),
        account_ref["uid"],
        (SERVICE_ACCOUNTS_GROUP, f"{SERVICE_ACCOUNTS_GROUP}:{namespace}"),
        extra,
    )


async def _bound(
    resource: str,
    word: str,
    namespace: str,
    ref: Mapping[str, str],
    objects: ObjectGetter,
    now: float,
) -> None:
    """The pod, secret or node a token is bound to is still there, the same one."""
    found = await objects(resource, namespace, ref["name"])
    if found is None:
        raise TokenError(INVALIDATED)
    uid = found["metadata"].get("uid", "")
    if uid != ref["uid"]:
        raise TokenError(
            f"{word} UID ({uid}) does not match service account {word} ref claim ({ref['uid']})"
        )
    if _deleted_before(found, now):
        raise TokenError(INVALIDATED)


def _legacy_claim(claims: Mapping[str, Any], name: str) -> str:
    value = claims.get(LEGACY_CLAIM + name)
    return value if isinstance(value, str) else ""


async def _validate_legacy(
    claims: Mapping[str, Any],
    token: str,
    objects: ObjectGetter,
    now: float,
    label: SecretLabeller | None,
) -> UserInfo:
    """legacy.go's validator, with the service account and Secret looked up
    (--service-account-lookup, on by default)."""
    names = {n: _legacy_claim(claims, n) for n in _LEGACY_NAMES}
    subject = claims.get("sub")
    if not isinstance(subject, str) or not subject:
        raise TokenError("sub claim is missing")
    for name, what in _LEGACY_NAMES.items():
        if not names[name]:
            raise TokenError(f"{what} claim is missing")
    namespace, account_name = names["namespace"], names["service-account.name"]
    if subject != service_account_username(namespace, account_name):
        raise TokenError("sub claim is invalid")
    secret = await objects("secrets", namespace, names["secret.name"])
    if secret is None or (secret.get("metadata") or {}).get("deletionTimestamp"):
        raise TokenError("token has been invalidated")
    stored = (secret.get("data") or {}).get("token") or ""
    if _decoded(stored) != token.encode():
        raise TokenError("token does not match server's copy")
    account = await objects("serviceaccounts", namespace, account_name)
    if account is None:
        raise TokenError(f'serviceaccounts "{account_name}" not found')
    if account["metadata"].get("deletionTimestamp"):
        raise TokenError(f"service account {namespace}/{account_name} has been deleted")
    uid = account["metadata"].get("uid", "")
    if uid != names["service-account.uid"]:
        raise TokenError(
            f"service account UID ({uid}) does not match claim ({names['service-account.uid']})"
        )
    labels = secret["metadata"].get("labels") or {}
    today = format_time(now)[:10]
    if label is not None and labels.get(LAST_USED_LABEL) != today:
        await label(namespace, names["secret.name"], LAST_USED_LABEL, today)
    if labels.get(INVALID_SINCE_LABEL):
        raise TokenError("token has been invalidated")
    return UserInfo(
        service_account_username(namespace, account_name),
        uid,
        (SERVICE_ACCOUNTS_GROUP, f"{SERVICE_ACCOUNTS_GROUP}:{namespace}"),
    )


_LEGACY_NAMES = {
    "namespace": "namespace",
    "secret.name": "secretName",
    "service-account.name": "serviceAccountName",
    "service-account.uid": "serviceAccountUID",
}
"""The legacy private claims (after `kubernetes.io/serviceaccount/`), and legacy.go's names for
them."""


def _decoded(value: Any) -> bytes:
    try:
        return base64.b64decode(value, validate=True) if isinstance(value, str) else b""
    except (binascii.Error, ValueError):
        return b""

"""Secret (v1): defaulting, conversion of `stringData` and validation as Kubernetes v1.32
(pkg/apis/core/v1/defaults.go SetDefaults_Secret, conversion.go Convert_v1_Secret_To_core_Secret,
pkg/apis/core/validation ValidateSecret and ValidateSecretUpdate).

`data` holds base64 text on the wire and in the store (Go's []byte); decoding has already
refused text that is not base64. `stringData` is write-only: its entries replace those of
`data` of the same key as the object is decoded, and it is never stored, so a read shows them
in `data`, encoded.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from pinnace.api import field
from pinnace.api.field import FieldError, Path
from pinnace.api.kind import Kind
from pinnace.api.meta import validate_object_meta, validate_object_meta_update
from pinnace.api.names import is_config_map_key
from pinnace.api.validation import string_map, validate_immutable

MAX_SECRET_SIZE = 1024 * 1024
"""The decoded values of `data` together, in bytes (core.MaxSecretSize)."""

OPAQUE = "Opaque"
SERVICE_ACCOUNT_TOKEN = "kubernetes.io/service-account-token"
DOCKERCFG = "kubernetes.io/dockercfg"
DOCKER_CONFIG_JSON = "kubernetes.io/dockerconfigjson"
BASIC_AUTH = "kubernetes.io/basic-auth"
SSH_AUTH = "kubernetes.io/ssh-auth"
TLS = "kubernetes.io/tls"
SERVICE_ACCOUNT_NAME_KEY = "kubernetes.io/service-account.name"

_DATA = Path("data")
_IMMUTABLE_WHEN_SET = "field is immutable when `immutable` is set"
_REDACTED = "<secret contents redacted>"


def decoded(value: str) -> bytes:
    """The bytes of one `data` value (text that is not base64 reads as itself)."""
    try:
        return base64.b64decode(value)
    except (binascii.Error, ValueError):
        return value.encode()


def secret_data(secret: Any) -> dict[str, bytes]:
    """A Secret's `data`, decoded: what a container sees."""
    data = secret.get("data") if isinstance(secret, dict) else None
    if not isinstance(data, dict):
        return {}
    return {k: decoded(v) for k, v in data.items() if isinstance(v, str)}


def default_secret(secret: Any) -> None:
    """`type` defaults to Opaque; `stringData` moves into `data`, encoded."""
    if not isinstance(secret, dict):
        return
    if not secret.get("type"):
        secret["type"] = OPAQUE
    strings = secret.get("stringData")
    if not isinstance(strings, dict) or not all(isinstance(v, str) for v in strings.values()):
        return  # validation of the decoded body reports it
    del secret["stringData"]
    if not strings:
        return
    data = secret.get("data")
    if not isinstance(data, dict):
        data = secret["data"] = {}
    for key, value in strings.items():
        data[key] = base64.b64encode(value.encode()).decode()


def _json_object_error(content: bytes) -> str | None:
    """Why `content` is not a JSON object, worded as Go's json.Unmarshal into a map."""
    if not content.strip():
        return "unexpected end of JSON input"
    try:
        value = json.loads(content)
    except ValueError:
        first = content.strip()[:1].decode(errors="replace")
        return f"invalid character '{first}' looking for beginning of value"
    if isinstance(value, dict):
        return None
    kind = {list: "array", str: "string", bool: "bool"}.get(type(value), "number")
    if value is None:
        return None  # null unmarshals into a map as nothing
    return f"json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"


def _validate_type(secret: dict[str, Any], data: dict[str, bytes]) -> list[FieldError]:
    """The keys each well-known type requires."""
    kind = secret.get("type") or ""
    if kind == SERVICE_ACCOUNT_TOKEN:
        annotations = (secret.get("metadata") or {}).get("annotations") or {}
        if not annotations.get(SERVICE_ACCOUNT_NAME_KEY):
            path = Path("metadata", "annotations").key(SERVICE_ACCOUNT_NAME_KEY)
            return [field.required(path)]
    elif kind in (DOCKERCFG, DOCKER_CONFIG_JSON):
        key = ".dockercfg" if kind == DOCKERCFG else ".dockerconfigjson"
        if key not in data:
            return [field.required(_DATA.key(key))]
        error = _json_object_error(data[key])
        if error is not None:
            return [field.invalid(_DATA.key(key), _REDACTED, error)]
    elif kind == BASIC_AUTH:
        if "username" not in data and "password" not in data:
            return [field.required(_DATA.key("username")), field.required(_DATA.key("password"))]
    elif kind == SSH_AUTH:
        if not data.get("ssh-privatekey"):
            return [field.required(_DATA.key("ssh-privatekey"))]
    elif kind == TLS:
        return [field.required(_DATA.key(k)) for k in ("tls.crt", "tls.key") if k not in data]
    return []


def validate_secret(secret: Any) -> list[FieldError]:
    errs = validate_object_meta(secret, namespaced=True)
    if not isinstance(secret, dict):
        return errs
    encoded, e = string_map(secret.get("data"), _DATA)
    errs += e
    data = {k: decoded(v) for k, v in encoded.items()}
    total = 0
    for key, value in data.items():
        errs += [field.invalid(_DATA.key(key), key, m) for m in is_config_map_key(key)]
        total += len(value)
    if total > MAX_SECRET_SIZE:
        errs.append(field.too_long(_DATA, "", MAX_SECRET_SIZE))
    return errs + _validate_type(secret, data)


def validate_secret_update(new: Any, old: Any) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    if not isinstance(new, dict) or not isinstance(old, dict):
        return errs
    errs += validate_immutable(new.get("type"), old.get("type"), Path("type"))
    if old.get("immutable") is True:
        if new.get("immutable") is not True:
            errs.append(field.forbidden(Path("immutable"), _IMMUTABLE_WHEN_SET))
        if secret_data(new) != secret_data(old):
            errs.append(field.forbidden(_DATA, _IMMUTABLE_WHEN_SET))
    return errs + validate_secret(new)


SECRET = Kind(
    group="",
    version="v1",
    kind="Secret",
    plural="secrets",
    namespaced=True,
    model="V1Secret",
    default=default_secret,
    validate=validate_secret,
    validate_update=validate_secret_update,
)

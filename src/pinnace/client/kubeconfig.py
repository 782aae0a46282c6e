"""What a kubeconfig says about reaching a cluster, read as client-go's clientcmd reads it
(staging/src/k8s.io/client-go/tools/clientcmd): the current context's (or a named one's)
cluster, its `server` and how to trust it (`certificate-authority-data`,
`certificate-authority`, `insecure-skip-tls-verify`), and its user's credentials
(`client-certificate[-data]` with `client-key[-data]`, `token` or `tokenFile`). File paths are
relative to the kubeconfig's directory, as clientcmd resolves them.

Exec plugins and auth providers are not read: Pinnace's components authenticate with the
certificates and tokens `pinnace up` writes.
"""

from __future__ import annotations

import base64
import os
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


class KubeconfigError(ValueError):
    """A kubeconfig that cannot be used, in a sentence naming it."""


@dataclass(frozen=True)
class RestConfig:
    """Where the API server is and how to talk to it (client-go's rest.Config)."""

    server: str
    tls: ssl.SSLContext | None = None
    """For an https server: the trust and the client certificate."""
    token: str = ""


def load_kubeconfig(path: str | os.PathLike[str], context: str = "") -> RestConfig:
    """The RestConfig of the kubeconfig at `path`, for `context` (its current one if empty)."""
    path = Path(path).expanduser()
    try:
        config = yaml.safe_load(path.read_text()) or {}
    except OSError as e:
        raise KubeconfigError(f"cannot read kubeconfig {path}: {e.strerror}") from None
    except yaml.YAMLError:
        raise KubeconfigError(f"kubeconfig {path} is not valid YAML") from None
    if not isinstance(config, dict):
        raise KubeconfigError(f"kubeconfig {path} is not a Config")
    name = context or config.get("current-context") or ""
    chosen = _named(config, "contexts", name, "context")
    if chosen is None:
        raise KubeconfigError(f'kubeconfig {path}: context "{name}" does not exist')
    cluster = _named(config, "clusters", chosen.get("cluster", ""), "cluster") or {}
    if not cluster.get("server"):
        raise KubeconfigError(f"kubeconfig {path}: the context names no cluster with a server")
    user = _named(config, "users", chosen.get("user", ""), "user") or {}
    base = path.parent
    try:
        tls = _tls(cluster, user, base) if cluster["server"].startswith("https:") else None
        token = str(user.get("token") or "")
        if not token and user.get("tokenFile"):
            token = (base / user["tokenFile"]).read_text().strip()
    except (OSError, ValueError, ssl.SSLError) as e:
        raise KubeconfigError(f"kubeconfig {path}: {e}") from None
    return RestConfig(str(cluster["server"]).rstrip("/"), tls, token)


def _named(config: Mapping[str, Any], section: str, name: str, field: str) -> Any:
    for entry in config.get(section) or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            return entry.get(field) or {}
    return None


def _tls(cluster: Mapping[str, Any], user: Mapping[str, Any], base: Path) -> ssl.SSLContext:
    # Verifying, and trusting only the cluster's CA when one is given (client-go's RootCAs),
    # else the system's.
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if cluster.get("insecure-skip-tls-verify"):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    elif cluster.get("certificate-authority-data"):
        ca = base64.b64decode(cluster["certificate-authority-data"]).decode()
        context.load_verify_locations(cadata=ca)
    elif cluster.get("certificate-authority"):
        context.load_verify_locations(cafile=base / cluster["certificate-authority"])
    else:
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    cert = _pem(user, "client-certificate", base)
    key = _pem(user, "client-key", base)
    if cert and key:
        _load_pair(context, cert, key)
    return context


def _pem(user: Mapping[str, Any], field: str, base: Path) -> bytes:
    if user.get(f"{field}-data"):
        return base64.b64decode(user[f"{field}-data"])
    if user.get(field):
        return (base / user[field]).read_bytes()
    return b""


def _load_pair(context: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    """Load a client certificate and key held in memory (the ssl module reads them only from
    files): through a private temporary file, removed at once."""
    with tempfile.NamedTemporaryFile("wb", suffix=".pem") as f:  # mode 0600
        f.write(cert + b"\n" + key)
        f.flush()
        context.load_cert_chain(f.name)

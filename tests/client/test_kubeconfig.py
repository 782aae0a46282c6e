"""Reading a kubeconfig as clientcmd does: the current or a named context, the CA and client
certificate from files (relative to the kubeconfig) or data, and tokens."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml

from pinnace.apiserver.auth import certs
from pinnace.client.kubeconfig import KubeconfigError, load_kubeconfig


def write(path: Path, cluster: dict, user: dict, context: str = "c") -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "k", "cluster": cluster}],
                "users": [{"name": "u", "user": user}],
                "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
                "current-context": context,
            }
        )
    )
    return path


def test_files_relative_to_the_kubeconfig_and_a_token_file(tmp_path: Path) -> None:
    ca = certs.ensure_ca(tmp_path / "pki")
    client = certs.issue_client(ca, tmp_path / "pki", "me", "system:kube-scheduler")
    (tmp_path / "token").write_text("secret\n")
    config = load_kubeconfig(
        write(
            tmp_path / "kubeconfig",
            {"server": "https://127.0.0.1:6443/", "certificate-authority": "pki/ca.crt"},
            {
                "client-certificate": "pki/me.crt",
                "client-key": str(client.key),
                "tokenFile": "token",
            },
        )
    )
    assert config.server == "https://127.0.0.1:6443"
    assert config.tls is not None and len(config.tls.get_ca_certs()) == 1
    assert config.token == "secret"


def test_embedded_data_and_a_plain_server(tmp_path: Path) -> None:
    ca = certs.ensure_ca(tmp_path)
    data = base64.b64encode(ca.cert.read_bytes()).decode()
    secure = load_kubeconfig(
        write(tmp_path / "a", {"server": "https://h:1", "certificate-authority-data": data}, {})
    )
    assert secure.tls is not None and len(secure.tls.get_ca_certs()) == 1
    plain = load_kubeconfig(write(tmp_path / "b", {"server": "http://h:1"}, {"token": "t"}))
    assert plain.tls is None and plain.token == "t"


def test_a_missing_context_or_server_is_said(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match='context "other" does not exist'):
        load_kubeconfig(write(tmp_path / "a", {"server": "http://h:1"}, {}, context="other"))
    with pytest.raises(KubeconfigError, match="names no cluster with a server"):
        load_kubeconfig(write(tmp_path / "b", {}, {}))
    with pytest.raises(KubeconfigError, match="cannot read kubeconfig"):
        load_kubeconfig(tmp_path / "missing")

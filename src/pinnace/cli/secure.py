"""`pinnace up --tls`: its flags (kube-apiserver's where they exist), the certificates it serves
with and the authenticators they configure (docs/security.md).

With --tls (or any of kube-apiserver's TLS and authentication flags) the API is served over
HTTPS with the cluster CA kept in the data directory's `pki/`, every request is authenticated
(client certificates, `--token-auth-file`, anonymous) and authorized (`--authorization-mode`,
RBAC by default), and the kubeconfig trusts the CA and authenticates as kubeadm's admin.conf
does. Without it, serving plain HTTP beyond loopback is refused unless --insecure.
"""

from __future__ import annotations

import argparse
import base64
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pinnace.api.rbac.kinds import CLUSTER_ROLE_BINDING, GROUP
from pinnace.api.status import StatusError
from pinnace.apiserver.admission.pod_security_levels import (
    Configuration as PodSecurityConfiguration,
)
from pinnace.apiserver.auth import certs
from pinnace.apiserver.auth.authentication import (
    Authenticator,
    TokenCache,
    TokenFileError,
    load_token_file,
)
from pinnace.apiserver.auth.authorizer import MODES, RBAC
from pinnace.apiserver.auth.security import Security
from pinnace.apiserver.auth.tokens import DEFAULT_ISSUER
from pinnace.apiserver.server import APIServer
from pinnace.apiserver.token_request import MAX_EXPIRATION
from pinnace.cli.admission_config import admission_control_config_file
from pinnace.cli.arguments import go_bool, positive_duration

PKI_DIR = "pki"
COMPONENT_KUBECONFIGS = {
    "scheduler.conf": ("kube-scheduler", "system:kube-scheduler", ()),
    "controller-manager.conf": (
        "kube-controller-manager",
        "system:kube-controller-manager",
        # Its controllers' own roles are bound to their service accounts, whose credentials
        # (kube-controller-manager's --use-service-account-credentials) Pinnace does not
        # issue: it is trusted as the controllers inside `pinnace up` are.
        (certs.ADMIN_GROUP,),
    ),
    "agent.conf": (
        "pinnace-agent",
        "system:pinnace:node-agent",
        # One credential for a process of many nodes: each node's requests impersonate the
        # node (system:node:<name>), which RBAC cannot grant for a name prefix only.
        (certs.ADMIN_GROUP,),
    ),
}
"""The kubeconfigs of the components run as processes, as kubeadm writes them beside
admin.conf (cmd/kubeadm/app/phases/kubeconfig), and `pinnace agent`'s: file -> (certificate,
user, groups)."""


class SecureServingError(Exception):
    """A TLS or authentication setting `pinnace up` cannot start with, in a sentence."""


def add_flags(group: argparse._ArgumentGroup) -> None:
    group.add_argument(
        "--tls",
        action="store_true",
        help="serve HTTPS with the cluster CA kept in the data directory (pki/), authenticate "
        "every request and authorize it with RBAC; the kubeconfig trusts the CA and holds an "
        "admin client certificate (implied by the flags below)",
    )
    group.add_argument("--tls-cert-file", metavar="FILE", help="the serving certificate (PEM)")
    group.add_argument(
        "--tls-private-key-file", metavar="FILE", help="the serving certificate's key (PEM)"
    )
    group.add_argument(
        "--client-ca-file",
        metavar="FILE",
        help="CA bundle that signs client certificates (default: the cluster CA)",
    )
    group.add_argument(
        "--token-auth-file",
        metavar="FILE",
        help='static bearer tokens, one per line: token,user,uid,"group1,group2"',
    )
    group.add_argument(
        "--authorization-mode",
        type=_authorization_modes,
        default=(RBAC,),
        metavar="MODES",
        help=f"comma-separated authorizers among {', '.join(MODES)} (RBAC)",
    )
    group.add_argument(
        "--anonymous-auth",
        type=go_bool,
        default=True,
        metavar="BOOL",
        help="serve requests without credentials as system:anonymous (true)",
    )
    group.add_argument(
        "--service-account-issuer",
        default=DEFAULT_ISSUER,
        metavar="URL",
        help=f"the `iss` of service account tokens, and the API audience ({DEFAULT_ISSUER})",
    )
    group.add_argument(
        "--service-account-max-token-expiration",
        type=_max_token_expiration,
        default=0,
        metavar="DURATION",
        help="the longest a TokenRequest may ask a token to last, between 1h and 2^32s "
        "(no limit); a Go duration such as 48h",
    )
    group.add_argument(
        "--admission-control-config-file",
        type=admission_control_config_file,
        default=PodSecurityConfiguration(),
        metavar="FILE",
        help="an AdmissionConfiguration whose PodSecurity entry gives the Pod Security defaults "
        "of unlabelled namespaces and the exempt usernames, namespaces and runtimeClasses",
    )
    group.add_argument(
        "--insecure",
        action="store_true",
        help="allow serving plain HTTP with no authentication on an address other machines "
        "can reach (refused without it): anyone who can connect can change everything",
    )


def _max_token_expiration(text: str) -> int:
    """kube-apiserver's bounds for --service-account-max-token-expiration."""
    seconds = positive_duration("48h")(text)
    if not 60 * 60 <= seconds <= MAX_EXPIRATION:
        raise argparse.ArgumentTypeError(
            "the service-account-max-token-expiration must be between 1 hour and 2^32 seconds"
        )
    return int(seconds)


def _authorization_modes(text: str) -> tuple[str, ...]:
    modes = tuple(m.strip() for m in text.split(",") if m.strip())
    if not modes or any(m not in MODES for m in modes):
        raise argparse.ArgumentTypeError(f"must be among {', '.join(MODES)}, not {text!r}")
    return modes


@dataclass(frozen=True)
class TLSOptions:
    """Secure serving: certificates (made in the data directory when not given),
    authentication and authorization."""

    cert_file: str | None = None
    key_file: str | None = None
    client_ca_file: str | None = None
    token_auth_file: str | None = None
    authorization_modes: tuple[str, ...] = (RBAC,)
    anonymous: bool = True


def tls_options(args: argparse.Namespace) -> TLSOptions | None:
    """The flags' TLS options; None for plain HTTP; SecureServingError for a bad mix."""
    files = (args.tls_cert_file, args.tls_private_key_file)
    if not args.tls and not any((*files, args.client_ca_file, args.token_auth_file)):
        return None
    if bool(args.tls_cert_file) != bool(args.tls_private_key_file):
        raise SecureServingError("--tls-cert-file and --tls-private-key-file go together")
    return TLSOptions(
        cert_file=args.tls_cert_file,
        key_file=args.tls_private_key_file,
        client_ca_file=args.client_ca_file,
        token_auth_file=args.token_auth_file,
        authorization_modes=args.authorization_mode,
        anonymous=args.anonymous_auth,
    )


def refusal(host: str) -> str:
    return (
        f"refusing to serve {host} without TLS and authentication: give --tls (or --insecure "
        "to let anyone who can connect change everything)"
    )


@dataclass(frozen=True)
class SecureServing:
    """What TLS serving uses: the CA, the serving pair, the admin's client pair and who may
    do what."""

    ca: certs.KeyPair
    serving: certs.KeyPair
    client_ca: str
    admin: certs.KeyPair
    security: Security
    components: dict[str, certs.KeyPair]
    """Each component kubeconfig's client certificate (`COMPONENT_KUBECONFIGS`)."""
    kubelet_client: certs.KeyPair
    """What the API server presents to the kubelets of `pinnace agent` processes
    (kube-apiserver's --kubelet-client-certificate, kubeadm's apiserver-kubelet-client)."""

    def kubelet_tls(self) -> ssl.SSLContext:
        """The API server's TLS to kubelets: its client certificate, and no verification of
        theirs, as kube-apiserver without --kubelet-certificate-authority."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        context.load_cert_chain(self.kubelet_client.cert, self.kubelet_client.key)
        return context

    def uvicorn_options(self) -> dict[str, Any]:
        return {
            "ssl_certfile": str(self.serving.cert),
            "ssl_keyfile": str(self.serving.key),
            "ssl_ca_certs": self.client_ca,
            # A client certificate is asked for, not required: tokens and anonymous requests
            # come without one, as with kube-apiserver's RequestClientCert.
            "ssl_cert_reqs": ssl.CERT_OPTIONAL,
        }

    def kubeconfig_entries(
        self, client: certs.KeyPair | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """(what the kubeconfig's cluster adds, its user): kubeadm's admin.conf, or another
        of its kubeconfigs with the `client` certificate."""
        cert, key = (client or self.admin).pem()
        return (
            {"certificate-authority-data": _base64(self.ca.cert.read_bytes())},
            {"client-certificate-data": _base64(cert), "client-key-data": _base64(key)},
        )


async def ensure_cluster_admins(server: APIServer) -> None:
    """kubeadm init's ClusterRoleBinding of its `kubeadm:cluster-admins` group to
    cluster-admin (kubeadm's EnsureAdminClusterRoleBinding), which the API server's kubelet
    client certificate is in: a kubelet (`pinnace agent`) lets it open sessions because RBAC
    allows it nodes/proxy."""
    binding = {
        "metadata": {"name": CLUSTER_ADMINS},
        "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": "cluster-admin"},
        "subjects": [{"apiGroup": GROUP, "kind": "Group", "name": CLUSTER_ADMINS}],
    }
    try:
        await server.create(CLUSTER_ROLE_BINDING, "", binding)
    except StatusError as e:
        if e.code != 409:  # there already, from an earlier start
            raise


def _base64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


CLUSTER_ADMINS = "kubeadm:cluster-admins"


def secure_serving(tls: TLSOptions, directory: Path, host: str, server: APIServer) -> SecureServing:
    """The certificates in `directory` (made when missing) and the authenticators the flags
    ask for (and the server's service account tokens); SecureServingError for a token file
    kube-apiserver would refuse."""
    ca = certs.ensure_ca(directory)
    if tls.cert_file and tls.key_file:
        serving = certs.KeyPair(Path(tls.cert_file), Path(tls.key_file))
    else:
        serving = certs.issue_serving(ca, directory, certs.serving_hosts(host))
    admin = certs.ensure_client(ca, directory, "admin", certs.ADMIN_USER, [certs.ADMIN_GROUP])
    components = {
        file: certs.ensure_client(ca, directory, stem, user, groups)
        for file, (stem, user, groups) in COMPONENT_KUBECONFIGS.items()
    }
    kubelet_client = certs.ensure_client(
        ca, directory, "apiserver-kubelet-client", "kube-apiserver-kubelet-client",
        [CLUSTER_ADMINS],
    )  # fmt: skip
    try:
        tokens = load_token_file(tls.token_auth_file) if tls.token_auth_file else {}
    except TokenFileError as e:
        raise SecureServingError(f"--token-auth-file: {e}") from None
    authorizer = server.authorizer
    authorizer.modes = tls.authorization_modes
    authenticator = Authenticator(
        tokens,
        anonymous=tls.anonymous,
        service_accounts=server.authenticate_service_account,
        api_audiences=server.service_account_tokens.audiences,
        cache=TokenCache(server.clock.now),
    )
    security = Security(authorizer, authenticator)
    client_ca = tls.client_ca_file or str(ca.cert)
    return SecureServing(ca, serving, client_ca, admin, security, components, kubelet_client)

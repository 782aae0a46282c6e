"""The files every container of a pod has in /etc though no volume gives them: `hosts`, which
the kubelet writes (kubelet_pods.go: ensureHostsFile, managedHostsFileContent), and
`hostname` and `resolv.conf`, which the runtime writes into the sandbox from what the kubelet
gives it (GeneratePodHostNameAndDomain; network/dns/dns.go: GetPodDNS; containerd's
parseDNSOptions).

- hosts: `# Kubernetes-managed hosts file.`, the localhost lines, the pod's IP with its
  hostname (`hostname.subdomain.namespace.svc.cluster.local hostname` when spec.subdomain is
  set), then `# Entries added by HostAliases.` and a line per spec.hostAliases entry. A
  hostNetwork pod gets the node's hosts file (the simulated node's has the localhost lines)
  with the aliases.
- hostname: spec.hostname or the pod's name, cut to 63 characters without a trailing `-` or
  `.`; with setHostnameAsFQDN and a subdomain, the fully qualified name (what `hostname`
  prints too).
- resolv.conf: by spec.dnsPolicy. ClusterFirst (a hostNetwork pod's falls back to Default) and
  ClusterFirstWithHostNet: `search <ns>.svc.cluster.local svc.cluster.local cluster.local`,
  `nameserver` the cluster DNS Service's IP (`CLUSTER_DNS`), `options ndots:5`. Default: the
  node's resolver, and the simulated kubelet has no resolvConf file, so `search .` and
  `nameserver 127.0.0.1`. None: nothing but spec.dnsConfig, which the others are merged with
  (nameservers and searches appended without repeats, options overriding by name).

They are written once, when the pod's first container is set up, and the pod's containers
share them: a container may write them (none is read-only in v1.32), and what it writes stays
for the pod's life.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from typing import Any

from pinnace.kubelet.volumes import WritableFiles
from pinnace.kubelet.web import CLUSTER_DOMAIN

CLUSTER_DNS = "10.96.0.10"
"""The kubelet's clusterDNS: kubeadm's default, the tenth address of the default Service
range."""
_HOSTNAME_MAX = 63
_LOCALHOST = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
_MANAGED = (
    "# Kubernetes-managed hosts file.\n"
    + _LOCALHOST
    + "fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\n"
    + "fe00::2\tip6-allrouters\n"
)


def hostname_and_domain(pod: Mapping[str, Any]) -> tuple[str, str]:
    """GeneratePodHostNameAndDomain: the pod's hostname (truncated as
    truncatePodHostnameIfNeeded does) and its domain ("" without a subdomain)."""
    spec = pod.get("spec") or {}
    metadata = pod.get("metadata") or {}
    hostname = str(spec.get("hostname") or metadata.get("name") or "")
    if len(hostname) > _HOSTNAME_MAX:
        hostname = hostname[:_HOSTNAME_MAX].rstrip("-.")
    subdomain = spec.get("subdomain")
    if not subdomain:
        return hostname, ""
    return hostname, f"{subdomain}.{metadata.get('namespace', '')}.svc.{CLUSTER_DOMAIN}"


def container_hostname(pod: Mapping[str, Any]) -> str:
    """What `hostname` prints in the pod's containers (GetPodHostnameForContainer's FQDN when
    setHostnameAsFQDN is set and there is a domain)."""
    hostname, domain = hostname_and_domain(pod)
    if (pod.get("spec") or {}).get("setHostnameAsFQDN") and domain:
        return f"{hostname}.{domain}"
    return hostname


def hosts_file(pod: Mapping[str, Any], pod_ip: str) -> str:
    """/etc/hosts: managedHostsFileContent, or the node's for a hostNetwork pod."""
    spec = pod.get("spec") or {}
    if spec.get("hostNetwork"):
        content = _LOCALHOST
    else:
        hostname, domain = hostname_and_domain(pod)
        names = f"{hostname}.{domain}\t{hostname}" if domain else hostname
        content = f"{_MANAGED}{pod_ip}\t{names}\n"
    aliases = spec.get("hostAliases") or ()
    if aliases:
        content += "\n# Entries added by HostAliases.\n" + "".join(
            f"{alias.get('ip', '')}\t{chr(9).join(alias.get('hostnames') or ())}\n"
            for alias in aliases
        )
    return content


def resolv_conf(pod: Mapping[str, Any]) -> str:
    """/etc/resolv.conf: GetPodDNS's servers, searches and options as containerd writes them."""
    spec = pod.get("spec") or {}
    policy = spec.get("dnsPolicy") or "ClusterFirst"
    servers: list[str] = []
    searches: list[str] = []
    options: dict[str, str] = {}
    if policy == "ClusterFirstWithHostNet" or (
        policy == "ClusterFirst" and not spec.get("hostNetwork")
    ):
        namespace = (pod.get("metadata") or {}).get("namespace", "")
        servers = [CLUSTER_DNS]
        searches = [f"{namespace}.svc.{CLUSTER_DOMAIN}", f"svc.{CLUSTER_DOMAIN}", CLUSTER_DOMAIN]
        options = {"ndots": "5"}
    elif policy != "None":  # Default: no resolvConf file on the simulated node
        servers, searches = ["127.0.0.1"], ["."]
    config = spec.get("dnsConfig") or {}
    servers = _without_repeats([*servers, *(config.get("nameservers") or ())])
    searches = _without_repeats([*searches, *(config.get("searches") or ())])
    for option in config.get("options") or ():
        options[str(option.get("name", ""))] = str(option.get("value") or "")
    lines = []
    if searches:
        lines.append("search " + " ".join(searches))
    lines += [f"nameserver {server}" for server in servers]
    if options:
        lines.append("options " + " ".join(f"{k}:{v}" if v else k for k, v in options.items()))
    return "".join(line + "\n" for line in lines)


def _without_repeats(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


def etc_files(pod: Mapping[str, Any], pod_ip: str) -> WritableFiles:
    """The pod's /etc files, relative to /etc."""
    files = WritableFiles()
    files["hosts"] = hosts_file(pod, pod_ip)
    files["hostname"] = container_hostname(pod) + "\n"
    files["resolv.conf"] = sys.intern(resolv_conf(pod))  # one for a namespace's pods
    return files

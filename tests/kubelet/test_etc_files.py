"""/etc/hosts, /etc/hostname and /etc/resolv.conf in a simulated container, as the kubelet and
the runtime write them from the pod's spec (hostname, subdomain, hostAliases, dnsPolicy,
dnsConfig)."""

from __future__ import annotations

from tests.client.conftest import CONFIG_MAPS, config_map
from tests.kubelet.conftest import Node, pod
from tests.kubelet.test_environment import printed, running

_BUSYBOX = {"image": "busybox", "command": ["sh", "-c"]}
_LOCALHOST = [
    "# Kubernetes-managed hosts file.",
    "127.0.0.1\tlocalhost",
    "::1\tlocalhost ip6-localhost ip6-loopback",
    "fe00::0\tip6-localnet",
    "fe00::0\tip6-mcastprefix",
    "fe00::1\tip6-allnodes",
    "fe00::2\tip6-allrouters",
]


def cat(node: Node, name: str, path: str, **spec: object) -> list[str]:
    return running(node, name, {**_BUSYBOX, "args": [f"cat {path}; sleep 3600"]}, **spec)


def test_a_plain_pod_has_its_name_its_ip_and_the_cluster_dns(node: Node) -> None:
    lines = cat(node, "plain", "/etc/hostname /etc/resolv.conf /etc/hosts")
    assert lines == [
        "plain",
        "search default.svc.cluster.local svc.cluster.local cluster.local",
        "nameserver 10.96.0.10",
        "options ndots:5",
        *_LOCALHOST,
        f"{node.get_pod('plain')['status']['podIP']}\tplain",
    ]


def test_a_subdomain_and_host_aliases_name_the_pod_in_its_hosts_file(node: Node) -> None:
    aliases = [
        {"ip": "127.0.0.1", "hostnames": ["foo.local", "bar.local"]},
        {"ip": "10.1.2.3", "hostnames": ["foo.remote"]},
    ]
    lines = cat(
        node,
        "web-0",
        "/etc/hosts /etc/hostname",
        hostname="db",
        subdomain="backend",
        hostAliases=aliases,
    )
    ip = node.get_pod("web-0")["status"]["podIP"]
    assert lines == [
        *_LOCALHOST,
        f"{ip}\tdb.backend.default.svc.cluster.local\tdb",
        "",
        "# Entries added by HostAliases.",
        "127.0.0.1\tfoo.local\tbar.local",
        "10.1.2.3\tfoo.remote",
        "db",
    ]


def test_set_hostname_as_fqdn_names_the_container_by_its_full_name(node: Node) -> None:
    command = {**_BUSYBOX, "args": ["cat /etc/hostname; hostname; sleep 3600"]}
    fqdn = "fqdn.sub.default.svc.cluster.local"
    assert running(node, "fqdn", command, subdomain="sub", setHostnameAsFQDN=True) == [fqdn, fqdn]


def test_a_long_pod_name_is_cut_to_a_63_character_hostname(node: Node) -> None:
    name = "a" * 62 + "-b"
    assert cat(node, name, "/etc/hostname") == ["a" * 62]


def test_dns_policy_and_dns_config_make_the_resolv_conf(node: Node) -> None:
    config = {
        "nameservers": ["1.2.3.4", "10.96.0.10"],
        "searches": ["ns1.svc.cluster-domain.example", "cluster.local"],
        "options": [{"name": "ndots", "value": "2"}, {"name": "edns0"}],
    }
    assert cat(node, "merged", "/etc/resolv.conf", dnsConfig=config) == [
        "search default.svc.cluster.local svc.cluster.local cluster.local"
        " ns1.svc.cluster-domain.example",
        "nameserver 10.96.0.10",
        "nameserver 1.2.3.4",
        "options ndots:2 edns0",
    ]
    assert cat(node, "none", "/etc/resolv.conf", dnsPolicy="None", dnsConfig=config) == [
        "search ns1.svc.cluster-domain.example cluster.local",
        "nameserver 1.2.3.4",
        "nameserver 10.96.0.10",
        "options ndots:2 edns0",
    ]
    # Default: the node's resolver; the simulated kubelet has no resolvConf file.
    assert cat(node, "default", "/etc/resolv.conf", dnsPolicy="Default") == [
        "search .",
        "nameserver 127.0.0.1",
    ]


def test_the_pods_containers_share_the_files_and_may_write_them(node: Node) -> None:
    body = pod("shared", node="node-1")
    writer = {
        **_BUSYBOX,
        "args": ["echo '10.0.0.9 extra' >> /etc/hosts; echo mine > /etc/mine; sleep 3600"],
    }
    reader = {"name": "app", **_BUSYBOX, "args": ["cat /etc/hosts; ls /etc; sleep 3600"]}
    body["spec"]["containers"] = [{"name": "writer", **writer}, reader]  # started in order
    node.create_pod(body)
    node.settle()
    # The three files are mounted from the pod; what else a container writes under /etc is
    # its own layer's.
    assert printed(node, "shared")[-4:] == ["10.0.0.9 extra", "hostname", "hosts", "resolv.conf"]


def test_a_file_mounted_by_sub_path_into_etc_leaves_the_others_there(node: Node) -> None:
    node.run(node.client.create(CONFIG_MAPS, "default", config_map("cfg", motd="hello")))
    mount = {"name": "cfg", "mountPath": "/etc/motd", "subPath": "motd"}
    command = {
        **_BUSYBOX,
        "args": ["cat /etc/motd; echo; ls /etc; echo /et? /etc/mo*"],
        "volumeMounts": [mount],
    }
    volumes = [{"name": "cfg", "configMap": {"name": "cfg"}}]
    lines = running(node, "motd", command, volumes=volumes, restartPolicy="Never")
    assert lines == ["hello", "hostname", "hosts", "motd", "resolv.conf", "/etc /etc/motd"]

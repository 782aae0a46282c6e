"""The Pod Security Standards' checks, as k8s.io/pod-security-admission/policy in v1.32
(check_*.go, registry.go, checks.go).

Each check looks at a pod's metadata and spec and returns nothing when it allows the pod, else
its reason (`host namespaces`) and detail (`hostNetwork=true`). A check has revisions by the
policy version they start at; a policy version runs each check's newest revision not newer
than it. Baseline runs the baseline checks; restricted runs the restricted ones and the
baseline ones they do not override, baseline's first, each group in its checks' ID order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from pinnace.api.goquote import quote
from pinnace.apiserver.admission.pod_security_levels import (
    BASELINE,
    PRIVILEGED,
    LevelVersion,
)

Failure = tuple[str, str]
"""A check's forbidden reason and detail ("" for none)."""
CheckPod = Callable[[Mapping[str, Any], Mapping[str, Any]], Failure | None]


@dataclass(frozen=True)
class Check:
    id: str
    restricted: bool
    revisions: tuple[tuple[int, CheckPod], ...]
    """(first policy minor version, check), oldest first."""
    overrides: tuple[str, ...] = ()
    """The baseline checks this restricted check stands in for."""

    def at(self, minor: int) -> CheckPod | None:
        found = None
        for first, check in self.revisions:
            if first <= minor:
                found = check
        return found


def _dict(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _containers(spec: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Init containers, containers, then ephemeral containers (visitContainers)."""
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for container in _list(spec.get(field)):
            yield _dict(container)


def _security(container: Mapping[str, Any]) -> Mapping[str, Any]:
    return _dict(container.get("securityContext"))


def _pod_security(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    return _dict(spec.get("securityContext"))


def _plural(singular: str, plural: str, count: int) -> str:
    return singular if count == 1 else plural


def _join_quote(items: list[str]) -> str:
    return ", ".join(quote(item) for item in items)


def _containers_named(names: list[str]) -> str:
    return f"{_plural('container', 'containers', len(names))} {_join_quote(names)}"


def _setters(pod: bool, containers: list[str]) -> str:
    """`pod and containers "a", "b"`: who set a forbidden value."""
    setters = ["pod"] if pod else []
    if containers:
        setters.append(_containers_named(containers))
    return " and ".join(setters)


def _names(containers: list[Mapping[str, Any]]) -> list[str]:
    return [str(c.get("name", "")) for c in containers]


# --- baseline ---------------------------------------------------------------------------------

_APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"


def _app_armor_profile(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> Failure | None:
    values: set[str] = set()

    def bad(context: Mapping[str, Any]) -> bool:
        profile = context.get("appArmorProfile")
        kind = _dict(profile).get("type")
        if profile is None or kind in ("RuntimeDefault", "Localhost"):
            return False
        values.add(str(kind or ""))
        return True

    pod = bad(_pod_security(spec))
    containers = _names([c for c in _containers(spec) if bad(_security(c))])
    setters = [_setters(pod, containers)] if pod or containers else []
    annotations = sorted(
        f"{key}={quote(str(value))}"
        for key, value in _dict(meta.get("annotations")).items()
        if key.startswith(_APPARMOR_ANNOTATION)
        and value
        and value != "runtime/default"
        and not str(value).startswith("localhost/")
    )
    if annotations:
        setters.append(_plural("annotation", "annotations", len(annotations)))
    if not setters:
        return None
    bad_values = sorted(values) + annotations
    return (
        _plural("forbidden AppArmor profile", "forbidden AppArmor profiles", len(bad_values)),
        f"{' and '.join(setters)} must not set AppArmor profile type to {_join_quote(bad_values)}",
    )


_BASELINE_CAPABILITIES = frozenset(
    {
        "AUDIT_WRITE",
        "CHOWN",
        "DAC_OVERRIDE",
        "FOWNER",
        "FSETID",
        "KILL",
        "MKNOD",
        "NET_BIND_SERVICE",
        "SETFCAP",
        "SETGID",
        "SETPCAP",
        "SETUID",
        "SYS_CHROOT",
    }
)


def _added_capabilities(container: Mapping[str, Any]) -> list[str]:
    return [str(c) for c in _list(_dict(_security(container).get("capabilities")).get("add"))]


def _capabilities_baseline(_: Mapping[str, Any], spec: Mapping[str, Any]) -> Failure | None:
    containers, added = [], set()
    for container in _containers(spec):
        extra = [c for c in _added_capabilities(container) if c not in _BASELINE_CAPABILITIES]
        if extra:
            containers.append(str(container.get("name", "")))
            added.update(extra)
    if not containers:
        return None
    return (
        "non-default capabilities",
        f"{_containers_named(containers)} must not include {_join_quote(sorted(added))} in "
        "securityContext.capabilities.add",
    )


def _host_namespaces(_: Mapping[str, Any], spec: Mapping[str, Any]) -> Failure | None:
    used = [
        f"{name}=true" for name in ("hostIPC", "hostNetwork", "hostPID") if spec.get(name) is True
    ]
    return ("host namespaces", ", ".join(used)) if used else None


def _host_path_volumes(_: Mapping[str, Any], spec: Mapping[str, Any]) -> Failure | None:
    names = [
        str(_dict(v).get("name", ""))
        for v in _list(spec.get("volumes"))
        if _dict(v).get("hostPath")
    ]
    if not names:
        return None
    return ("hostPath volumes", f"{_plural('volume', 'volumes', len(names))} {_join_quote(names)}")


def _host_ports(_: Mapping[str, Any], spec: Mapping[str, Any]) -> Failure | None:
    containers: list[str] = []
    ports: set[str] = set()
    for container in _containers(spec):
        used = [_dict(p).get("hostPort") for p in _list(container.get("ports"))]
        used = [p for p in used if p]
        if used:
            containers.append(str(container.get("name", "")))
            ports.update(str(p) for p in used)
    if not containers:
        return None
    return (
        "hostPort",
        f"{_containers_named(containers)} {_plural('uses', 'use', len(containers))} "
        f"{_plural('hostPort', 'hostPorts', len(ports))} {', '.join(sorted(ports))}",
    )


def _privileged(_: Mapping[str, Any], spec: Mapping[str, Any]) -> Failure | None:
    names = _names([c for c in _containers(spec) if _security(c).get("privileged") is True])
    if not names:
        return None
    return (
        "privileged",
        f"{_containers_named(names)} must not set securityContext.privileged=true",
    )


def _proc_mount(_: Mapping[str, Any], spec: Mapping[str, Any]) -> Failure | None:
    containers, kinds = [], set()
    for container in _containers(spec):
        mount = _security(container).get("procMount")
        if mount is not None and mount != "Default":
            containers.append(str(container.get("name", "")))
            kinds.add(str(mount))
    if not containers:
        return None
    return (
        "procMount",
        f"{_containers_named(containers)} must not set securityContext.procMount to "
        f"{_join_quote(sorted(kinds))}",
    )


def _se_linux_options(allowed_types: frozenset[str]) -> CheckPod:
    def check(_: Mapping[str, Any], spec: Mapping[str, Any]) -> Failure | None:
        bad_types: set[str] = set()
        user = role = False

        def bad(context: Mapping[str, Any]) -> bool:
            nonlocal user, role
            options = context.get("seLinuxOptions")
            if options is None:
                return False
            options = _dict(options)
            valid = True
            if str(options.get("type") or "") not in allowed_types:
                valid = False
                bad_types.add(str(options.get("type") or ""))
            if options.get("user"):
                valid, user = False, True
            if options.get("role"):
                valid, role = False, True
            return not valid

        pod = bad(_pod_security(spec))
        containers = _names([c for c in _containers(spec) if bad(_security(c))])
        if not pod and not containers:
            return None
        data = []
        if bad_types:
            # As v1.32, user and role are named only beside a forbidden type.
            data.append(
                f"{_plural('type', 'types', len(bad_types))} {_join_quote(sorted(bad_types))}"
            )
            data += ["user may not be set"] if user else []
            data += ["role may not be set"] if role else []
        return (
            "seLinuxOptions",
            f"{_setters(pod, containers)} set forbidden securityContext.seLinuxOptions: "
            f"{'; '.join(data)}",
        )

    return check


_SE_LINUX_TYPES_1_0 = frozenset({"", "container_t", "container_init_t", "container_kvm_t"})
_SE_LINUX_TYPES_1_31 = _SE_LINUX_TYPES_1_0 | {"container_engine_t"}

_SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
_SECCOMP_CONTAINER_ANNOTATION = "container.seccomp.security.alpha.kubernetes.io/"


def _seccomp_annotations(meta: Mapping[str, Any], spec: Mapping[str, Any]) -> Failure | None:
    annotations = _dict(meta.get("annotations"))
    keys = [_SECCOMP_POD_ANNOTATION] + [
        _SECCOMP_CONTAINER_ANNOTATION + str(c.get("name", "")) for c in _containers(spec)
    ]
    bad = set()
    for key in keys:
        value = annotations.get(key)
        if value is None:
            continue
        value = str(value)
        if value not in ("runtime/default", "docker/default") and not value.startswith(
            "localhost/"
        ):
            bad.add(f"{key}={quote(value)}")
    if not bad:
        return None
    noun = _plural("annotation", "annotations", len(bad))
    return ("seccompProfile", f"forbidden {noun} {', '.join(sorted(bad))}")


def _seccomp_type(context: Mapping[str, Any]) -> str | None:
    profile = context.get("seccompProfile")
    return None if profile is None else str(_dict(profile).get("type") or "")


def _seccomp_valid(kind: str | None) -> bool:
    return kind in ("RuntimeDefault", "Localhost")


def _seccomp_explicitly_bad(spec: Mapping[str, Any]) -> Failure | None:
    """Who sets seccompProfile.type to something other than RuntimeDefault or Localhost."""
    values = set()
    pod_type = _seccomp_type(_pod_security(spec))
    pod = pod_type is not None and not _seccomp_valid(pod_type)
    if pod:
        values.add(str(pod_type))
    containers = []
    for container in _containers(spec):
        kind = _seccomp_type(_security(container))
        if kind is not None and not _seccomp_valid(kind):
            containers.append(str(container.get("name", "")))
            values.add(kind)
    if not pod and not containers:
        return None
    return (
        "seccompProfile",
        f"{_setters(pod, containers)} must not set securityContext.seccompProfile.type to "
        f"{_join_quote(sorted(values))}",
    )


def _seccomp_baseline(_: Mapping[str, Any], spec: Mapping[str, Any]) -> Failure | None:
    return _seccomp_explicitly_bad(spec)


_SYSCTLS_1_0 = frozenset(
    {
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_unprivileged_port_start",
    }
)
_SYSCTLS_1_27 = _SYSCTLS_1_0 | {"net.ipv4.ip_local_reserved_ports"}
_SYSCTLS_1_29 = _SYSCTLS_1_27 | {
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
}
_SYSCTLS_1_32 = _SYSCTLS_1_29 | {"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"}


def _sysctls(allowed: frozenset[str]) -> CheckPod:
    def check(_: Mapping[str, Any], spec: Mapping[str, Any]) -> Failure | None:
        names = [str(_dict(s).get("name", "")) for s in _list(_pod_security(spec).get("sysctls"))]
        bad = [name for name in names if name not in allowed]
        return ("forbidden sysctls", ", ".join(bad)) if bad else None

    return check


def _windows_host_process(_: Mapping[str, Any], spec: Mapping[str, Any]) -> Failure | None:
    def host_process(context: Mapping[str, Any]) -> bool:
        return _dict(context.get("windowsOptions")).get("hostProcess") is True

    containers = _names([c for c in _containers(spec) if host_process(_security(c))])
    pod = host_process(_pod_security(spec))
    if not pod and not containers:
        return None
    return (
        "hostProcess",
        f"{_setters(pod, containers)} must not set securityContext.windowsOptions.hostProcess=true",
    )


# --- restricted -------------------------------------------------------------------------------


def _allow_privilege_escalation(_: Mapping[str, Any], spec: Mapping[str, Any]) -> Failure | None:
    names = _names(
        [c for c in _containers(spec) if _security(c).get("allowPrivilegeEscalation") is not False]
    )
    if not names:
        return None
    return (
        "allowPrivilegeEscalation != false",
        f"{_containers_named(names)} must set securityContext.allowPrivilegeEscalation=false",
    )


def _capabilities_restricted(_: Mapping[str, Any], spec: Mapping[str, Any]) -> Failure | None:
    missing_drop_all, adding, added = [], [], set()
    for container in _containers(spec):
        name = str(container.get("name", ""))
        capabilities = _security(container).get("capabilities")
        if capabilities is None:
            missing_drop_all.append(name)
            continue
        if "ALL" not in [str(c) for c in _list(_dict(capabilities).get("drop"))]:
            missing_drop_all.append(name)
        extra = [c for c in _added_capabilities(container) if c != "NET_BIND_SERVICE"]
        if extra:
            adding.append(name)
            added.update(extra)
    details = []
    if missing_drop_all:
        details.append(
            f"{_containers_named(missing_drop_all)} must set "
            'securityContext.capabilities.drop=["ALL"]'
        )
    if adding:
        details.append(
            f"{_containers_named(adding)} must not include {_join_quote(sorted(added))} in "
            "securityContext.capabilities.add"
        )
    return ("unrestricted capabilities", "; ".join(details)) if details else None


_ALLOWED_VOLUME_SOURCES = (
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
)
_RESTRICTED_VOLUME_SOURCES = (
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "nfs",
    "iscsi",
    "glusterfs",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "fc",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "storageos",
)


def _restricted_volumes(_: Mapping[str, Any], spec: Mapping[str, Any]) -> Failure | None:
    names, kinds = [], set()
    for volume in _list(spec.get("volumes")):
        volume = _dict(volume)
        if any(volume.get(source) is not None for source in _ALLOWED_VOLUME_SOURCES):
            continue
        names.append(str(volume.get("name", "")))
        kind = next((s for s in _RESTRICTED_VOLUME_SOURCES if volume.get(s) is not None), None)
        kinds.add(kind or "unknown")
    if not names:
        return None
    return (
        "restricted volume types",
        f"{_plural('volume', 'volumes', len(names))} {_join_quote(names)} "
        f"{_plural('uses', 'use', len(names))} "
        f"{_plural('restricted volume type', 'restricted volume types', len(kinds))} "
        f"{_join_quote(sorted(kinds))}",
    )


def _run_as_non_root(_: Mapping[str, Any], spec: Mapping[str, Any]) -> Failure | None:
    pod_value = _pod_security(spec).get("runAsNonRoot")
    explicitly_bad, implicitly_bad = [], []
    for container in _containers(spec):
        value = _security(container).get("runAsNonRoot")
        name = str(container.get("name", ""))
        if value is not None:
            if value is False:
                explicitly_bad.append(name)
        elif pod_value is not True:
            implicitly_bad.append(name)
    if pod_value is False or explicitly_bad:
        return (
            "runAsNonRoot != true",
            f"{_setters(pod_value is False, explicitly_bad)} must not set "
            "securityContext.runAsNonRoot=false",
        )
    if implicitly_bad:
        return (
            "runAsNonRoot != true",
            f"pod or {_containers_named(implicitly_bad)} must set "
            "securityContext.runAsNonRoot=true",
        )
    return None


def _run_as_user(_: Mapping[str, Any], spec: Mapping[str, Any]) -> Failure | None:
    pod = _pod_security(spec).get("runAsUser") == 0
    containers = _names([c for c in _containers(spec) if _security(c).get("runAsUser") == 0])
    if not pod and not containers:
        return None
    return ("runAsUser=0", f"{_setters(pod, containers)} must not set runAsUser=0")


def _seccomp_restricted(_: Mapping[str, Any], spec: Mapping[str, Any]) -> Failure | None:
    explicit = _seccomp_explicitly_bad(spec)
    if explicit is not None:
        return explicit
    if _seccomp_valid(_seccomp_type(_pod_security(spec))):
        return None
    unset = _names([c for c in _containers(spec) if _seccomp_type(_security(c)) is None])
    if not unset:
        return None
    return (
        "seccompProfile",
        f"pod or {_containers_named(unset)} must set securityContext.seccompProfile.type to "
        '"RuntimeDefault" or "Localhost"',
    )


CHECKS = (
    Check("appArmorProfile", False, ((0, _app_armor_profile),)),
    Check("capabilities_baseline", False, ((0, _capabilities_baseline),)),
    Check("hostNamespaces", False, ((0, _host_namespaces),)),
    Check("hostPathVolumes", False, ((0, _host_path_volumes),)),
    Check("hostPorts", False, ((0, _host_ports),)),
    Check("privileged", False, ((0, _privileged),)),
    Check("procMount", False, ((0, _proc_mount),)),
    Check(
        "seLinuxOptions",
        False,
        (
            (0, _se_linux_options(_SE_LINUX_TYPES_1_0)),
            (31, _se_linux_options(_SE_LINUX_TYPES_1_31)),
        ),
    ),
    Check("seccompProfile_baseline", False, ((0, _seccomp_annotations), (19, _seccomp_baseline))),
    Check(
        "sysctls",
        False,
        (
            (0, _sysctls(_SYSCTLS_1_0)),
            (27, _sysctls(_SYSCTLS_1_27)),
            (29, _sysctls(_SYSCTLS_1_29)),
            (32, _sysctls(_SYSCTLS_1_32)),
        ),
    ),
    Check("windowsHostProcess", False, ((0, _windows_host_process),)),
    Check("allowPrivilegeEscalation", True, ((8, _allow_privilege_escalation),)),
    Check(
        "capabilities_restricted",
        True,
        ((22, _capabilities_restricted),),
        overrides=("capabilities_baseline",),
    ),
    Check("restrictedVolumes", True, ((0, _restricted_volumes),), overrides=("hostPathVolumes",)),
    Check("runAsNonRoot", True, ((0, _run_as_non_root),)),
    Check("runAsUser", True, ((23, _run_as_user),)),
    Check(
        "seccompProfile_restricted",
        True,
        ((19, _seccomp_restricted),),
        overrides=("seccompProfile_baseline",),
    ),
)
"""Baseline's then restricted's, each in ID order (Go's byte order), as the registry runs
them."""


@cache
def _checks_for(level: str, minor: int) -> tuple[CheckPod, ...]:
    if level == PRIVILEGED:
        return ()
    restricted = [c for c in CHECKS if c.restricted and c.at(minor) is not None]
    overridden = {o for c in restricted for o in c.overrides} if level != BASELINE else set()
    chosen = [c for c in CHECKS if not c.restricted and c.id not in overridden]
    if level != BASELINE:
        chosen += restricted
    return tuple(f for f in (c.at(minor) for c in chosen) if f is not None)


def evaluate(
    policy: LevelVersion, meta: Mapping[str, Any], spec: Mapping[str, Any]
) -> list[Failure]:
    """What of the pod (its metadata and spec) the policy forbids, in the checks' order."""
    failures = []
    for check in _checks_for(policy.level, policy.minor):
        failure = check(meta, spec)
        if failure is not None:
            failures.append(failure)
    return failures


def forbidden_reason(failures: list[Failure]) -> str:
    """`host namespaces, privileged`: the reasons alone."""
    return ", ".join(reason for reason, _ in failures)


def forbidden_detail(failures: list[Failure]) -> str:
    """`host namespaces (hostNetwork=true), privileged (container "c" must not set …)`."""
    return ", ".join(f"{reason} ({detail})" if detail else reason for reason, detail in failures)

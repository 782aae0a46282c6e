"""Regenerate `protobuf_messages.py` from the Go types of the Kubernetes API.

    python -m pinnace.apiserver.http.generate_protobuf_messages TYPES.go... > protobuf_messages.py

Each TYPES.go is a `types.go` of k8s.io/api (core/v1, apps/v1, batch/v1, policy/v1,
autoscaling/v1, rbac/v1, authorization/v1, authentication/v1, networking/v1, scheduling/v1,
certificates/v1)
or k8s.io/apimachinery's pkg/apis/meta/v1, at v0.32.0, its path ending in
<group>/<version>/types.go. A struct field's `protobuf:"…"` tag gives its field number, its
`json:"…"` tag its name (`,inline` an embedded struct whose fields JSON inlines) and whether
Go leaves its zero value out (`omitempty` on a value, not a pointer). The table holds every
message reachable from the kinds `pinnace.apiserver.http.protobuf` reads, in its notation.
"""

from __future__ import annotations

import sys
from pathlib import Path

from pinnace.api import gotypes

ROOTS = (
    ("core/v1", "Namespace"),
    ("core/v1", "ConfigMap"),
    ("core/v1", "Pod"),
    ("core/v1", "Service"),
    ("core/v1", "Secret"),
    ("core/v1", "ServiceAccount"),
    ("core/v1", "ResourceQuota"),
    ("scheduling/v1", "PriorityClass"),
    ("policy/v1", "Eviction"),
    ("policy/v1", "PodDisruptionBudget"),
    ("meta/v1", "DeleteOptions"),
    ("apps/v1", "Deployment"),
    ("batch/v1", "Job"),
    ("batch/v1", "CronJob"),
    ("certificates/v1", "CertificateSigningRequest"),
    ("autoscaling/v1", "HorizontalPodAutoscaler"),
    ("rbac/v1", "Role"),
    ("rbac/v1", "ClusterRole"),
    ("rbac/v1", "RoleBinding"),
    ("rbac/v1", "ClusterRoleBinding"),
    ("authorization/v1", "SelfSubjectAccessReview"),
    ("authorization/v1", "SubjectAccessReview"),
    ("authorization/v1", "LocalSubjectAccessReview"),
    ("authorization/v1", "SelfSubjectRulesReview"),
    ("authentication/v1", "SelfSubjectReview"),
    ("authentication/v1", "TokenRequest"),
    ("authentication/v1", "TokenReview"),
    ("networking/v1", "Ingress"),
)

# Go types with an encoding of their own, as `pinnace.apiserver.http.protobuf` names it.
_SPECIAL = {
    "meta/v1.Time": "time",
    "resource.Quantity": "quantity",
    "intstr.IntOrString": "intorstring",
    "types.UID": "string",
    "meta/v1.FieldsV1": "json",
}
_SCALARS = {"string": "string", "bool": "bool", "int32": "int", "int64": "int", "int": "int"}


class _Generator:
    def __init__(self, packages: dict[str, gotypes.Package]) -> None:
        self.packages = packages
        self.table: dict[str, dict[int, str]] = {}
        self.origin: dict[str, str] = {}

    def message(self, package: str, name: str) -> str:
        qualified = f"{package}.{name}"
        if self.origin.get(name, qualified) != qualified:
            raise SystemExit(f"two messages named {name}: {self.origin[name]}, {qualified}")
        if name in self.origin:
            return name
        self.origin[name] = qualified
        fields: dict[int, str] = {}
        self.table[name] = fields
        for field in self.packages[package].structs[name]:
            if "protobuf" not in field.tags:
                continue
            number = int(field.tags["protobuf"].split(",")[1])
            go_type, options = field.go_type, field.json_options
            kind = self.kind(package, go_type)
            repeated = go_type.startswith("[]") and kind != "bytes"
            keep_zero = go_type.startswith("*") or "omitempty" not in options
            spec = f"{'' if 'inline' in options else field.json_name}:{kind}"
            spec += "*" if repeated else "!" if keep_zero and _is_scalar(kind) else ""
            fields[number] = spec
        return name

    def kind(self, package: str, go_type: str) -> str:
        go_type = go_type.lstrip("*")
        if go_type == "[]byte":
            return "bytes"
        if go_type.startswith("[]"):
            return self.kind(package, go_type[2:])
        if go_type.startswith("map["):
            value = go_type[go_type.index("]") + 1 :]
            return "map:" + self.kind(package, value)
        owner, name = self.resolve(package, go_type)
        special = _SPECIAL.get(f"{owner}.{name}")
        if special:
            return special
        if name in _SCALARS and owner == package:
            return _SCALARS[name]
        found = self.packages.get(owner)
        if found is None:
            raise SystemExit(f"no types.go given for {owner} ({go_type})")
        if name in found.structs:
            return self.message(owner, name)
        under = found.named.get(name)
        if under is None:
            raise SystemExit(f"unknown Go type {owner}.{name}")
        if under == "[]string":
            return "strings"
        return self.kind(owner, under)

    def resolve(self, package: str, go_type: str) -> tuple[str, str]:
        alias, _, name = go_type.rpartition(".")
        if not alias:
            return package, name
        return self.packages[package].imports.get(alias, alias), name


def _is_scalar(kind: str) -> bool:
    return kind in ("string", "bool", "int", "bytes", "quantity", "intorstring")


def generate(paths: list[Path]) -> dict[str, dict[int, str]]:
    packages = {package.name: package for package in map(gotypes.read, paths)}
    generator = _Generator(packages)
    for package, name in ROOTS:
        generator.message(package, name)
    return dict(sorted(generator.table.items()))


def main() -> None:
    table = generate([Path(arg) for arg in sys.argv[1:]])
    out = [
        '"""The protobuf messages of the kinds Pinnace reads in protobuf, Kubernetes v1.32:',
        'per message, field number -> "jsonName:type" in the notation of',
        "`pinnace.apiserver.http.protobuf`.",
        "",
        "Generated by `python -m pinnace.apiserver.http.generate_protobuf_messages` from the",
        "types.go files of k8s.io/api and k8s.io/apimachinery's meta/v1 at v0.32.0. Do not edit",
        "by hand.",
        '"""',
        "",
        "# ruff: noqa: E501",
        "# fmt: off",
        "MESSAGES: dict[str, dict[int, str]] = {",
        *(f"    {name!r}: {fields!r}," for name, fields in table.items()),
        "}",
        "# fmt: on",
    ]
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()

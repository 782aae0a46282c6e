"""Kubernetes' Go API types as a `types.go` file of k8s.io/api (or k8s.io/apimachinery's
pkg/apis/meta/v1) declares them, read for the generators of the tables Go's encoders imply
(`pinnace.api.generate_omitted_zeros`, `pinnace.apiserver.http.generate_protobuf_messages`).

Only what those files hold is read, line by line as gofmt writes them: the imports, each named
type (`type Protocol string`) and each struct with its fields' types and tags. A file's
package is named by its path's last two folders: .../core/v1/types.go is "core/v1".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

_IMPORT = re.compile(r'^\s*(\w+\s+)?"k8s\.io/[\w.]+/(?:pkg/)?(?:apis/)?([\w/.]+)"', re.MULTILINE)
_NAMED = re.compile(r"^type (\w+) ([\w.\[\]]+)\s*$", re.MULTILINE)
_STRUCT = re.compile(r"^type (\w+) struct \{\n(.*?)^\}", re.MULTILINE | re.DOTALL)
_FIELD = re.compile(r"^\s+(?:(\w+)\s+)?([\w.*\[\]]+)\s+`([^`]*)`", re.MULTILINE)
_TAG = re.compile(r'(\w+):"([^"]*)"')


@dataclass(frozen=True)
class Field:
    """A struct field with a tag: its name ("" when embedded), Go type (`*int32`,
    `[]Container`, `metav1.ObjectMeta`) and tags by key (json, protobuf)."""

    name: str
    go_type: str
    tags: Mapping[str, str]

    @property
    def json_name(self) -> str:
        return self.tags.get("json", "").split(",")[0]

    @property
    def json_options(self) -> tuple[str, ...]:
        """The json tag's options: omitempty, inline."""
        return tuple(self.tags.get("json", "").split(",")[1:])


@dataclass(frozen=True)
class Package:
    name: str
    imports: Mapping[str, str]
    """Each import's name in the file -> its package's name ("metav1" -> "meta/v1")."""
    named: Mapping[str, str]
    """Each named type that is not a struct -> its underlying type ("Protocol" -> "string")."""
    structs: Mapping[str, tuple[Field, ...]]


def read(path: Path) -> Package:
    text = path.read_text()
    return Package(
        name=f"{path.parent.parent.name}/{path.parent.name}",
        imports={
            (alias or import_path.rsplit("/", 1)[-1]).strip(): package_name(import_path)
            for alias, import_path in _IMPORT.findall(text)
        },
        named=dict(_NAMED.findall(text)),
        structs={
            name: tuple(
                Field(field_name, go_type, dict(_TAG.findall(tags)))
                for field_name, go_type, tags in _FIELD.findall(body)
            )
            for name, body in _STRUCT.findall(text)
        },
    )


def package_name(import_path: str) -> str:
    """'api/core/v1' -> 'core/v1'; 'apimachinery/pkg/apis/meta/v1' -> 'meta/v1'."""
    parts = import_path.split("/")
    return "/".join(parts[-2:]) if parts[-1].startswith("v1") else parts[-1]

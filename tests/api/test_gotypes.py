"""The one reader of Kubernetes' types.go files (`pinnace.api.gotypes`) and the two tables
generated from what it reads: the zeros Go's JSON encoder leaves out, and the protobuf
messages."""

from __future__ import annotations

from pathlib import Path

from pinnace.api import generate_omitted_zeros, gotypes
from pinnace.apiserver.http import generate_protobuf_messages

CORE = """package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

type Protocol string

// A namespace.
type Namespace struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object's metadata with a `json:"quoted"` tag in its comment.
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`
	Spec NamespaceSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`
}

type NamespaceSpec struct {
	Finalizers []string `json:"finalizers,omitempty" protobuf:"bytes,1,rep,name=finalizers"`
	Protocol Protocol `json:"protocol,omitempty" protobuf:"bytes,2,opt,name=protocol"`
	Owner types.UID `json:"owner" protobuf:"bytes,3,opt,name=owner"`
	Limit *int32 `json:"limit,omitempty" protobuf:"varint,4,opt,name=limit"`
	Local string `json:"local,omitempty"`
}
"""
META = """package v1

type TypeMeta struct {
	Kind string `json:"kind,omitempty" protobuf:"bytes,1,opt,name=kind"`
}

type ObjectMeta struct {
	Name string `json:"name,omitempty" protobuf:"bytes,1,opt,name=name"`
	Generation int64 `json:"generation,omitempty" protobuf:"varint,7,opt,name=generation"`
}
"""


def _write(root: Path) -> list[Path]:
    paths = []
    for package, text in (("core/v1", CORE), ("meta/v1", META)):
        path = root / package / "types.go"
        path.parent.mkdir(parents=True)
        path.write_text(text)
        paths.append(path)
    return paths


def test_reads_imports_named_types_structs_and_tags(tmp_path: Path) -> None:
    core = gotypes.read(_write(tmp_path)[0])
    assert core.name == "core/v1"
    assert core.imports == {"metav1": "meta/v1", "types": "types"}
    assert core.named == {"Protocol": "string"}
    assert list(core.structs) == ["Namespace", "NamespaceSpec"]
    type_meta, object_meta, spec = core.structs["Namespace"]
    assert (type_meta.name, type_meta.go_type, type_meta.json_options) == (
        "",
        "metav1.TypeMeta",
        ("inline",),
    )
    assert (object_meta.name, object_meta.json_name) == ("", "metadata")
    assert spec.tags == {"json": "spec,omitempty", "protobuf": "bytes,2,opt,name=spec"}
    limit = core.structs["NamespaceSpec"][3]
    assert (limit.name, limit.go_type, limit.json_name) == ("Limit", "*int32", "limit")


def test_both_generators_read_through_it(tmp_path: Path) -> None:
    paths = _write(tmp_path)
    # Values, not pointers, tagged omitempty; named after the client models.
    assert generate_omitted_zeros.generate(paths) == {
        "V1NamespaceSpec": ("local", "protocol"),
        "V1ObjectMeta": ("generation", "name"),
    }
    generated = generate_protobuf_messages._Generator({p.name: p for p in map(gotypes.read, paths)})
    generated.message("core/v1", "Namespace")
    assert generated.table == {
        "Namespace": {1: "metadata:ObjectMeta", 2: "spec:NamespaceSpec"},
        "ObjectMeta": {1: "name:string", 7: "generation:int"},
        "NamespaceSpec": {
            1: "finalizers:string*",
            2: "protocol:string",
            3: "owner:string!",
            4: "limit:int!",
        },
    }

"""Loading manifests from files, directories and stdin, as kubectl reads them."""

import io
import json
from pathlib import Path

import pytest

from pinnace.api.manifest import (
    MAX_DEPTH,
    Manifest,
    ManifestError,
    load_document,
    load_manifests,
)

POD = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def names(manifests: list[Manifest]) -> list[str]:
    return [m.obj["metadata"]["name"] for m in manifests]


def test_multi_document_yaml_skips_empty_documents(tmp_path: Path) -> None:
    f = write(tmp_path / "app.yaml", "---\n" + POD.format(name="a") + "---\n---\n# only a comment\n"
              "---\n" + POD.format(name="b") + "...\n")  # fmt: skip
    loaded = load_manifests(f)
    assert names(loaded) == ["a", "b"]
    assert [m.index for m in loaded] == [0, 3]
    assert {m.source for m in loaded} == {str(f)}
    assert loaded[0].obj == {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}}


def test_list_kinds_are_flattened(tmp_path: Path) -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}},
            {"apiVersion": "v1", "kind": "PodList", "metadata": {},
             "items": [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "b"}}]},
        ],
    }  # fmt: skip
    assert names(load_manifests(write(tmp_path / "l.json", json.dumps(doc)))) == ["a", "b"]


def test_json_stream(tmp_path: Path) -> None:
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": n}} for n in "abc"]
    text = json.dumps(pods[0], indent=2) + "\n" + json.dumps(pods[1]) + json.dumps(pods[2])
    loaded = load_manifests(write(tmp_path / "s.json", text))
    assert names(loaded) == ["a", "b", "c"]
    assert [m.index for m in loaded] == [0, 1, 2]


def test_directory_reads_manifest_files_in_order(tmp_path: Path) -> None:
    write(tmp_path / "b.yaml", POD.format(name="b"))
    write(tmp_path / "a.json", json.dumps(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"}}))  # fmt: skip
    write(tmp_path / "c.yml", POD.format(name="c"))
    write(tmp_path / "notes.txt", "not a manifest")
    write(tmp_path / "sub" / "d.yaml", POD.format(name="d"))
    assert names(load_manifests(tmp_path)) == ["a", "b", "c"]
    assert names(load_manifests(tmp_path, recursive=True)) == ["a", "b", "c", "d"]
    # A file named explicitly is read whatever its extension.
    assert load_manifests(write(tmp_path / "pod.txt", POD.format(name="t")))[0].obj["kind"] == "Pod"


def test_stdin_dash_and_streams() -> None:
    loaded = load_manifests("-", stdin=io.StringIO(POD.format(name="x")))
    assert loaded == [Manifest("STDIN", 0, {"apiVersion": "v1", "kind": "Pod",
                                             "metadata": {"name": "x"}})]  # fmt: skip
    assert names(load_manifests(io.BytesIO(POD.format(name="z").encode()))) == ["z"]


def test_values_follow_sigs_k8s_yaml() -> None:
    text = (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n"
        "data:\n"
        "  a: yes\n  b: on\n  c: n\n  d: 'yes'\n  e: 2024-01-02T03:04:05Z\n  f: 1.0\n"
        "  g: 0x1F\n  h: 0777\n  i: 1:20\n  j: 1_000\n  k: ~\n  l: .5\n  m: 08\n  nn: 1e3\n"
        "  o: !!str 12\n  p: +12\n  q: 12abc\n"
        "keys:\n  1: int\n  true: bool\n  null: none\n  on: yes\n"
    )
    obj = load_manifests(io.StringIO(text))[0].obj
    assert obj["data"] == {
        "a": True, "b": True, "c": False, "d": "yes", "e": "2024-01-02T03:04:05Z", "f": 1,
        "g": 31, "h": 511, "i": "1:20", "j": 1000, "k": None, "l": 0.5, "m": 8, "nn": 1000,
        "o": "12", "p": 12, "q": "12abc",
    }  # fmt: skip
    # `on` as a key is the boolean true, which becomes the key "true" (the last one wins).
    assert obj["keys"] == {"1": "int", "true": True, "null": "none"}
    json.dumps(obj)


def test_anchors_and_merge_keys_are_copies() -> None:
    text = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n"
        "base: &base {cpu: 1, mem: 2}\n"
        "a: *base\n"
        "b:\n  <<: *base\n  mem: 3\n"
    )
    obj = load_manifests(io.StringIO(text))[0].obj
    assert obj["a"] == {"cpu": 1, "mem": 2}
    assert obj["b"] == {"cpu": 1, "mem": 3}
    obj["a"]["cpu"] = 9
    assert obj["base"]["cpu"] == 1


def test_alias_bomb_is_rejected_quickly() -> None:
    lines = ["apiVersion: v1", "kind: ConfigMap", 'a: &a ["lol","lol","lol","lol","lol","lol"]']
    for i in range(1, 12):
        prev = chr(ord("a") + i - 1)
        cur = chr(ord("a") + i)
        lines.append(f"{cur}: &{cur} [" + ",".join(f"*{prev}" for _ in range(9)) + "]")
    with pytest.raises(ManifestError, match=r"^STDIN: document 0 \(line \d+\): document contains "
                       r"excessive aliasing$"):  # fmt: skip
        load_manifests(io.StringIO("\n".join(lines)))


def test_deep_nesting_is_rejected() -> None:
    deep_yaml = "apiVersion: v1\nkind: Pod\nx: " + "[" * 5000 + "]" * 5000 + "\n"
    with pytest.raises(ManifestError, match=f"nesting is deeper than {MAX_DEPTH} levels"):
        load_manifests(io.StringIO(deep_yaml))
    deep_json = '{"apiVersion": "v1", "kind": "Pod", "x": ' + "[" * 100000 + "]" * 100000 + "}"
    with pytest.raises(ManifestError, match=f"nesting is deeper than {MAX_DEPTH} levels"):
        load_manifests(io.StringIO(deep_json))
    middling = '{"apiVersion": "v1", "kind": "Pod", "x": ' + "[" * 600 + "]" * 600 + "}"
    with pytest.raises(ManifestError, match="nesting is deeper"):
        load_manifests(io.StringIO(middling))
    # Past Pinnace's bound but within libyaml's own (1,000 levels, PyYAML 6.0.4 on).
    middling_yaml = "apiVersion: v1\nkind: Pod\nx: " + "[" * 600 + "]" * 600 + "\n"
    with pytest.raises(ManifestError, match=f"nesting is deeper than {MAX_DEPTH} levels"):
        load_manifests(io.StringIO(middling_yaml))


def test_size_bound(tmp_path: Path) -> None:
    f = write(tmp_path / "big.yaml", POD.format(name="a" * 100))
    with pytest.raises(
        ManifestError, match=r"big.yaml: input is larger than the limit of 50 bytes"
    ):
        load_manifests(f, max_bytes=50)
    with pytest.raises(ManifestError, match=r"^STDIN: input is larger"):
        load_manifests(io.StringIO(POD.format(name="a" * 100)), max_bytes=50)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("kind: Pod\n", "document 0 (line 1): error validating data: apiVersion not set"),
        (POD.format(name="a") + "---\napiVersion: v1\nmetadata: {}\n",
         "document 1 (line 5): error validating data: kind not set"),
        ("metadata: {}\n", "document 0 (line 1): error validating data: "
         "[apiVersion not set, kind not set]"),
        ("apiVersion: v1\nkind: List\nitems:\n- kind: Pod\n",
         "document 0 (line 1): items[0]: error validating data: apiVersion not set"),
        ("- a\n- b\n", "document 0 (line 1): expected an object, got an array"),
        ("apiVersion: v1\nkind: Pod\nx: [\n", "document 0 (line 4): invalid YAML: "),
        ("apiVersion: v1\nkind: Pod\nx: *nope\n",
         "document 0 (line 3): unknown anchor 'nope' referenced"),
        ("apiVersion: v1\nkind: Pod\nx: .inf\n",
         "document 0 (line 3): .inf cannot be represented in JSON"),
    ],
)  # fmt: skip
def test_errors_name_file_document_and_field(tmp_path: Path, text: str, message: str) -> None:
    f = write(tmp_path / "bad.yaml", text)
    with pytest.raises(ManifestError) as err:
        load_manifests(f)
    assert str(err.value).startswith(f"{f}: {message}")


def test_invalid_json_and_missing_path(tmp_path: Path) -> None:
    f = write(tmp_path / "bad.json", '{"apiVersion": "v1",\n "kind": }')
    with pytest.raises(ManifestError, match=r"bad.json: document 0 \(line 1\): invalid JSON: "):
        load_manifests(f)
    with pytest.raises(ManifestError, match="does not exist"):
        load_manifests(tmp_path / "nope.yaml")


def test_a_document_knows_the_line_of_each_field() -> None:
    doc = load_document(
        "spec:\n  steps:\n  - at: 10m\n    cordon: {node: a}\n  labels:\n    example.com/tier: x\n",
        "s.yaml",
    )
    assert doc.value["spec"]["steps"] == [{"at": "10m", "cordon": {"node": "a"}}]
    assert doc.line("spec.steps[0]") == 3
    assert doc.line("spec.steps[0].cordon.node") == 4
    assert doc.line("spec.labels[example.com/tier]") == 6  # a key, spelled either way
    assert doc.line("spec.labels.example.com/tier") == 6
    # a field the document lacks is where its nearest parent is
    assert doc.line("spec.steps[0].cordon.reason") == 4
    assert doc.line("status") == 1


def test_a_document_is_one_document() -> None:
    with pytest.raises(ManifestError, match=r"^s.yaml: document 1 \(line 2\): expected one"):
        load_document("a: 1\n---\nb: 2\n", "s.yaml")

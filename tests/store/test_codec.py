"""The compact form objects are kept in: what goes in comes out, however the dictionaries have
grown in between; and each codec (one per cluster) learns from what it packs alone."""

from __future__ import annotations

import tracemalloc
import uuid

import orjson
import pytest

from pinnace.store import MemoryStore
from pinnace.store.codec import LEARN_AT, PACKED_LATELY, Codec


def pod(i: int, kind: str = "CodecTestPod") -> dict:
    """A pod-like object; dictionaries are learned per kind."""
    return {
        "apiVersion": "v1",
        "kind": kind,
        "metadata": {
            "name": f"web-{i}",
            "namespace": "default",
            "uid": str(uuid.UUID(int=i * 7919 + 1, version=4)),
            "resourceVersion": str(1000 + i),
            "ownerReferences": [{"kind": "ReplicaSet", "name": "web"}],
        },
        "spec": {"nodeName": f"node-{i % 3}", "containers": [{"name": "app", "image": "nginx"}]},
        "status": {"phase": "Running", "podIP": f"10.0.{i // 250}.{i % 250}"},
    }


def test_every_object_unpacks_to_itself_before_and_after_its_kind_learns() -> None:
    codec = Codec()
    packed = [(obj, codec.pack(obj)) for obj in map(pod, range(600))]
    for obj, data in packed:
        assert codec.unpack(data) == obj


def test_a_kind_that_has_learned_packs_its_objects_smaller() -> None:
    codec = Codec()
    first = len(codec.pack(pod(0)))
    for i in range(1, min(LEARN_AT)):
        codec.pack(pod(i))
    assert len(codec.pack(pod(1_000_000))) < first * 0.8


def test_codecs_learn_apart_so_two_clusters_in_a_process_share_nothing() -> None:
    learned, fresh = MemoryStore().codec, MemoryStore().codec
    assert learned is not fresh
    first = len(fresh.pack(pod(0)))
    packed = [learned.pack(pod(i)) for i in range(min(LEARN_AT) + 1)]
    assert len(packed[-1]) < first * 0.8
    assert len(fresh.pack(pod(min(LEARN_AT)))) > first * 0.9, "it learned nothing from the other"
    assert learned.unpack(packed[-1]) == pod(min(LEARN_AT))


@pytest.mark.parametrize(
    "obj",
    [
        {},
        {"v": 1},
        {"metadata": {"ownerReferences": [{"kind": "ReplicaSet"}]}, "kind": "Late"},
        {"kind": 'odd "kind\\" name', "items": [1.5, None, True, "é"]},
    ],
)
def test_objects_without_a_kind_first_or_at_all_pack_too(obj: dict) -> None:
    codec = Codec()
    for _ in range(20):
        assert codec.unpack(codec.pack(obj)) == obj


def test_anything_not_json_is_refused() -> None:
    with pytest.raises(TypeError):
        Codec().pack({"v": object()})


def test_any_number_of_kinds_packs_in_bounded_memory() -> None:
    codec = Codec()
    tracemalloc.start()
    try:
        for k in range(300):
            objs = [pod(i, f"CodecTestMany{k}") for i in range(min(LEARN_AT) + 1)]
            packed = [codec.pack(obj) for obj in objs]
            assert codec.unpack(packed[0]) == objs[0] and codec.unpack(packed[-1]) == objs[-1]
        grown = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    # Kinds past the first few dozen share one dictionary: no compressor (~150 KB) per kind.
    assert grown < 16 * 2**20, grown


def test_a_plain_codec_keeps_the_text_and_reads_it_back_beside_packed_objects() -> None:
    plain = Codec(deflate=False)
    obj = pod(1)
    data = plain.pack(obj)
    assert plain.unpack(data) == obj
    assert orjson.loads(data[1:]) == obj  # the JSON text itself, after its mark
    block = b"[" + orjson.dumps(pod(2)) + b"]"
    assert plain.inflate(plain.pack_block(block, orjson.dumps(pod(2)))) == block
    for i in range(min(LEARN_AT) + 1):  # no learning: every one stays the text
        assert plain.unpack(plain.pack(pod(i))) == pod(i)


def test_the_same_object_packed_again_lately_is_deflated_once_for_all_its_keepers() -> None:
    """The store and every informer of the process that keeps packed objects are handed the
    same written object: the first packing serves the others."""
    codec = Codec()
    obj = pod(1)
    first = codec.pack(obj)
    assert codec.pack(obj) is first
    assert codec.pack(obj, head=b"\x01\x02") == b"\x01\x02" + first
    equal = orjson.loads(orjson.dumps(obj))  # another object, even if equal: packed anew
    assert codec.pack(equal) is not first
    assert codec.unpack(codec.pack(equal)) == codec.unpack(first) == obj


def test_objects_packed_long_ago_are_not_kept_for_reuse() -> None:
    codec = Codec()
    objects = [pod(i) for i in range(PACKED_LATELY + 1)]
    first = codec.pack(objects[0])
    for obj in objects[1:]:
        codec.pack(obj)
    again = codec.pack(objects[0])
    assert again is not first and codec.unpack(again) == codec.unpack(first)

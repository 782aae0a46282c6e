"""Kubernetes objects as every layer handles them (plain dicts), and small helpers over them."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar, cast

import orjson

Object = dict[str, Any]
T = TypeVar("T")
V = TypeVar("V")
K = TypeVar("K", bound=Hashable)


def clone(obj: Object) -> Object:
    """A deep copy. Objects are JSON, and a JSON round trip through orjson is several times
    faster than `copy.deepcopy` for them."""
    return orjson.loads(orjson.dumps(obj))


def clone_but(obj: Object, key: str) -> Object:
    """A deep copy of `obj` but for `obj[key]`, which the copy shares (in its place)."""
    if key not in obj:
        return clone(obj)
    copied = clone({**obj, key: None})
    copied[key] = obj[key]
    return copied


_PLAIN_JSON = (
    orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def plain_json(value: Any) -> bytes | None:
    """The JSON text of `value`, a request body as parsed from JSON or what the API's decoding
    made of one, or None when it cannot be written: two such values with the same text are
    equal values of the same types, so a pure function's answer for one holds for the other.
    (orjson refuses datetimes, dataclasses and subclasses of str, int, dict and list here,
    instead of writing them as the text of a string or an object; decoding leaves a tuple, an
    enum or a NaN, which it would write as a list's, a string's or null's text, only in
    free-form fields.)"""
    try:
        return orjson.dumps(value, option=_PLAIN_JSON)
    except TypeError:
        return None


def alike(values: list[str]) -> tuple[int, ...]:
    """Which of `values` are the same text, for a key: for each, the index of the first equal
    to it; () when all differ. (They are few: a search of the list each costs less than the
    loop that would remember them.)"""
    if len(set(values)) == len(values):
        return ()
    return tuple(map(values.index, values))


class Remembered(Generic[T]):
    """The last `size` answers of a pure function, by key (say, its argument's `plain_json`);
    the least recently used is forgotten first. The pods of one template share their spec,
    and what is worked out from it once holds for all of them."""

    def __init__(self, size: int, *, only_returning: bool = False) -> None:
        self._size = size
        self._answers: dict[Hashable, tuple[Hashable, T]] = {}
        """By key, the key as kept (`_kept`: the one looked up with may not be) and the
        answer."""
        self._offered_once: dict[int, None] | None = {} if only_returning else None

    def returning(self, key: Hashable) -> bool:
        """Whether the answer for `key`, just worked out, is worth remembering: always, unless
        the memo is `only_returning`; then only once `key` comes back. A key offered once is
        noted (by its hash, the last `size` of them), so that keys that never come again (a
        Lease's spec, whose renewTime changes at every renewal) cost neither the making of an
        entry nor the entries of the keys that do come back (a template's pods)."""
        offered = self._offered_once
        if offered is None:
            return True
        h = hash(key)
        if offered.pop(h, False) is None:
            return True
        if len(offered) >= self._size:
            del offered[next(iter(offered))]
        offered[h] = None
        return False

    def get(self, key: Hashable) -> T | None:
        answers = self._answers
        entry = answers.pop(key, None)
        if entry is None:
            return None
        answers[entry[0]] = entry  # now the most recently used
        return entry[1]

    def put(self, key: Hashable, answer: T) -> None:
        answers = self._answers
        if len(answers) >= self._size and key not in answers:
            del answers[next(iter(answers))]
        kept = _kept(key)
        answers[kept] = (kept, _kept(answer))


class Shared(dict[K, V]):
    """`make(key)` by key, worked out once while remembered: `shared[key]`. For what the pods
    of a workload repeat (their images' names, their tolerations), read on every pod: a hit is
    a dict's lookup, and a miss past `limit` entries forgets them all, not the least recently
    used (what `Remembered` keeps track of at a cost a hit pays)."""

    def __init__(self, make: Callable[[K], V], limit: int) -> None:
        super().__init__()
        self._make = make
        self._limit = limit

    def __missing__(self, key: K) -> V:
        if len(self) >= self._limit:
            self.clear()
        value = self[key] = self._make(key)
        return value


def _kept(value: V) -> V:
    """`value` as a memo keeps it: a bytes, or the bytes in a tuple, copied at its length.
    orjson (3.12 on) returns a text in a buffer of at least 4 KB whatever its length, so
    thousands of remembered texts of a few hundred bytes would each hold 4 KB."""
    held: Any = value
    if type(held) is bytes:
        return cast(V, memoryview(held).tobytes())
    if type(held) is tuple and bytes in map(type, held):
        return cast(V, tuple(memoryview(v).tobytes() if type(v) is bytes else v for v in held))
    return value


def meta(obj: Object) -> dict[str, Any]:
    """The object's metadata, created if missing (callers validated its type before)."""
    m = obj.get("metadata")
    if not isinstance(m, dict):
        m = obj["metadata"] = {}
    return m


def resource_version(obj: Object) -> int:
    """The object's resourceVersion as the store's revision; 0 when absent."""
    rv = (obj.get("metadata") or {}).get("resourceVersion")
    return int(rv) if rv else 0


# ObjectMeta's maps and lists, all `omitempty`: empty, Go writes none of them.
_OMITTED_WHEN_EMPTY = ("labels", "annotations", "ownerReferences", "finalizers", "managedFields")


def without_empty_metadata(obj: Object) -> Object:
    """`obj` as kube-apiserver would store it after decoding: an empty `labels`,
    `annotations`, `ownerReferences`, `finalizers` or `managedFields` is gone (Go's omitempty),
    so `annotations: {}` in a patch changes nothing. `obj` itself when none is empty, else a
    copy sharing all but its metadata."""
    m = obj.get("metadata")
    if not isinstance(m, dict):
        return obj
    for name in _OMITTED_WHEN_EMPTY:  # every write passes here: no generator, no allocation
        if _empty_collection(m.get(name)):
            break
    else:
        return obj
    kept = {k: v for k, v in m.items() if not (k in _OMITTED_WHEN_EMPTY and _empty_collection(v))}
    return {**obj, "metadata": kept}


def _empty_collection(value: Any) -> bool:
    """An empty map or list (Go's omitempty leaves it out)."""
    return not value and isinstance(value, dict | list)

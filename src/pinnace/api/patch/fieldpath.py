"""Sets of field paths, as structured-merge-diff's fieldpath package keeps them, and their
FieldsV1 wire form (metadata.managedFields[].fieldsV1).

A path element is kept in its serialized form, which is canonical: `f:<name>` for a field,
`k:{"name":"c"}` for a list map item (key fields sorted by name), `v:<json>` for a set item,
`i:<n>` for an index. A `FieldSet` is a trie: the paths ending at a node (members) and the
sets below each element (children).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

__all__ = ["FieldSet", "go_json", "key_element", "path_string", "value_element"]


_COMPACT = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def go_json(value: Any) -> str:
    """Compact JSON as Go's encoding/json writes it (HTML characters escaped)."""
    text = _COMPACT.encode(value)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escape)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def field_element(name: str) -> str:
    return "f:" + name


def key_element(keys: dict[str, Any]) -> str:
    # Each value's type is part of the cache key: True and 1 are equal, their JSON is not.
    typed = tuple((k, type(v), v) for k, v in sorted(keys.items()))
    try:
        return _typed_key_element(typed)
    except TypeError:  # a list or an object among the values: not hashable
        return "k:" + go_json({k: keys[k] for k in sorted(keys)})


@lru_cache(maxsize=4096)
def _typed_key_element(typed: tuple[tuple[str, type, Any], ...]) -> str:
    """The same few keys (container names, ports) recur in every object."""
    return "k:" + go_json({k: v for k, _, v in typed})


def value_element(value: Any) -> str:
    return "v:" + go_json(value)


@lru_cache(maxsize=4096)
def _canonical(element: str) -> str:
    """The canonical form of a stored element; the same few keys recur in every object."""
    if element.startswith("k:"):
        return key_element(json.loads(element[2:]))
    if element.startswith("v:"):
        return value_element(json.loads(element[2:]))
    return element


def _go_string(value: Any) -> str:
    """smd's value.ToString."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ",".join(_go_string(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}={_go_string(v)}" for k, v in value.items()) + "}"
    return str(value)


def element_string(element: str) -> str:
    """A path element as conflict messages print it: `.name`, `[name="c"]`, `[="a"]`."""
    kind, body = element[0], element[2:]
    if kind == "f":
        return "." + body
    if kind == "k":
        keys = json.loads(body)
        return "[" + ",".join(f"{k}={_go_string(v)}" for k, v in keys.items()) + "]"
    if kind == "v":
        return f"[={_go_string(json.loads(body))}]"
    return f"[{body}]"


def path_string(path: tuple[str, ...]) -> str:
    return "".join(element_string(e) for e in path)


_TYPE_RANK = {"f": 0, "k": 1, "v": 2, "i": 3}


@lru_cache(maxsize=4096)
def element_order(element: str) -> tuple[int, Any]:
    """PathElement.Compare: fields, then keys, then values, then indices."""
    kind, body = element[0], element[2:]
    if kind == "i":
        return 3, (int(body),)
    if kind == "f":
        return 0, (body,)
    return _TYPE_RANK[kind], (_value_order(json.loads(body)),)


def _value_order(value: Any) -> Any:
    if isinstance(value, dict):
        return (5, tuple((k, _value_order(v)) for k, v in value.items()))
    if isinstance(value, list):
        return (4, tuple(_value_order(v) for v in value))
    if isinstance(value, str):
        return (3, value)
    if isinstance(value, bool):
        return (1, value)
    if isinstance(value, int | float):
        return (2, value)
    return (0, 0)


class FieldSet:
    __slots__ = ("children", "members")

    def __init__(self) -> None:
        self.members: set[str] = set()
        self.children: dict[str, FieldSet] = {}

    @classmethod
    def of(cls, *paths: tuple[str, ...]) -> FieldSet:
        out = cls()
        for path in paths:
            out.insert(path)
        return out

    def insert(self, path: tuple[str, ...]) -> None:
        node = self
        for element in path[:-1]:
            node = node.children.setdefault(element, FieldSet())
        if path:
            node.members.add(path[-1])

    def has(self, path: tuple[str, ...]) -> bool:
        node: FieldSet | None = self
        for element in path[:-1]:
            node = node.children.get(element) if node else None
        return bool(path) and node is not None and path[-1] in node.members

    def child(self, element: str) -> FieldSet | None:
        return self.children.get(element)

    def empty(self) -> bool:
        return not self.members and all(c.empty() for c in self.children.values())

    def union(self, other: FieldSet) -> FieldSet:
        """What either holds: `self` or `other` itself when it holds the other, else a set
        sharing theirs (a set is not changed once built)."""
        if other.within(self):
            return self
        if self.within(other):
            return other
        return self._merged(other)

    def _merged(self, other: FieldSet) -> FieldSet:
        out = FieldSet()
        out.members = self.members | other.members
        for element in self.children.keys() | other.children.keys():
            a, b = self.children.get(element), other.children.get(element)
            if a is None or b is None:
                merged = other.children[element] if a is None else self.children[element]
            else:
                merged = a._merged(b)
            if not merged.empty():
                out.children[element] = merged
        return out

    def within(self, other: FieldSet) -> bool:
        """Whether every path `self` holds, `other` holds too."""
        if not self.members <= other.members:
            return False
        for element, child in self.children.items():
            theirs = other.children.get(element)
            if not (child.empty() if theirs is None else child.within(theirs)):
                return False
        return True

    def intersection(self, other: FieldSet) -> FieldSet:
        out = FieldSet()
        out.members = self.members & other.members
        for element in self.children.keys() & other.children.keys():
            both = self.children[element].intersection(other.children[element])
            if not both.empty():
                out.children[element] = both
        return out

    def difference(self, other: FieldSet) -> FieldSet:
        """What `self` holds and `other` does not: `self` itself, or sets shared with it,
        where `other` takes nothing away (a set is not changed once built)."""
        members = self.members - other.members
        changed = len(members) < len(self.members)
        children: dict[str, FieldSet] = {}
        for element, child in self.children.items():
            below = other.children.get(element)
            rest = child if below is None else child.difference(below)
            if rest is not child:
                changed = True
                if rest.empty():
                    continue
            children[element] = rest
        if not changed:
            return self
        out = FieldSet()
        out.members = members
        out.children = children
        return out

    def recursive_difference(self, other: FieldSet) -> FieldSet:
        """The difference, also dropping everything below a path `other` holds."""
        out = FieldSet()
        out.members = self.members - other.members
        for element, child in self.children.items():
            if element in other.members:
                continue
            rest = (
                child.recursive_difference(other.children[element])
                if element in other.children
                else child
            )
            if not rest.empty():
                out.children[element] = rest.copy()
        return out

    def copy(self) -> FieldSet:
        out = FieldSet()
        out.members = set(self.members)
        out.children = {e: c.copy() for e, c in self.children.items()}
        return out

    def paths(self, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
        """Every path, in smd's order: a node's members (sorted), then its children's."""
        for element in sorted(self.members, key=element_order):
            yield (*prefix, element)
        for element in sorted(self.children, key=element_order):
            yield from self.children[element].paths((*prefix, element))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FieldSet) and self.within(other) and other.within(self)

    def __repr__(self) -> str:
        return f"FieldSet({[path_string(p) for p in self.paths()]})"

    # FieldsV1

    def to_fields_v1(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for element in sorted(self.members | self.children.keys(), key=element_order):
            child = self.children.get(element)
            if child is None or child.empty():
                out[element] = {}
            else:
                inner = child.to_fields_v1()
                out[element] = {".": {}, **inner} if element in self.members else inner
        return out

    @classmethod
    def from_fields_v1(cls, fields: Any) -> FieldSet:
        if not isinstance(fields, dict):
            raise ValueError("expected an object")
        out = cls()
        for key, value in fields.items():
            if key == ".":
                continue
            element = _canonical(key)
            if element[:2] not in ("f:", "k:", "v:", "i:"):
                raise ValueError(f"unknown path element type: {key}")
            if not isinstance(value, dict):
                raise ValueError("expected an object")
            if not value or "." in value:
                out.members.add(element)
            child = cls.from_fields_v1(value)
            if not child.empty():
                out.children[element] = child
        return out

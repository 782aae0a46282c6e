"""Load manifests as kubectl does: files, directories and stdin; YAML streams and JSON streams.

YAML is turned into JSON-compatible values the way sigs.k8s.io/yaml does (go-yaml v2 rules:
YAML 1.1 booleans such as `yes`, `on`, `y`; timestamps stay strings; keys become strings).
The loader builds values from parser events itself, so that every input is bounded: its size,
its nesting depth and its alias expansion (go-yaml's "excessive aliasing" heuristic) are
checked as it goes, and no input can exhaust memory or the Python stack.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import yaml

try:
    _Loader: type = yaml.CSafeLoader
except AttributeError:  # PyYAML without libyaml
    _Loader = yaml.SafeLoader

MAX_BYTES = 32 * 1024 * 1024
MAX_DEPTH = 512
_LIBYAML_TOO_DEEP = "exceeded maximum nesting depth"
MAX_NODES = 1_000_000
MANIFEST_EXTENSIONS = (".json", ".yaml", ".yml")
STDIN = "STDIN"

Source = str | os.PathLike[str] | IO[str] | IO[bytes]


class ManifestError(ValueError):
    """A manifest that cannot be loaded; the message names the source, document and field."""


@dataclass(frozen=True)
class Manifest:
    source: str
    index: int
    obj: dict[str, Any]


def load_manifests(
    source: Source,
    *,
    recursive: bool = False,
    stdin: IO[str] | IO[bytes] | None = None,
    max_bytes: int = MAX_BYTES,
) -> list[Manifest]:
    """Load every object from a file, a directory, "-" (stdin) or an open stream.

    Directories contribute their .json, .yaml and .yml files in name order, and their
    subdirectories too when `recursive`; a file named explicitly is read whatever its name.
    """
    if isinstance(source, str | os.PathLike):
        if os.fspath(source) == "-":
            return _load_stream(stdin if stdin is not None else sys.stdin, STDIN, max_bytes)
        return [m for path in _expand(Path(source), recursive) for m in _load_file(path, max_bytes)]
    name = getattr(source, "name", None)
    return _load_stream(source, name if isinstance(name, str) else STDIN, max_bytes)


@dataclass(frozen=True)
class Document:
    """One YAML document's value, and the line each of its fields starts on by field path, as
    pinnace.api.field spells paths: `spec.timeline[2].at`, a mapping's key also as
    `labels[tier]`; "" is the document."""

    value: Any
    lines: Mapping[str, int]

    def line(self, path: str) -> int:
        """The line of the field at `path`, or of the nearest field above it in the document
        (a field that is missing is reported where its parent is)."""
        while path not in self.lines:
            path = _parent_path(path)
        return self.lines[path]


def load_document(text: str, name: str) -> Document:
    """The one YAML (or JSON) document of `text`, read as `load_manifests` reads YAML, with the
    line of each field; `name` is where it came from, for messages."""
    builder = _Builder(name, lines={})
    found = list(_yaml_documents(text, name, builder))
    if len(found) > 1:
        raise ManifestError(f"{name}: document 1 (line {found[1][1]}): expected one document")
    value = found[0][2] if found else None
    lines = builder.lines or {}
    lines.setdefault("", found[0][1] if found else 1)
    return Document(value, lines)


def yaml_problem(error: yaml.YAMLError) -> str:
    """A YAML error on one line: the parser's problem and where (PyYAML's own message spans
    lines, quoting the text)."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem:
        mark = error.problem_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        context = f"{error.context}: " if error.context else ""
        return f"{context}{error.problem}{where}"
    return " ".join(str(error).split())


def _parent_path(path: str) -> str:
    if path.endswith("]"):
        return path[: path.rfind("[")]
    return path[: max(path.rfind("."), 0)]


def _expand(root: Path, recursive: bool) -> Iterator[Path]:
    if not root.is_dir():
        if not root.exists():
            raise ManifestError(f'the path "{root}" does not exist')
        yield root
        return
    for entry in sorted(root.iterdir(), key=lambda p: p.name):
        if entry.is_dir():
            if recursive and not entry.is_symlink():
                yield from _expand(entry, recursive)
        elif entry.suffix in MANIFEST_EXTENSIONS:
            yield entry


def _load_file(path: Path, max_bytes: int) -> list[Manifest]:
    if path.stat().st_size > max_bytes:
        raise ManifestError(f"{path}: input is larger than the limit of {max_bytes} bytes")
    with path.open("rb") as f:
        return _load_stream(f, str(path), max_bytes)


def _load_stream(stream: IO[str] | IO[bytes], name: str, max_bytes: int) -> list[Manifest]:
    data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise ManifestError(f"{name}: input is larger than the limit of {max_bytes} bytes")
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            raise ManifestError(f"{name}: input is not valid UTF-8: {err}") from None
    else:
        text = data
    docs = (
        _json_documents(text, name)
        if text.lstrip().startswith("{")
        else _yaml_documents(text, name)
    )
    manifests: list[Manifest] = []
    for index, line, value in docs:
        where = f"{name}: document {index} (line {line})"
        if value is None:
            continue
        if not isinstance(value, dict):
            raise ManifestError(f"{where}: expected an object, got {_json_type(value)}")
        manifests.extend(Manifest(name, index, obj) for obj in _flatten(value, where))
    return manifests


def _json_type(value: Any) -> str:
    if isinstance(value, list):
        return "an array"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, str):
        return "a string"
    return "a number"


def _flatten(obj: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """Check apiVersion and kind; expand `kind: List` (and other *List kinds) into items."""
    missing = [f for f in ("apiVersion", "kind") if not obj.get(f)]
    kind = obj.get("kind")
    items = obj.get("items")
    if not missing and isinstance(kind, str) and kind.endswith("List") and isinstance(items, list):
        out: list[dict[str, Any]] = []
        for i, item in enumerate(items):
            item_where = f"{where}: items[{i}]"
            if not isinstance(item, dict):
                raise ManifestError(f"{item_where}: expected an object, got {_json_type(item)}")
            out.extend(_flatten(item, item_where))
        return out
    if missing:
        text = ", ".join(f"{f} not set" for f in missing)
        if len(missing) > 1:
            text = f"[{text}]"
        raise ManifestError(f"{where}: error validating data: {text}")
    return [obj]


# --- JSON --------------------------------------------------------------------------------------


def _json_documents(text: str, name: str) -> Iterator[tuple[int, int, Any]]:
    decoder = json.JSONDecoder()
    pos, index, n = 0, 0, len(text)
    while True:
        while pos < n and text[pos] in " \t\r\n":
            pos += 1
        if pos >= n:
            return
        line = text.count("\n", 0, pos) + 1
        where = f"{name}: document {index} (line {line})"
        try:
            value, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as err:
            raise ManifestError(f"{where}: invalid JSON: {err}") from None
        except RecursionError:
            raise ManifestError(f"{where}: nesting is deeper than {MAX_DEPTH} levels") from None
        if _depth(value) > MAX_DEPTH:
            raise ManifestError(f"{where}: nesting is deeper than {MAX_DEPTH} levels")
        yield index, line, value
        index += 1


def _depth(value: Any) -> int:
    deepest, todo = 0, [(value, 1)]
    while todo:
        node, depth = todo.pop()
        if isinstance(node, dict):
            node = node.values()
        elif not isinstance(node, list):
            continue
        deepest = max(deepest, depth)
        todo.extend((child, depth + 1) for child in node)
    return deepest


# --- YAML --------------------------------------------------------------------------------------


def _yaml_documents(
    text: str, name: str, builder: _Builder | None = None
) -> Iterator[tuple[int, int, Any]]:
    builder = builder or _Builder(name)
    try:
        for event in yaml.parse(text, Loader=_Loader):
            done = builder.feed(event)
            if done is not None:
                yield done
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line = f" (line {mark.line + 1})" if mark else ""
        # libyaml (PyYAML 6.0.4 on) stops at 1,000 levels, sometimes before the builder has
        # seen 512: say what Pinnace's own bound says, whichever of the two trips first.
        problem = (
            f"nesting is deeper than {MAX_DEPTH} levels"
            if err.problem == _LIBYAML_TOO_DEEP
            else f"invalid YAML: {err.problem}"
        )
        raise ManifestError(f"{name}: document {builder.index}{line}: {problem}") from None
    except yaml.YAMLError as err:
        raise ManifestError(f"{name}: document {builder.index}: invalid YAML: {err}") from None


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


_LOW, _HIGH = 400_000, 4_000_000


def _allowed_alias_ratio(decoded: int) -> float:
    """go-yaml's bound on aliases per decoded node, tightening as a document grows."""
    if decoded <= _LOW:
        return 0.99
    if decoded >= _HIGH:
        return 0.10
    return 0.99 - 0.89 * (decoded - _LOW) / (_HIGH - _LOW)


@dataclass
class _Frame:
    value: dict[str, Any] | list[Any]
    anchor: str | None
    decoded_at: int
    aliases_at: int
    key: Any = None
    has_key: bool = False
    merges: list[dict[str, Any]] | None = None
    path: str = ""
    """The container's field path, when the builder notes lines."""


_MERGE = object()


class _Builder:
    """Turns a stream of parser events into one JSON-compatible value per document."""

    def __init__(self, name: str, lines: dict[str, int] | None = None) -> None:
        self.name = name
        self.index = 0
        self.lines = lines
        """Field path -> line, for `load_document`; None (not noted) for `load_manifests`."""
        self._start_document(0)

    def _start_document(self, line: int) -> None:
        self.line = line
        self.stack: list[_Frame] = []
        self.anchors: dict[str, tuple[Any, int, int]] = {}
        self.decoded = 0
        self.aliases = 0
        self.result: Any = None

    def _fail(self, message: str, mark: Any = None) -> ManifestError:
        return ManifestError(
            f"{self.name}: document {self.index} (line {self._line(mark)}): {message}"
        )

    def _line(self, mark: Any) -> int:
        """The line `mark` is at, from 1; the parser marks every event it makes."""
        return int(mark.line) + 1 if mark is not None else self.line

    def feed(self, event: yaml.Event) -> tuple[int, int, Any] | None:
        if isinstance(event, yaml.DocumentStartEvent):
            self._start_document(self._line(event.start_mark))
        elif isinstance(event, yaml.DocumentEndEvent):
            done = (self.index, self.line, self.result)
            self.index += 1
            return done
        elif isinstance(event, yaml.MappingStartEvent | yaml.SequenceStartEvent):
            self._count(event, 1, 0)
            if len(self.stack) >= MAX_DEPTH:
                raise self._fail(f"nesting is deeper than {MAX_DEPTH} levels", event.start_mark)
            container: dict[str, Any] | list[Any] = (
                {} if isinstance(event, yaml.MappingStartEvent) else []
            )
            frame = _Frame(container, event.anchor, self.decoded, self.aliases)
            if self.lines is not None:
                frame.path = self._locate(event)
            self.stack.append(frame)
        elif isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
            frame = self.stack.pop()
            if frame.merges and isinstance(frame.value, dict):
                for merged in frame.merges:
                    for key, value in merged.items():
                        frame.value.setdefault(key, value)
            self._remember(frame.anchor, frame.value, frame.decoded_at, frame.aliases_at)
            self._add(frame.value, event)
        elif isinstance(event, yaml.ScalarEvent):
            self._count(event, 1, 0)
            value = self._scalar(event)
            self._remember(event.anchor, value, self.decoded - 1, self.aliases)
            if self.lines is not None:
                self._locate(event, value)
            self._add(value, event)
        elif isinstance(event, yaml.AliasEvent):
            if event.anchor not in self.anchors:
                raise self._fail(f"unknown anchor '{event.anchor}' referenced", event.start_mark)
            value, decoded, aliases = self.anchors[event.anchor]
            self._count(event, decoded, aliases + 1)
            if self.lines is not None:
                self._locate(event)
            # A fresh copy, so that changing one use of an anchor never changes another.
            self._add(
                json.loads(json.dumps(value)) if isinstance(value, dict | list) else value, event
            )
        return None

    def _locate(self, event: yaml.Event, scalar: Any = None) -> str:
        """The field path of the node `event` starts, noting its line: a sequence item's field
        starts at the item, a mapping entry's at its key."""
        assert self.lines is not None
        if not self.stack:
            return ""
        frame = self.stack[-1]
        line = event.start_mark.line + 1 if event.start_mark else self.line
        if isinstance(frame.value, list):
            path = f"{frame.path}[{len(frame.value)}]"
            self.lines.setdefault(path, line)
            return path
        if frame.has_key:
            if frame.key is _MERGE:  # a merge's fields are its mapping's
                return frame.path
            return _join(frame.path, self._key(frame.key, event))
        if isinstance(event, yaml.ScalarEvent) and scalar is not _MERGE:
            key = self._key(scalar, event)
            self.lines.setdefault(_join(frame.path, key), line)
            self.lines.setdefault(f"{frame.path}[{key}]", line)
        return ""

    def _count(self, event: yaml.Event, decoded: int, aliases: int) -> None:
        self.decoded += decoded
        self.aliases += aliases
        excessive = (
            self.aliases > 100
            and self.decoded > 1000
            and self.aliases / self.decoded > _allowed_alias_ratio(self.decoded)
        )
        if excessive or self.decoded > MAX_NODES:
            raise self._fail("document contains excessive aliasing", event.start_mark)

    def _remember(self, anchor: str | None, value: Any, decoded_at: int, aliases_at: int) -> None:
        if anchor is not None:
            self.anchors[anchor] = (value, self.decoded - decoded_at, self.aliases - aliases_at)

    def _add(self, value: Any, event: yaml.Event) -> None:
        frame = self.stack[-1] if self.stack else None
        if value is _MERGE and (frame is None or isinstance(frame.value, list) or frame.has_key):
            value = "<<"  # only a mapping key merges
        if frame is None:
            self.result = value
            return
        if isinstance(frame.value, list):
            frame.value.append(value)
        elif not frame.has_key:
            frame.key, frame.has_key = value, True
        else:
            frame.has_key = False
            if frame.key is _MERGE:
                merged = value if isinstance(value, list) else [value]
                if not all(isinstance(m, dict) for m in merged):
                    raise self._fail("map merge requires map or sequence of maps as the value",
                                     event.start_mark)  # fmt: skip
                frame.merges = (frame.merges or []) + merged
            else:
                frame.value[self._key(frame.key, event)] = value

    def _key(self, key: Any, event: yaml.Event) -> str:
        # sigs.k8s.io/yaml turns non-string keys into their string form.
        if isinstance(key, str):
            return key
        if key is None:
            return "null"
        if isinstance(key, bool):
            return "true" if key else "false"
        if isinstance(key, int | float):
            return _go_number(key)
        raise self._fail("mapping keys must be scalars", event.start_mark)

    def _scalar(self, event: yaml.ScalarEvent) -> Any:
        text = event.value
        if event.implicit[0]:
            return self._resolve(text, event, allow_merge=True)
        tag = event.tag
        if tag in (None, "!", "tag:yaml.org,2002:str"):
            return text
        if tag == "tag:yaml.org,2002:binary":
            try:
                return base64.b64decode(text).decode("utf-8", "replace")
            except ValueError:
                raise self._fail("!!binary value is not valid base64", event.start_mark) from None
        if tag in _RESOLVABLE_TAGS:
            return self._resolve(text, event, allow_merge=False)
        return text  # go-yaml keeps scalars with unknown tags as strings

    def _resolve(self, text: str, event: yaml.ScalarEvent, allow_merge: bool) -> Any:
        if text in _PLAIN_VALUES:
            value = _PLAIN_VALUES[text]
            if value is _MERGE and not allow_merge:
                return text
            if isinstance(value, float):
                raise self._fail(f"{text} cannot be represented in JSON", event.start_mark)
            return value
        if not text or (text[0] not in "+-." and not text[0].isdigit()):
            return text
        if text[0] == ".":
            return self._float(text, event) if _FLOAT.fullmatch(text) else text
        plain = text.replace("_", "")
        number = _go_int(plain)
        if number is not None:
            return number
        if _FLOAT.fullmatch(plain):
            return self._float(plain, event)
        return text

    def _float(self, text: str, event: yaml.ScalarEvent) -> int | float:
        value = float(text)
        if math.isinf(value):
            raise self._fail(f"{text} cannot be represented in JSON", event.start_mark)
        # JSON has one number type: a whole float reads back as an integer, as in Kubernetes.
        if value.is_integer() and abs(value) < 2**63:
            return int(value)
        return value


_RESOLVABLE_TAGS = frozenset(
    f"tag:yaml.org,2002:{t}" for t in ("int", "float", "bool", "null", "timestamp", "merge")
)
_PLAIN_VALUES: dict[str, Any] = {
    **dict.fromkeys(("", "~", "null", "Null", "NULL")),
    **dict.fromkeys(
        ("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True
    ),
    **dict.fromkeys(
        ("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False
    ),
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf),
    "<<": _MERGE,
}
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_INT_PREFIXES = {"0x": (16, "0123456789abcdefABCDEF"), "0o": (8, "01234567"), "0b": (2, "01")}


def _go_int(text: str) -> int | None:
    """Go's strconv.ParseInt(text, 0, 64), falling back to ParseUint; None if neither."""
    sign, digits = 1, text
    if digits[:1] in ("+", "-"):
        sign, digits = (-1 if digits[0] == "-" else 1), digits[1:]
    base, allowed = 10, "0123456789"
    prefix = digits[:2].lower()
    if prefix in _INT_PREFIXES:
        base, allowed = _INT_PREFIXES[prefix]
        digits = digits[2:]
    elif len(digits) > 1 and digits[0] == "0":
        base, allowed = 8, "01234567"
        digits = digits[1:]
    if not digits or any(c not in allowed for c in digits):
        return None
    value = sign * int(digits, base)
    if -(2**63) <= value < 2**64:
        return value
    return None


def _go_number(value: int | float) -> str:
    if isinstance(value, float) and not value.is_integer():
        return repr(value)
    return str(int(value))

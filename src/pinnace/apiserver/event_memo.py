"""What an Event's create pipeline made of a recorder's Event, remembered: the Events one
component records for one reason (a scheduler's Scheduled, a kubelet's Pulled) differ in their
name, eventTime, note and the object they regard (its name, uid and resourceVersion) only, and
decoding (of a body in the caller's own form), defaulting, admission, the strategy's preparation
and core's and events.k8s.io's validation give each of them the same Event but for those values,
the uid and the creationTimestamp.

Those varying values are copied, never read, but by validation: the name is a DNS subdomain
(ValidateObjectMeta; rest.BeforeCreate's path segment check passes every such name), eventTime
is set and the note takes at most NOTE_LENGTH_LIMIT bytes (legacy ValidateEventCreate). A
request whose values would fail a check is not served by the memo, so its error is the
pipeline's; nor is one in another form than a recorder's (metadata of a name and namespace, the
varying values strings).

What else decides the answer is in the key, as for pods (`create_memo`): the body but its
varying values, its namespace, the version's own validation, the feature gates and admission's
`generation`. An Event is remembered only when the pipeline gave no warning and put each varying
value where it was, and nowhere else; a create that fails is never remembered.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeGuard

import orjson

from pinnace.api.core.event import NOTE_LENGTH_LIMIT
from pinnace.api.names import is_good_dns1123_subdomain
from pinnace.api.objects import Object, Remembered, plain_json

_STAND_IN = "-"
_REGARDING = ("name", "uid", "resourceVersion")
"""The fields of `involvedObject` that vary from Event to Event."""
_RECORDED_META = frozenset({"name", "namespace"})


class EventTemplate(NamedTuple):
    """A recorder's Event create as the memo knows it: its key and its varying values."""

    key: Hashable
    name: str
    event_time: str
    regarding: tuple[tuple[str, str], ...]
    """The varying fields of `involvedObject` the Event sets, with their values."""
    note: str | None
    """Its `message`, None when it has none."""


@dataclass(frozen=True, slots=True)
class MadeEvent:
    """What the pipeline made of a template, with the first Event's own values in it."""

    event: Object
    """The Event as the pipeline made it, shared with every Event made of it: never changed."""

    def instance(self, template: EventTemplate, uid: str, now: str) -> Object:
        """A new Event of the template, with its own values: a new object sharing the rest
        (stored objects are read-only, `pinnace.store.interface`)."""
        event = self.event
        m = {**event["metadata"], "name": template.name, "uid": uid, "creationTimestamp": now}
        obj = {**event, "metadata": m, "eventTime": template.event_time}
        obj["involvedObject"] = {**event["involvedObject"], **dict(template.regarding)}
        if template.note is not None:
            obj["message"] = template.note
        return obj


class EventMemo:
    """The Events created lately, by `EventTemplate.key`; one is remembered when its template's
    second Event comes."""

    def __init__(self, size: int = 256) -> None:
        self._made: Remembered[MadeEvent] = Remembered(size, only_returning=True)

    @staticmethod
    def template(body: Any, context: tuple[Hashable, ...]) -> EventTemplate | None:
        """The template of a create's body in the caller's own form, with `context` (the rest of
        what the answer depends on); None when the memo does not serve it."""
        if not isinstance(body, dict):
            return None
        m = body.get("metadata")
        involved = body.get("involvedObject")
        if not isinstance(m, dict) or not isinstance(involved, dict) or m.keys() - _RECORDED_META:
            return None
        name, event_time, note = m.get("name"), body.get("eventTime"), body.get("message")
        if not (_is_str(name) and is_good_dns1123_subdomain(name)):
            return None
        if not (_is_str(event_time) and event_time) or not (note is None or _fits(note)):
            return None
        regarding = tuple((f, involved[f]) for f in _REGARDING if f in involved)
        if not all(_is_str(value) for _, value in regarding):
            return None
        stand_ins = {**body, "metadata": {**m, "name": _STAND_IN}, "eventTime": _STAND_IN}
        stand_ins["involvedObject"] = {**involved, **dict.fromkeys(dict(regarding), _STAND_IN)}
        if note is not None:
            stand_ins["message"] = _STAND_IN
        text = plain_json(stand_ins)
        if text is None:
            return None
        return EventTemplate((text, *context), name, event_time, regarding, note)

    def recall(self, template: EventTemplate) -> MadeEvent | None:
        return self._made.get(template.key)

    def remember(self, template: EventTemplate, obj: Object, warnings: list[str]) -> None:
        """Remember what the pipeline made of `template`: `obj` as it is to be stored."""
        if warnings or not self._made.returning(template.key):
            return
        made = _made(template, obj)
        if made is not None:
            self._made.put(template.key, made)


def _is_str(value: Any) -> TypeGuard[str]:
    return type(value) is str


def _fits(note: Any) -> bool:
    """Whether `note` is a string validation takes as a message (at most NOTE_LENGTH_LIMIT
    bytes)."""
    return _is_str(note) and (len(note) * 4 <= NOTE_LENGTH_LIMIT or _utf8_fits(note))


def _utf8_fits(note: str) -> bool:
    return len(note.encode()) <= NOTE_LENGTH_LIMIT


def _made(template: EventTemplate, obj: Object) -> MadeEvent | None:
    m = obj.get("metadata")
    involved = obj.get("involvedObject")
    if not isinstance(m, dict) or not isinstance(involved, dict):
        return None
    uid, now = m.get("uid"), m.get("creationTimestamp")
    own = [template.name, uid, now, template.event_time, *(v for _, v in template.regarding)]
    found = [m.get("name"), uid, now, obj.get("eventTime")]
    found += [involved.get(f) for f, _ in template.regarding]
    if template.note is not None:
        own.append(template.note)
        found.append(obj.get("message"))
    if own != found or not all(_is_str(v) for v in own) or len(set(own)) < len(own):
        return None  # moved, or two of the Event's own values are the same text
    text = orjson.dumps(obj)
    if any(text.count(orjson.dumps(value)) != 1 for value in own):
        return None
    return MadeEvent(orjson.loads(text))

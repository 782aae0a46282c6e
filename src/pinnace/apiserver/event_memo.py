"""What an Event's create pipeline made of a recorder's Event, remembered: the Events one
component records for one reason (a scheduler's Scheduled, a kubelet's Started) differ in their
own values only: their name, their times (eventTime, or a core/v1 Event's firstTimestamp and
lastTimestamp), note, reporting instance and source host, and the object they regard (its name,
uid and resourceVersion). Decoding (of a body in the caller's own form), defaulting, admission,
the strategy's preparation and core's and events.k8s.io's validation give each of them the same
Event but for those values, the uid and the creationTimestamp.

Those values are copied, never read, but by validation, which a value passes alike for every
value the memo takes: the name is a DNS subdomain (ValidateObjectMeta; rest.BeforeCreate's path
segment check passes every such name); eventTime, firstTimestamp, lastTimestamp, the reporting
instance and the source host are checked to be set or unset (so each is an own value only when
it is a non-empty string, and is part of the key otherwise); the reporting instance takes at
most REPORTING_INSTANCE_LENGTH_LIMIT bytes and the note at most NOTE_LENGTH_LIMIT (legacy
ValidateEventCreate). A request whose values would fail a check is not served by the memo, so
its error is the pipeline's; nor is one in another form than a recorder's (metadata of a name
and namespace, the own values strings).

What else decides the answer is in the key, as for pods (`create_memo`): the body but its own
values, which of those are the same text (a recorder stamps firstTimestamp and lastTimestamp
alike, and its host is its instance), its namespace, the version's own validation, the feature
gates and admission's `generation`. An Event is remembered only when the pipeline gave no
warning and put each own value where it was, and nowhere else: each value's text is in the
Event as often as it is an own value (the create's time, in creationTimestamp, is often the
recorder's stamp too). A create that fails is never remembered.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeGuard

import orjson

from pinnace.api.core.event import (
    NOTE_LENGTH_LIMIT,
    REPORTING_INSTANCE_LENGTH_LIMIT,
    longer_than,
)
from pinnace.api.names import is_good_dns1123_subdomain
from pinnace.api.objects import Object, Remembered, alike, plain_json

_STAND_IN = "-"
_TOP = ("eventTime", "firstTimestamp", "lastTimestamp", "reportingInstance")
"""The Event's own values at its top level when set, but its note (`message`)."""
_REGARDING = ("name", "uid", "resourceVersion")
"""The fields of `involvedObject` that vary from Event to Event."""
_RECORDED_META = frozenset({"name", "namespace"})


class EventTemplate(NamedTuple):
    """A recorder's Event create as the memo knows it: its key and its own values."""

    key: Hashable
    name: str
    top: dict[str, str]
    """The Event's own values at its top level (`_TOP`, and a non-empty `message`), by field."""
    regarding: dict[str, str]
    """The varying fields of `involvedObject` the Event sets, with their values."""
    host: str | None
    """Its source's host, None when it is not an own value."""


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
        obj = {**event, "metadata": m, **template.top}
        if template.regarding:
            obj["involvedObject"] = {**event["involvedObject"], **template.regarding}
        if template.host is not None:
            obj["source"] = {**event["source"], "host": template.host}
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
        if not isinstance(m, dict) or not isinstance(involved, dict):
            return None
        if not m.keys() <= _RECORDED_META:
            return None
        name = m.get("name")
        if type(name) is not str or not is_good_dns1123_subdomain(name):
            return None
        top = _own_values(body, _TOP)
        note = body.get("message")
        if note is not None and not _fits_note(note):
            return None
        if note:  # "" stays in the key, as every unset value does
            top["message"] = note
        instance = top.get("reportingInstance")  # a string, as every own value
        if instance is not None and longer_than(instance, REPORTING_INSTANCE_LENGTH_LIMIT):
            return None
        regarding = _own_values(involved, _REGARDING)
        stand_ins = {**body, **dict.fromkeys(top, _STAND_IN), "metadata": {**m, "name": _STAND_IN}}
        if regarding:
            stand_ins["involvedObject"] = {**involved, **dict.fromkeys(regarding, _STAND_IN)}
        own = [name, *top.values(), *regarding.values()]
        host: str | None = None
        source = body.get("source")
        if isinstance(source, dict) and _is_own(source.get("host")):
            host = source["host"]
            stand_ins["source"] = {**source, "host": _STAND_IN}
            own.append(host)
        text = plain_json(stand_ins)
        if text is None:
            return None
        return EventTemplate((text, alike(own), *context), name, top, regarding, host)

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


def _own_values(fields: dict[str, Any], names: tuple[str, ...]) -> dict[str, str]:
    """The own values (`_is_own`) among `fields`' `names`, by name."""
    own = {}
    for name in names:  # a loop: a comprehension's frame costs more than the rest
        value = fields.get(name)
        if type(value) is str and value:
            own[name] = value
    return own


def _is_own(value: Any) -> TypeGuard[str]:
    """Whether a field's value is an own value of its Event: a non-empty string (checks that
    it is set pass for every such value; an unset one is part of the key)."""
    return type(value) is str and value != ""


def _fits_note(text: Any) -> bool:
    """Whether `text` is a string of at most NOTE_LENGTH_LIMIT bytes in UTF-8."""
    return type(text) is str and not longer_than(text, NOTE_LENGTH_LIMIT)


def _made(template: EventTemplate, obj: Object) -> MadeEvent | None:
    m = obj.get("metadata")
    involved = obj.get("involvedObject")
    source = obj.get("source")
    if not isinstance(m, dict) or not isinstance(involved, dict):
        return None
    uid, now = m.get("uid"), m.get("creationTimestamp")
    if not (_is_str(uid) and _is_str(now)):
        return None
    own = [template.name, *template.top.values(), *template.regarding.values()]
    found = [m.get("name"), *map(obj.get, template.top), *map(involved.get, template.regarding)]
    if template.host is not None:
        own.append(template.host)
        found.append(source.get("host") if isinstance(source, dict) else None)
    if own != found:
        return None  # moved
    text = orjson.dumps(obj)
    times = Counter([*own, uid, now])
    if any(text.count(orjson.dumps(value)) != n for value, n in times.items()):
        return None  # also somewhere else
    return MadeEvent(orjson.loads(text))

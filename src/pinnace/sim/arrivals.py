"""Workload generators: pods or Jobs arriving by a Poisson process or at a fixed rate, each with
a run time and a usage drawn from the scenario's distributions, on the generator's own seeded
stream (so adding a generator leaves the others' draws as they were).

An arrival is the template created under the name `<generator>-<n>` (n counting from 1), with
the draws as the simulated container's behaviour annotations (docs/nodes.md): its run time as
`sim.pinnace.dev/run-seconds`, its usage as `sim.pinnace.dev/<resource>` (cpu in millicores,
memory and ephemeral-storage in bytes, pids a count). A create the API server refuses (a
quota, say) is counted and the arrivals go on, as a client of a real cluster would carry on.
After the first few, the arrivals are made in the form the API server's decoding gives, which it
takes as it is (`_Arrivals`): the same objects stored, without decoding each again.
"""

from __future__ import annotations

import asyncio
import copy
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from pinnace.api import catalog
from pinnace.api.decode import decode
from pinnace.api.kind import Kind
from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.api.versions import served_version
from pinnace.client import LocalClient
from pinnace.clock import Randomness
from pinnace.kubelet import behaviour
from pinnace.sim.scenario import USAGE_ANNOTATIONS, Arrivals, FixedRate, Poisson

RUN_SECONDS = "sim.pinnace.dev/run-seconds"


@dataclass(frozen=True)
class Arrival:
    """One arrival of a generator: when (on the clock), its name and draws."""

    at: float
    name: str
    annotations: dict[str, str]
    """The annotations its draws set (run time, usage)."""


def arrivals_of(arrivals: Arrivals, randomness: Randomness, started_at: float) -> Iterator[Arrival]:
    """The generator's arrivals in order, until its stop time or count, each drawn from its
    own stream of `randomness` (the cluster's): the same in every engine for a seed."""
    rng = randomness.child("arrivals").child(arrivals.name).numpy
    at = started_at + arrivals.start
    created = 0
    while arrivals.count is None or created < arrivals.count:
        at += _gap(arrivals, rng) if created or isinstance(arrivals.process, Poisson) else 0.0
        if arrivals.stop is not None and at >= started_at + arrivals.stop:
            return
        created += 1
        name, annotations = _draws(arrivals, created, rng)
        yield Arrival(at, name, annotations)


async def run_arrivals(
    arrivals: Arrivals,
    client: LocalClient,
    randomness: Randomness,
    started_at: float,
    refused: Counter[str],
) -> None:
    """Create the generator's arrivals until its stop time or count; `refused` counts, per
    generator, the creates the API server refused."""
    kind = catalog.by_kind(arrivals.template["apiVersion"], arrivals.template["kind"])
    assert kind is not None, "the scenario parser checks the template's kind"
    clock = client.clock
    make = _Arrivals(arrivals, kind)
    for arrival in arrivals_of(arrivals, randomness, started_at):
        await asyncio.sleep(max(0.0, arrival.at - clock.now()))
        obj, decoded = make(arrival)
        try:
            if decoded:
                await client.create_own(kind, arrivals.namespace, obj)
            else:
                await client.create(kind, arrivals.namespace, obj)
        except StatusError:
            refused[arrivals.name] += 1


def _gap(arrivals: Arrivals, rng: Any) -> float:
    process = arrivals.process
    if isinstance(process, FixedRate):
        return process.interval_seconds
    return float(rng.exponential(1.0 / process.rate_per_second))


CHECKED = 2
"""Arrivals made from the template as written, and compared with what decoding makes of them,
before the rest are made in decoded form."""


class _Arrivals:
    """The generator's arrivals, each with whether it is in the form the API server's decoding
    gives (to create with `Client.create_own`).

    The arrivals of a template differ only in their name and in the values of the annotations
    their draws set, which decoding keeps as they are: the first `CHECKED` arrivals are made
    from the template and created as any client's body, and decoded here too; when decoding
    refuses or warns of none of them, and the decoded one before, given the next one's name
    and draws, is the next one decoded (byte for byte: the event log's digests see the JSON
    text), the rest are made from the decoded text, and the API server takes them as they
    are rather than decode each again (a fifth of a pod's create)."""

    def __init__(self, arrivals: Arrivals, kind: Kind) -> None:
        self._arrivals = arrivals
        self._kind = kind
        self._copy_template = _copier(arrivals.template)
        self._decoded = b""
        """The JSON text of the last arrival checked, decoded ("": none yet, or not taken)."""
        # A kind served at a version other than the stored one is decoded once converted.
        stored = served_version(kind.group, kind.version, kind.plural) is None
        self._unchecked = CHECKED if stored else -1

    def __call__(self, arrival: Arrival) -> tuple[Object, bool]:
        name, annotations = arrival.name, arrival.annotations
        if not self._unchecked:
            obj = orjson.loads(self._decoded)
            _name(obj, name, annotations, keep_empty=False)
            return obj, True
        obj = self._copy_template()
        _name(obj, name, annotations)
        self._check(obj, name, annotations)
        return obj, False

    def _check(self, obj: Object, name: str, annotations: dict[str, str]) -> None:
        if self._unchecked < 0:
            return  # not taken
        try:
            decoded = decode(orjson.loads(orjson.dumps(obj)), self._kind)
        except (StatusError, TypeError):
            decoded = None
        if decoded is None or decoded.warnings:
            self._unchecked = -1
            return
        text = orjson.dumps(decoded.obj)
        if self._decoded:
            made = orjson.loads(self._decoded)
            _name(made, name, annotations, keep_empty=False)
            if orjson.dumps(made) != text:
                self._unchecked = -1
                return
        self._decoded = text
        self._unchecked -= 1


def _copier(template: Object) -> Callable[[], Object]:
    """Deep copies of `template`: read from its JSON text, several times quicker, when that
    reads back as equal to it (a template of JSON values, as a scenario file gives)."""
    try:
        text = orjson.dumps(template)
    except TypeError:
        text = b""
    if text and orjson.loads(text) == template:
        return lambda: orjson.loads(text)
    return lambda: copy.deepcopy(template)


def _draws(arrivals: Arrivals, n: int, rng: Any) -> tuple[str, dict[str, str]]:
    """The generator's `n`th arrival's name, and the annotations its draws set."""
    annotations = {}
    if arrivals.run_time is not None:
        annotations[RUN_SECONDS] = behaviour.seconds_value(arrivals.run_time.sample(rng))
    for resource, distribution in sorted(arrivals.usage.items()):
        value = max(0.0, distribution.sample(rng))
        annotations[USAGE_ANNOTATIONS[resource]] = (
            f"{round(value * 1000)}m" if resource == "cpu" else str(round(value))
        )
    return f"{arrivals.name}-{n}", annotations


def _name(obj: Object, name: str, annotations: dict[str, str], *, keep_empty: bool = True) -> None:
    """Make `obj`, a copy of the template, the arrival of `name` and `annotations`."""
    obj.setdefault("metadata", {})["name"] = name
    obj["metadata"].pop("generateName", None)
    pod_meta = obj["metadata"] if obj["kind"] == "Pod" else _template_metadata(obj)
    if annotations or keep_empty:
        pod_meta.setdefault("annotations", {}).update(annotations)


def _template_metadata(obj: Object) -> dict[str, Any]:
    template = obj.setdefault("spec", {}).setdefault("template", {})
    meta: dict[str, Any] = template.setdefault("metadata", {})
    return meta

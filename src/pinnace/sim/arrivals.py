"""Workload generators: pods or Jobs arriving by a Poisson process or at a fixed rate, each with
a run time and a usage drawn from the scenario's distributions, on the generator's own seeded
stream (so adding a generator leaves the others' draws as they were).

An arrival is the template created under the name `<generator>-<n>` (n counting from 1), with
the draws as the simulated container's behaviour annotations (docs/nodes.md): its run time as
`sim.pinnace.dev/run-seconds`, its usage as `sim.pinnace.dev/<resource>` (cpu in millicores,
memory and ephemeral-storage in bytes, pids a count). A create the API server refuses (a
quota, say) is counted and the arrivals go on, as a client of a real cluster would carry on.
"""

from __future__ import annotations

import asyncio
import copy
from collections import Counter
from collections.abc import Callable
from typing import Any

import orjson

from pinnace.api import catalog
from pinnace.api.objects import Object
from pinnace.api.status import StatusError
from pinnace.client import LocalClient
from pinnace.clock import Randomness
from pinnace.kubelet import behaviour
from pinnace.sim.scenario import USAGE_ANNOTATIONS, Arrivals, FixedRate, Poisson

RUN_SECONDS = "sim.pinnace.dev/run-seconds"


async def run_arrivals(
    arrivals: Arrivals,
    client: LocalClient,
    randomness: Randomness,
    started_at: float,
    refused: Counter[str],
) -> None:
    """Create the generator's arrivals until its stop time or count; `refused` counts, per
    generator, the creates the API server refused."""
    rng = randomness.child("arrivals").child(arrivals.name).numpy
    kind = catalog.by_kind(arrivals.template["apiVersion"], arrivals.template["kind"])
    assert kind is not None, "the scenario parser checks the template's kind"
    clock = client.clock
    at = started_at + arrivals.start
    copy_template = _copier(arrivals.template)
    created = 0
    while arrivals.count is None or created < arrivals.count:
        at += _gap(arrivals, rng) if created or isinstance(arrivals.process, Poisson) else 0.0
        if arrivals.stop is not None and at >= started_at + arrivals.stop:
            return
        await asyncio.sleep(max(0.0, at - clock.now()))
        created += 1
        obj = _arrival(arrivals, copy_template(), created, rng)
        try:
            await client.create(kind, arrivals.namespace, obj)
        except StatusError:
            refused[arrivals.name] += 1


def _gap(arrivals: Arrivals, rng: Any) -> float:
    process = arrivals.process
    if isinstance(process, FixedRate):
        return process.interval_seconds
    return float(rng.exponential(1.0 / process.rate_per_second))


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


def _arrival(arrivals: Arrivals, obj: Object, n: int, rng: Any) -> Object:
    """`obj`, a copy of the template, made the generator's `n`th arrival."""
    obj.setdefault("metadata", {})["name"] = f"{arrivals.name}-{n}"
    obj["metadata"].pop("generateName", None)
    pod_meta = obj["metadata"] if obj["kind"] == "Pod" else _template_metadata(obj)
    annotations = pod_meta.setdefault("annotations", {})
    if arrivals.run_time is not None:
        annotations[RUN_SECONDS] = behaviour.seconds_value(arrivals.run_time.sample(rng))
    for resource, distribution in sorted(arrivals.usage.items()):
        value = max(0.0, distribution.sample(rng))
        annotations[USAGE_ANNOTATIONS[resource]] = (
            f"{round(value * 1000)}m" if resource == "cpu" else str(round(value))
        )
    return obj


def _template_metadata(obj: Object) -> dict[str, Any]:
    template = obj.setdefault("spec", {}).setdefault("template", {})
    meta: dict[str, Any] = template.setdefault("metadata", {})
    return meta

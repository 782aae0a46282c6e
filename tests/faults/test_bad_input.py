"""Bad input: a bounded, seeded random fuzz of request bodies and paths over HTTP (JSON garbage,
valid objects with a field of the wrong type, huge numbers, nesting within the limits, bad
query parameters, every patch type). kube-apiserver answers all of it with a 4xx (but for one
deliberate 500, DELIBERATE below): no 5xx, every request answered, no traceback in the log, and
`/readyz` keeps answering. Short: 300 requests; long: 5,000."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import requests
from tests.faults.conftest import readyz_seconds, report, rss_mib, scale
from tests.http.conftest import launch

SEED = 22
DELIBERATE = "failed to create typed patch object"
"""kube-apiserver v1.32 answers 500 when a server-side apply body does not fit the schema
(kubernetes/kubernetes#122480), and so does Pinnace."""
ANSWER_SECONDS = 10
COLLECTIONS = [
    "/api/v1/namespaces/default/configmaps",
    "/api/v1/namespaces/default/pods",
    "/api/v1/namespaces/default/services",
    "/api/v1/namespaces/default/events",
    "/api/v1/namespaces",
    "/api/v1/nodes",
    "/apis/apps/v1/namespaces/default/deployments",
    "/apis/batch/v1/namespaces/default/jobs",
    "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
]
PATCH_TYPES = [
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
]
SAMPLE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "fuzz", "labels": {"a": "b"}, "annotations": {"c": "d"}},
    "spec": {
        "containers": [
            {
                "name": "c",
                "image": "nginx",
                "resources": {"requests": {"cpu": "1", "memory": "1Gi"}},
                "ports": [{"containerPort": 80}],
            }
        ],
        "replicas": 1,
        "selector": {"matchLabels": {"a": "b"}},
        "template": {"metadata": {"labels": {"a": "b"}}},
    },
    "data": {"k": "v"},
    "involvedObject": {"kind": "Pod", "name": "fuzz"},
}


def scalar(chance: random.Random) -> Any:
    return chance.choice(
        [
            None,
            True,
            0,
            -1,
            2**63,
            -(2**64),
            10**40,
            1.5e308,
            -0.0,
            "",
            "x" * chance.randint(1, 300),
            "1e400",
            "\u00e9\u2603",
            "\x7f",
            [],
            {},
        ]
    )


def value(chance: random.Random, depth: int = 0) -> Any:
    """A random JSON value, nested at most 40 deep."""
    kind = chance.random()
    if depth > 40 or kind < 0.5:
        return scalar(chance)
    if kind < 0.75:
        return [value(chance, depth + 1) for _ in range(chance.randint(0, 3))]
    return {chance.choice(["metadata", "spec", "name", "x"]): value(chance, depth + 1)}


def mutated(chance: random.Random) -> Any:
    """SAMPLE with one field (at any depth) replaced by a random value."""
    body = json.loads(json.dumps(SAMPLE))
    node: Any = body
    while True:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        key = chance.choice(keys)
        if isinstance(node[key], (dict, list)) and node[key] and chance.random() < 0.6:
            node = node[key]
            continue
        node[key] = value(chance)
        return body


def payload(chance: random.Random) -> bytes:
    pick = chance.random()
    if pick < 0.15:
        return bytes(chance.randrange(256) for _ in range(chance.randint(0, 200)))
    if pick < 0.25:
        depth = chance.randint(1, 90)
        return ("[" * depth + "1" + "]" * depth).encode()
    if pick < 0.35:
        return b'{"metadata": {"name": "n"}, "x": ' + b"9" * chance.randint(20, 5000) + b"}"
    if pick < 0.45:
        return json.dumps(value(chance)).encode()
    return json.dumps(mutated(chance)).encode()


def request(chance: random.Random, url: str) -> tuple[requests.PreparedRequest, int, str]:
    """A random request, and its answer's status and body (0 and the error for none)."""
    collection = chance.choice(COLLECTIONS)
    name = chance.choice(["fuzz", "fuzz", "", "%00", "a" * 300, "..", "UPPER", "fuzz/status"])
    query = chance.choice(
        [
            "",
            "?dryRun=All",
            "?fieldManager=f",
            "?labelSelector=%21%21",
            "?limit=-1",
            "?resourceVersion=abc",
            "?fieldValidation=Strict",
            "?watch=maybe",
            "?timeoutSeconds=x",
        ]
    )
    method = chance.choice(["POST", "PUT", "PATCH", "GET", "DELETE"])
    path = collection if method == "POST" or not name else f"{collection}/{name}"
    headers = {"Content-Type": "application/json"}
    if method == "PATCH":
        headers["Content-Type"] = chance.choice(PATCH_TYPES)
        query = query or "?fieldManager=f"
    sent = requests.Request(
        method, url + path + query, data=payload(chance), headers=headers
    ).prepare()
    try:
        # A stream: `watch=maybe` is a watch, as Go's query conversion reads any value but
        # 0/f/false as true, and its body does not end.
        with (
            requests.Session() as session,
            session.send(sent, timeout=ANSWER_SECONDS, stream=True) as answer,
        ):
            return sent, answer.status_code, answer.text if answer.status_code >= 500 else ""
    except requests.RequestException as e:
        return sent, 0, f"no answer: {e}"


def test_random_bad_input_never_gets_a_5xx(tmp_path: Path) -> None:
    count = scale(300, 5000)
    chance = random.Random(SEED)
    cluster = launch(tmp_path)
    failures: list[str] = []
    statuses: dict[int, int] = {}
    worst_readyz, deliberate = 0.0, 0
    try:
        for index in range(count):
            sent, status, text = request(chance, cluster.url)
            statuses[status] = statuses.get(status, 0) + 1
            if status == 500 and DELIBERATE in text:
                deliberate += 1
            elif status >= 500 or status == 0:
                failures.append(
                    f"{sent.method} {sent.url} {sent.body!r:.300} -> {status} {text:.300}"
                )
            if index % 50 == 0:
                worst_readyz = max(worst_readyz, readyz_seconds(cluster))
        worst_readyz = max(worst_readyz, readyz_seconds(cluster))
        rss = rss_mib(cluster.process.pid)
    finally:
        cluster.process.terminate()
        cluster.process.wait(20)
    log = (tmp_path / "server.log").read_text()
    report(
        "bad-input",
        requests=count,
        server_errors_or_no_answer=len(failures),
        deliberate_apply_500=deliberate,
        statuses=dict(sorted(statuses.items())),
        worst_readyz_s=worst_readyz,
        rss_mib=rss,
        tracebacks_in_log=log.count("Traceback"),
    )
    for failure in failures:
        print(failure)
    assert failures == []
    assert "Traceback" not in log, log[log.index("Traceback") - 200 :][:3000]

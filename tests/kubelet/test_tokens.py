"""The kubelet's projected service account tokens, as v1.32's token manager keeps them: a
token requested for the pod (bound to it and its node) in the volume's file, which a container
reads; renewed at 80% of its lifetime, so the file changes before the old token expires and
is refused; a mount that waits for it and fails with the kubelet's words when it cannot be
had. On the virtual clock."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from tests.kubelet.test_exec import Terminal
from tests.support import SimulatedCluster

from pinnace.api import catalog
from pinnace.api.streams import StreamOptions
from pinnace.apiserver.auth.tokens import TokenError
from pinnace.cluster import ClusterOptions
from pinnace.kubelet import node_configs

PODS = catalog.kind("", "pods")
SERVICE_ACCOUNTS = catalog.kind("", "serviceaccounts")
EVENTS = catalog.kind("", "events")
CONFIG_MAPS = catalog.kind("", "configmaps")
ACCESS = "/var/run/secrets/kubernetes.io/serviceaccount/token"
SHORT = "/var/run/secrets/tokens/short"


def _options(**options: Any) -> ClusterOptions:
    """One node, seed 11, and no dashboard: the usage history kept for it samples the cluster
    every 10 s, which over these tests' days of virtual time cost more than all the rest, and
    no token depends on it."""
    return ClusterOptions(nodes=node_configs(1), seed=11, dashboard=False, **options)


@pytest.fixture
def cluster() -> Iterator[SimulatedCluster]:
    c = SimulatedCluster(_options())
    yield c
    c.close()


def reader(name: str, script: str, account: str = "default") -> dict[str, Any]:
    """A pod with a 600 s token at SHORT beside its kube-api-access volume."""
    short = {"serviceAccountToken": {"path": "short", "expirationSeconds": 600}}
    container = {
        "name": "app",
        "image": "busybox",
        "command": ["sh", "-c", script],
        "volumeMounts": [{"name": "tokens", "mountPath": "/var/run/secrets/tokens"}],
    }
    return {
        "metadata": {"name": name},
        "spec": {
            "serviceAccountName": account,
            "containers": [container],
            "volumes": [{"name": "tokens", "projected": {"sources": [short]}}],
        },
    }


def printed(cluster: SimulatedCluster, name: str) -> list[str]:
    pod = cluster.run(cluster.client.get(PODS, "default", name))
    [agent] = cluster.plane.nodes.agents.values()
    run = agent.workers[pod["metadata"]["uid"]].container_log("app", previous=False)
    assert run is not None
    return [line for _, line in run.log]


def who(cluster: SimulatedCluster, token: str) -> Any:
    found = cluster.run(cluster.server.authenticate_service_account(token))
    assert found is not None
    return found[0]


def claims(token: str) -> dict[str, Any]:
    decoded: dict[str, Any] = json.loads(base64.urlsafe_b64decode(token.split(".")[1] + "=="))
    return decoded


def test_a_container_reads_a_token_bound_to_its_pod_and_renewed_before_it_expires(
    cluster: SimulatedCluster,
) -> None:
    script = f"cat {ACCESS}; echo; while true; do cat {SHORT}; echo; sleep 60; done"
    cluster.run(cluster.client.create(PODS, "default", reader("web", script)))
    cluster.wait(5)
    pod = cluster.run(cluster.client.get(PODS, "default", "web"))
    access, first = printed(cluster, "web")[:2]
    user = who(cluster, access)
    assert user.name == "system:serviceaccount:default:default"
    assert user.extra["authentication.kubernetes.io/pod-name"] == ("web",)
    assert user.extra["authentication.kubernetes.io/pod-uid"] == (pod["metadata"]["uid"],)
    assert user.extra["authentication.kubernetes.io/node-name"] == (pod["spec"]["nodeName"],)
    # kube-api-access: asked for 3607 s, it lasts a year and warns after 3607 s
    access_claims = claims(access)
    assert access_claims["exp"] - access_claims["iat"] == 365 * 24 * 3600
    assert access_claims["kubernetes.io"]["warnafter"] - access_claims["iat"] == 3607
    assert claims(first)["exp"] - claims(first)["iat"] == 600
    assert who(cluster, first).name == user.name

    cluster.wait(600)  # past 80% of the 600 s: renewed, the old one not yet expired
    lines = printed(cluster, "web")[1:]
    renewed = lines[-1]
    assert renewed != first and set(lines) == {first, renewed}
    assert who(cluster, renewed).name == user.name
    cluster.wait(61)  # past the first token's expiry, and go-jose's minute of leeway
    with pytest.raises(TokenError, match="service account token has expired"):
        cluster.run(cluster.server.authenticate_service_account(first))
    assert who(cluster, printed(cluster, "web")[-1]).name == user.name

    cluster.run(cluster.client.delete(PODS, "default", "web"))
    cluster.wait(120)
    with pytest.raises(TokenError, match="service account token has been invalidated"):
        cluster.run(cluster.server.authenticate_service_account(renewed))


def test_a_token_that_cannot_be_had_fails_the_mount_until_it_can(
    cluster: SimulatedCluster,
) -> None:
    account = {"metadata": {"name": "robot"}}
    cluster.run(cluster.client.create(SERVICE_ACCOUNTS, "default", account))
    cluster.run(cluster.client.create(PODS, "default", reader("job", f"cat {SHORT}", "robot")))
    cluster.run(cluster.client.delete(SERVICE_ACCOUNTS, "default", "robot"))
    cluster.wait(5)
    events = cluster.run(cluster.client.list(EVENTS, "default"))["items"]
    messages = {e["message"] for e in events if e["reason"] == "FailedMount"}
    assert (
        'MountVolume.SetUp failed for volume "tokens" : failed to fetch token: '
        'serviceaccounts "robot" not found'
    ) in messages
    pod = cluster.run(cluster.client.get(PODS, "default", "job"))
    assert pod["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == (
        "ContainerCreating"
    )
    cluster.run(cluster.client.create(SERVICE_ACCOUNTS, "default", account))
    cluster.wait(130)  # the mount's back-off, at most 2 min 2 s
    [token] = printed(cluster, "job")
    assert who(cluster, token).name == "system:serviceaccount:default:robot"


# --- the simulated mode: refreshes nobody reads are made when read ----------------------------

PERIOD = 3607 - 3607 * 20 // 100 + 1
"""A kube-api-access token's refresh period: the first whole second past 80% of 3607 s."""


def _cluster(simulated: bool) -> SimulatedCluster:
    return SimulatedCluster(_options(simulated=simulated))


def _exec_cat(cluster: SimulatedCluster, name: str, path: str) -> str:
    pod = cluster.run(cluster.client.get(PODS, "default", name))
    [agent] = cluster.plane.nodes.agents.values()
    session = agent.exec(pod, StreamOptions("app", ("cat", path)))
    terminal = Terminal(cluster.clock, [])
    assert cluster.run(session(terminal)) == 0
    return terminal.text()


def _sleeper(name: str) -> dict[str, Any]:
    container = {"name": "app", "image": "busybox", "command": ["sleep", "1000000"]}
    return {"metadata": {"name": name}, "spec": {"containers": [container]}}


def _times(token: str) -> tuple[int, int, int, int]:
    c = claims(token)
    return c["iat"], c["nbf"], c["exp"], c["kubernetes.io"]["warnafter"]


def _exec_reads(simulated: bool, gaps: list[int]) -> tuple[float, list[tuple[float, str]]]:
    """When the pod's first token came, and (time, token) of `cat` through exec after each
    gap."""
    cluster = _cluster(simulated)
    try:
        cluster.run(cluster.client.create(PODS, "default", _sleeper("idle")))
        cluster.wait(2)
        started = cluster.clock.now()
        reads = []
        for gap in gaps:
            cluster.wait(gap)
            reads.append((cluster.clock.now(), _exec_cat(cluster, "idle", ACCESS)))
        return started, reads
    finally:
        cluster.close()


def test_a_token_read_after_refreshes_nobody_read_has_the_times_of_the_last_refresh() -> None:
    gaps = [10, 3 * PERIOD + 500, 7 * PERIOD + 100, 30 * 3600]
    started, reads = _exec_reads(True, gaps)
    first_iat = _times(reads[0][1])[0]
    assert started - 2 <= first_iat <= started
    for at, token in reads:
        iat, nbf, exp, warn_after = _times(token)
        # requiresRefresh: refreshed at the first whole second past 80% of 3607 s, each time
        assert iat == first_iat + (int(at) - first_iat) // PERIOD * PERIOD
        assert (nbf, exp, warn_after) == (iat, iat + 365 * 24 * 3600, iat + 3607)
    _, live = _exec_reads(False, gaps)
    assert [_times(t) for _, t in reads] == [_times(t) for _, t in live]
    again = _exec_reads(True, gaps)[1]  # the same seed: the same claims, jti included
    assert [claims(t) for _, t in again] == [claims(t) for _, t in reads]


@pytest.mark.parametrize("partitioned", [False, True])
def test_a_container_reading_its_token_now_and_then_sees_what_the_live_mode_shows(
    partitioned: bool,
) -> None:
    script = f"while true; do cat {SHORT}; echo; sleep 700; done"  # refreshed every 481 s

    def seen(simulated: bool) -> list[tuple[int, int]]:
        cluster = _cluster(simulated)
        try:
            cluster.run(cluster.client.create(PODS, "default", reader("loop", script)))
            cluster.wait(3 * 3600)
            if partitioned:  # refreshes fail, the old token is kept, then it expires
                [node] = cluster.plane.nodes.agents
                cluster.run(cluster.plane.nodes.partition(node))
                cluster.wait(1800)
                cluster.run(cluster.plane.nodes.recover_node(node))
            cluster.wait(3 * 3600)
            return [(c["iat"], c["exp"]) for c in map(claims, printed(cluster, "loop"))]
        finally:
            cluster.close()

    simulated = seen(True)
    assert len(simulated) > 25 and len(set(simulated)) > 20
    assert simulated == seen(False)


def _count_signatures(cluster: SimulatedCluster, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """[the number of tokens signed so far], kept up to date."""
    signed = [0]
    key = cluster.server.service_account_tokens.key
    sign = key.sign

    def counted(token_claims: Mapping[str, Any]) -> str:
        signed[0] += 1
        return sign(token_claims)

    monkeypatch.setattr(key, "sign", counted)
    return signed


def test_tokens_nobody_reads_are_not_signed(monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = _cluster(True)
    try:
        signed = _count_signatures(cluster, monkeypatch)
        cluster.run(cluster.client.create(PODS, "default", _sleeper("idle")))
        cluster.wait(24 * 3600)
        assert signed == [0]  # the first token granted, its refreshes accounted for
        token = _exec_cat(cluster, "idle", ACCESS)
        assert signed == [1]  # the last refresh, asked for when read
        assert who(cluster, token).name == "system:serviceaccount:default:default"
    finally:
        cluster.close()


# --- a pod's first token is signed when read ------------------------------------------------


VAULT = "/var/run/secrets/tokens/vault"


def _first_tokens(simulated: bool, read: str, max_expiration: int = 0) -> list[dict[str, Any]]:
    """The claims of the tokens a pod reads (its kube-api-access one, a 600 s one and one for
    the audience `vault` asking 7200 s): its container at its start, an exec'd `cat` a while
    later (`exec`; `recreated`: after its ServiceAccount was deleted, and made again by the
    ServiceAccount controller), or through a subPath mount, which copies the file at the
    container's start; the API server's --service-account-max-token-expiration
    `max_expiration`."""
    options = _options(simulated=simulated, service_account_max_token_expiration=max_expiration)
    cluster = SimulatedCluster(options)
    paths = (SHORT, VAULT, ACCESS)
    try:
        script = "; ".join(f"cat {p}; echo" for p in paths) if read == "command" else "sleep 9999"
        body = reader("first", script)
        vault = {"audience": "vault", "path": "vault", "expirationSeconds": 7200}
        body["spec"]["volumes"][0]["projected"]["sources"].append({"serviceAccountToken": vault})
        if read == "subPath":
            mount = {"name": "tokens", "mountPath": "/etc/short", "subPath": "short"}
            body["spec"]["containers"][0]["volumeMounts"] = [mount]
            paths = ("/etc/short",)
        cluster.run(cluster.client.create(PODS, "default", body))
        cluster.wait(100)
        if read == "recreated":
            cluster.run(cluster.client.delete(SERVICE_ACCOUNTS, "default", "default"))
        cluster.wait(100)  # before the 600 s token's refresh, at 481 s
        if read == "command":
            tokens = printed(cluster, "first")
        else:
            tokens = [_exec_cat(cluster, "first", path) for path in paths]
        assert len(tokens) == len(paths)
        return [claims(t) for t in tokens]
    finally:
        cluster.close()


@pytest.mark.parametrize(
    ("read", "max_expiration"),
    [("command", 0), ("exec", 0), ("subPath", 0), ("exec", 4000), ("recreated", 0)],
)
def test_a_first_token_read_has_the_claims_the_live_mode_gives(
    read: str, max_expiration: int
) -> None:
    simulated = _first_tokens(True, read, max_expiration)
    # the same claims, jti included: granted when and as the live mode asks, signed when read
    assert simulated == _first_tokens(False, read, max_expiration)
    assert all(c["kubernetes.io"]["pod"]["name"] == "first" for c in simulated)
    if read != "subPath":
        lifetimes = [c["exp"] - c["iat"] for c in simulated]
        longest = max_expiration or 365 * 24 * 3600
        assert lifetimes == [600, min(7200, longest), longest]
        assert simulated[1]["aud"] == ["vault"]


@pytest.mark.parametrize("simulated", [True, False])
def test_a_first_token_is_signed_when_read(
    simulated: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In the live mode too: the kubelet asks for it as it sets the volume up, and the API
    server in process grants it, signed when read."""
    cluster = _cluster(simulated)
    try:
        signed = _count_signatures(cluster, monkeypatch)
        cluster.run(cluster.client.create(PODS, "default", reader("first", "sleep 9999")))
        cluster.wait(60)
        assert signed == [0]
        pod = cluster.run(cluster.client.get(PODS, "default", "first"))
        assert pod["status"]["phase"] == "Running"  # its volume set up, without a signature
        token = _exec_cat(cluster, "first", SHORT)
        assert signed == [2]  # the pod's two tokens, as its files are read
        assert token == _exec_cat(cluster, "first", SHORT) and signed == [2]
    finally:
        cluster.close()


def _failing_start(simulated: bool, case: str) -> list[Any]:
    """What a user sees of a pod whose first token cannot be had at its start (its
    ServiceAccount is gone), every 7 s: its state and its events; then the claims of the
    token it reads once it starts. `case`: the ServiceAccount comes back later; it comes back
    while the node is cut off from the API server; or the pod is deleted meanwhile."""
    cluster = _cluster(simulated)
    client = cluster.client
    account = {"metadata": {"name": "robot"}}
    [node] = cluster.plane.nodes.agents
    seen: list[Any] = []

    def look() -> None:
        pods = cluster.run(client.list(PODS, "default"))["items"]
        events = cluster.run(client.list(EVENTS, "default"))["items"]
        seen.append(
            (
                [(p["metadata"]["uid"], p["status"]) for p in pods],
                [
                    (e["reason"], e["message"], e["count"], e["firstTimestamp"], e["lastTimestamp"])
                    for e in events
                ],
            )
        )

    try:
        cluster.run(client.create(SERVICE_ACCOUNTS, "default", account))
        body = reader("job", f"cat {SHORT}; echo; sleep 9999", "robot")
        body["spec"]["nodeName"] = node
        cluster.run(client.create(PODS, "default", body))
        cluster.run(client.delete(SERVICE_ACCOUNTS, "default", "robot"))
        for step in range(40):
            cluster.wait(7)
            if step == 5 and case == "partitioned":
                cluster.run(cluster.plane.nodes.partition(node))
            if step == 12 and case == "partitioned":
                cluster.run(cluster.plane.nodes.recover_node(node))
            if step == 15 and case == "deleted":
                cluster.run(client.delete(PODS, "default", "job"))
            if step == (8 if case == "partitioned" else 20):
                cluster.run(client.create(SERVICE_ACCOUNTS, "default", account))
            look()
        pods = cluster.run(client.list(PODS, "default"))["items"]
        if pods and pods[0]["status"]["phase"] == "Running":
            seen.append(claims(printed(cluster, "job")[0]))
        return seen
    finally:
        cluster.close()


@pytest.mark.parametrize("case", ["missing", "partitioned", "deleted"])
def test_a_first_token_that_cannot_be_had_fails_as_in_the_live_mode(case: str) -> None:
    simulated = _failing_start(True, case)
    assert simulated == _failing_start(False, case)
    messages = {m for _, events in simulated[:40] for _, m, *_ in events}
    assert (
        'MountVolume.SetUp failed for volume "tokens" : failed to fetch token: '
        'serviceaccounts "robot" not found'
    ) in messages
    if case != "deleted":
        assert isinstance(simulated[-1], dict)  # it started once it could have its token


def test_a_simulated_pod_starts_in_the_pass_that_sets_its_token_up() -> None:
    # The first token is granted as the volume is set up (the in-process API server answers at
    # once, as the v1.32 kubelet's mount waits for the answer), so the containers start in
    # that pass; the status showing them running is written after their Events, as v1.32's
    # kubelet writes it on the sync after they started.
    cluster = _cluster(True)
    try:
        cluster.run(cluster.client.create(PODS, "default", _sleeper("quick")))
        cluster.wait(60)
        pod = cluster.run(cluster.client.get(PODS, "default", "quick"))
        assert pod["status"]["phase"] == "Running"
        events = cluster.run(cluster.client.list(EVENTS, "default"))["items"]
        started = [e for e in events if e["reason"] == "Started"]
        assert len(started) == 1
        written = int(started[0]["metadata"]["resourceVersion"])
        assert written < int(pod["metadata"]["resourceVersion"])
    finally:
        cluster.close()


@pytest.mark.parametrize("simulated", [False, True], ids=["live", "simulated"])
def test_a_pod_deleted_as_it_reaches_the_kubelet_starts_nothing(simulated: bool) -> None:
    # Its deletion reaches the kubelet before its containers start, in both modes.
    cluster = _cluster(simulated)
    try:
        [node] = cluster.plane.nodes.agents
        body = _sleeper("gone")
        body["spec"]["nodeName"] = node

        async def create_and_delete() -> None:
            await cluster.client.create(PODS, "default", body)
            await cluster.client.delete(PODS, "default", "gone")

        cluster.run(create_and_delete())
        cluster.wait(60)
        events = cluster.run(cluster.client.list(EVENTS, "default"))["items"]
        assert not [e for e in events if e["involvedObject"]["kind"] == "Pod"]
        assert cluster.run(cluster.client.list(PODS, "default"))["items"] == []
    finally:
        cluster.close()


def _token_beside_a_deleted_config_map(simulated: bool, later: int) -> str:
    """The token a pod reads through exec `later` seconds after the ConfigMap of its projected
    volume was deleted, once the volume was set up (setting it up again fails: its files stay
    as they were)."""
    cluster = _cluster(simulated)
    try:
        config = {"metadata": {"name": "cfg"}, "data": {"k": "v"}}
        cluster.run(cluster.client.create(CONFIG_MAPS, "default", config))
        body = reader("beside", "sleep 9999")
        body["spec"]["volumes"][0]["projected"]["sources"].append({"configMap": {"name": "cfg"}})
        cluster.run(cluster.client.create(PODS, "default", body))
        cluster.wait(60)
        cluster.run(cluster.client.delete(CONFIG_MAPS, "default", "cfg"))
        cluster.wait(later)
        assert _exec_cat(cluster, "beside", "/var/run/secrets/tokens/k") == "v"
        return _exec_cat(cluster, "beside", SHORT)
    finally:
        cluster.close()


@pytest.mark.parametrize("later", [60, 1000])  # before the 600 s token's refresh, after it
def test_a_first_token_beside_a_source_gone_since_is_read_signed(later: int) -> None:
    # The live mode wrote the signed token at the volume's first set-up, and keeps it when
    # setting the volume up again fails; the simulated mode's stand-in is never read.
    token = _token_beside_a_deleted_config_map(True, later)
    assert claims(token) == claims(_token_beside_a_deleted_config_map(False, later))

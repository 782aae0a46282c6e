"""The node table: rows per node, a column per resource, incremental pod accounting."""

import random

import numpy as np

from pinnace.scheduler import NodeTable, PodInfo
from pinnace.scheduler.nodetable import RowCache


def node(name: str, **allocatable: str) -> dict:
    return {
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "2", "memory": "4Gi", "pods": "10", **allocatable}},
    }


def pod(name: str, node_name: str, **requests: str) -> PodInfo:
    container = {"name": "c", "resources": {"requests": requests}}
    return PodInfo.from_pod(
        {
            "metadata": {"name": name, "namespace": "ns"},
            "spec": {"nodeName": node_name, "containers": [container]},
        }
    )


def test_resources_in_scheduler_units_and_extended_columns_on_first_sight() -> None:
    table = NodeTable()
    table.add_node(node("a"))
    table.add_node(node("b", **{"nvidia.com/gpu": "2", "hugepages-2Mi": "1Gi", "foo": "3"}))
    b = table.node_info(1)
    assert b.allocatable == {
        "cpu": 2000,
        "memory": 4 * 2**30,
        "ephemeral-storage": 0,
        "pods": 10,
        "nvidia.com/gpu": 2,
        "hugepages-2Mi": 2**30,
    }, "cpu in millicores; a name the scheduler does not track (foo) is left out"
    assert table.node_info(0).allocatable["nvidia.com/gpu"] == 0


def test_pods_add_and_remove_their_requests_and_non_zero_defaults() -> None:
    table = NodeTable()
    table.add_node(node("a"))
    table.add_pod(pod("p", "a", cpu="250m", **{"example.com/dongle": "1"}), "a")
    table.add_pod(pod("q", "a"), "a")  # no requests: 100m / 200Mi when scoring
    info = table.node_info(0)
    assert info.requested["cpu"] == 250 and info.requested["example.com/dongle"] == 1
    assert info.requested["pods"] == 2
    assert info.non_zero_requested == (350, 400 * 2**20)
    table.remove_pod("ns/p", "a")
    assert table.node_info(0).requested["cpu"] == 0
    assert table.node_info(0).non_zero_requested == (100, 200 * 2**20)


def test_many_nodes_grow_the_arrays_and_removal_keeps_names_right() -> None:
    table = NodeTable()
    for i in range(40):
        table.add_node(node(f"n{i}"))
        table.add_pod(pod(f"p{i}", f"n{i}", cpu=f"{i + 1}m"), f"n{i}")
    table.remove_node("n3")
    assert len(table) == 39 and "n3" not in table.index
    for name, i in table.index.items():
        assert table.names[i] == name
        assert table.node_info(i).requested["cpu"] == int(name[1:]) + 1


def test_pods_on_a_node_not_yet_known_wait_for_it() -> None:
    table = NodeTable()
    table.add_pod(pod("early", "later", cpu="1"), "later")
    table.add_node(node("later"))
    assert table.node_info(0).requested["cpu"] == 1000
    table.remove_node("later")
    table.add_node(node("later"))
    assert table.node_info(0).requested["cpu"] == 1000, "its pods outlive the node object"


def test_row_cache_recomputes_only_changed_rows() -> None:
    table = NodeTable()
    for i in range(4):
        table.add_node(node(f"n{i}"))
    asked: list[object] = []

    def pods_per_row(rows: object) -> object:
        asked.append(rows if isinstance(rows, slice) else rows.tolist())
        return table.requested[rows, 3].copy()

    cache = RowCache()
    assert cache.get(table, "k", pods_per_row).tolist() == [0, 0, 0, 0]
    table.add_pod(pod("p", "n2"), "n2")
    assert cache.get(table, "k", pods_per_row).tolist() == [0, 0, 1, 0]
    assert asked == [slice(0, 4), [2]]
    table.add_node(node("n4"))
    table.add_pod(pod("q", "n4"), "n4")
    table.add_pod(pod("r", "n4"), "n4")
    assert cache.get(table, "k", pods_per_row).tolist() == [0, 0, 1, 0, 2]
    table.remove_node("n1")  # the last node (n4) takes its row
    assert cache.get(table, "k", pods_per_row).tolist() == [0, 2, 1, 0]
    one_by_one: list[int] = []

    def one(i: int) -> int:
        one_by_one.append(i)
        return int(table.requested[i, 3])

    table.add_pod(pod("s", "n0"), "n0")
    assert cache.get(table, "k", pods_per_row, one).tolist() == [1, 2, 1, 0]
    assert one_by_one == [0]


def test_row_cache_top_rows_follow_every_change() -> None:
    """The rows holding a vector's highest value, kept from the changed rows, are those a
    pass over the whole vector finds, whatever pods and nodes come and go."""
    rng = random.Random(7)
    table = NodeTable()
    for i in range(12):
        table.add_node(node(f"n{i}"))
    cache = RowCache()

    def free_pods(rows: object) -> np.ndarray:
        return table.allocatable[rows, 3] - table.requested[rows, 3]

    def one(i: int) -> int:
        return int(table.allocatable[i, 3] - table.requested[i, 3])

    placed: list[tuple[str, str]] = []
    for step in range(400):
        action = rng.random()
        if action < 0.6 or not placed:
            node_name = rng.choice(table.names)
            placed.append((f"p{step}", node_name))
            table.add_pod(pod(f"p{step}", node_name), node_name)
        elif action < 0.9:
            name, node_name = placed.pop(rng.randrange(len(placed)))
            table.remove_pod(f"ns/{name}", node_name)
        elif action < 0.95:
            table.add_node(node(f"m{step}"))
        elif len(table) > 2:
            gone = rng.choice(table.names)
            placed = [(name, on) for name, on in placed if on != gone]
            for key in list(table.pods[table.index[gone]]):
                table.remove_pod(key, gone)
            table.remove_node(gone)
        vector = cache.get(table, "k", free_pods, one)
        assert cache.top("k") == np.flatnonzero(vector == vector.max()).tolist()


def test_row_cache_keeps_tables_apart() -> None:
    cache = RowCache()
    tables = [NodeTable(), NodeTable()]
    for cpu, table in enumerate(tables, start=1):  # one change logged in each
        table.add_node(node("n", cpu=str(cpu)))
    for table in [*tables, *tables]:
        vector = cache.get(table, "k", lambda rows, table=table: table.allocatable[rows, 0].copy())
        assert vector.tolist() == [1000 * (tables.index(table) + 1)]


def test_what_pods_of_at_least_a_priority_request_follows_pods_and_nodes() -> None:
    def prioritised(name: str, node_name: str, priority: int, cpu: str) -> PodInfo:
        info = pod(name, node_name, cpu=cpu)
        return PodInfo.from_pod({**info.pod, "spec": {**info.pod["spec"], "priority": priority}})

    table = NodeTable()
    table.add_node(node("a"))
    table.add_node(node("b"))
    for name, node_name, priority, cpu in (
        ("low", "a", 0, "500m"),
        ("mid", "a", 5, "300m"),
        ("high", "b", 10, "1"),
        ("low2", "b", 0, "200m"),
    ):
        table.add_pod(prioritised(name, node_name, priority, cpu), node_name)
    kept = table.requested_at_or_above(5)
    cpu, pods = table.columns["cpu"], table.columns["pods"]
    assert kept[:, cpu].tolist() == [300, 1000] and kept[:, pods].tolist() == [1, 1]
    table.remove_pod("ns/mid", "a")
    table.remove_node("b")  # its pods wait as orphans: no longer on a row
    assert table.requested_at_or_above(0)[:, cpu].tolist() == [500]
    table.add_node(node("b"))  # the orphans come back with it
    assert table.requested_at_or_above(10)[:, cpu].tolist() == [0, 1000]


def test_requests_by_priority_kept_up_to_date_match_a_recount() -> None:
    """The per-priority amounts are kept incrementally; after any sequence of changes they are
    what a pass over every pod on every row would count."""
    rng = random.Random(7)
    table = NodeTable()
    where: dict[str, str] = {}  # pod key -> node name, orphans included
    resources = ("cpu", "memory", "example.com/a", "example.com/b")

    def random_pod(name: str, node_name: str) -> PodInfo:
        requests = {r: str(rng.randint(1, 9)) for r in rng.sample(resources, rng.randint(0, 3))}
        info = pod(name, node_name, **requests)
        spec = {**info.pod["spec"], "priority": rng.choice((-5, 0, 0, 3, 10, 1000))}
        return PodInfo.from_pod({**info.pod, "spec": spec})

    for step in range(1500):
        node_names = [f"n{k}" for k in range(30)]
        op = rng.random()
        if op < 0.08:
            table.add_node(node(rng.choice(node_names)))
        elif op < 0.12 and len(table):
            table.remove_node(rng.choice(table.names))
        elif op < 0.55 or not where:
            name = f"p{step}"
            node_name = rng.choice(node_names)
            table.add_pod(random_pod(name, node_name), node_name)
            where[f"ns/{name}"] = node_name
        elif op < 0.7:
            key = rng.choice(sorted(where))
            assert table.remove_pod(key, where.pop(key)) is not None
        elif op < 0.85:  # moved to another node
            key = rng.choice(sorted(where))
            table.remove_pod(key, where[key])
            where[key] = rng.choice(node_names)
            table.add_pod(random_pod(key[3:], where[key]), where[key])
        else:  # updated in place: another priority, maybe other requests
            key = rng.choice(sorted(where))
            old = table.pod(key, where[key])
            assert old is not None
            new = random_pod(key[3:], where[key])
            if rng.random() < 0.5:
                spec = {**old.pod["spec"], "priority": new.priority}
                new = PodInfo.from_pod({**old.pod, "spec": spec})
            table.replace_pod(new, where[key])
        for priority in (-10, -5, 0, 1, 10, 1000, 2000):
            kept = np.zeros_like(table.requested)
            lower = np.zeros(len(table), np.int64)
            for i, pods in enumerate(table.pods):
                for p in pods.values():
                    if p.priority < priority:
                        lower[i] += 1
                        continue
                    for resource, value in p.requests.items():
                        kept[i, table.columns[resource]] += value
                    kept[i, table.columns["pods"]] += 1
            assert table.requested_at_or_above(priority).tolist() == kept.tolist(), step
            assert table.lower_priority_pods(priority).tolist() == lower.tolist(), step

"""The nodes' allocatable and requested as matrices, columns added as resources appear."""

from __future__ import annotations

from typing import Any

from pinnace.sim.ledger import Ledger

GI = 1024**3


def node(name: str, **allocatable: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "status": {"allocatable": allocatable}}


def test_rows_columns_and_charges() -> None:
    ledger = Ledger()
    ledger.set_node(node("a", cpu="4", memory="8Gi", pods="110"), "general", True, True)
    web = {"cpu": 1500, "memory": GI, "pods": 1}
    ledger.charge("a", ledger.vector(web), 1)
    # a GPU node: its resource gets a column, in order of name after the base ones
    gpu = node("g", cpu="8", memory="32Gi", pods="110", **{"nvidia.com/gpu": "4"})
    gpu["status"]["allocatable"]["example.com/fpga"] = "2"
    ledger.set_node(gpu, "gpu", True, False)
    assert ledger.resources == ["cpu", "memory", "pods", "example.com/fpga", "nvidia.com/gpu"]
    assert ledger.version == 2
    assert ledger.allocatable.tolist() == [
        [4000, 8 * GI, 110, 0, 0],
        [8000, 32 * GI, 110, 2, 4],
    ]
    ledger.charge("g", ledger.vector({"cpu": 1000, "nvidia.com/gpu": 1, "pods": 1}), 1)
    ledger.charge("a", ledger.vector(web), -1)
    assert ledger.requested.tolist() == [[0, 0, 0, 0, 0], [1000, 0, 1, 0, 1]]
    assert ledger.pools == ["general", "gpu"]
    assert ledger.pool_codes.tolist() == [0, 1]
    assert ledger.schedulable.tolist() == [True, False]


def test_a_pod_on_a_node_not_seen_yet_and_a_node_deleted() -> None:
    ledger = Ledger()
    ledger.charge("later", ledger.vector({"cpu": 100, "pods": 1}), 1)
    assert ledger.present.tolist() == [False]
    for i in range(40):  # past the first growth of the arrays
        ledger.set_node(node(f"n{i}", cpu="1", pods="10"), "", True, True)
    ledger.set_node(node("later", cpu="2", pods="10"), "", True, True)
    assert ledger.rows["later"] == 0
    assert ledger.requested[0].tolist() == [100, 0, 1]
    assert ledger.allocatable[0].tolist() == [2000, 0, 10]
    assert len(ledger) == 41 and ledger.present.all()
    assert (ledger.pool_codes == -1).all()
    ledger.remove_node("n3")
    assert not ledger.present[ledger.rows["n3"]]
    assert ledger.allocatable[ledger.rows["n3"]].tolist() == [0, 0, 0]

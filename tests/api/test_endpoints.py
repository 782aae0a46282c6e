"""Endpoints address validation (v1.32 validateEndpointAddress): the IP, hostname and node
name are checked in that order, then the IP again as ValidateNonSpecialIP sees it."""

from __future__ import annotations

from typing import Any

from pinnace.api.core.endpoints import ENDPOINTS


def endpoints(address: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "e", "namespace": "default"},
        "subsets": [{"addresses": [address], "ports": [{"port": 80, "protocol": "TCP"}]}],
    }


def test_address_errors_in_kubernetes_order() -> None:
    errs = ENDPOINTS.validate(endpoints({"ip": "nope", "hostname": "A_B", "nodeName": "N_1"}))
    path = "subsets[0].addresses[0]"
    assert [str(e).split(":", 2)[:2] for e in errs] == [
        [f"{path}.ip", " Invalid value"],
        [f"{path}.hostname", " Invalid value"],
        [f"{path}.nodeName", " Invalid value"],
        [f"{path}.ip", " Invalid value"],
    ]
    assert errs[0].detail == "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
    assert errs[2].detail.startswith("a lowercase RFC 1123 subdomain must consist of")
    assert errs[3].detail == "must be a valid IP address"


def test_special_address_is_refused() -> None:
    errs = ENDPOINTS.validate(endpoints({"ip": "127.0.0.1", "nodeName": "node-1"}))
    assert [e.detail for e in errs] == ["may not be in the loopback range (127.0.0.0/8, ::1/128)"]

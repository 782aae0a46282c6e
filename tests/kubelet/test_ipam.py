"""A node's pod IPs (`pinnace.kubelet.ipam`): given out from its pod CIDR past the gateway,
round the range as host-local does (a released one waits its turn), and a restarted kubelet's
pods keep theirs."""

from __future__ import annotations

from pinnace.kubelet.ipam import PodIPs


def test_addresses_start_past_the_gateway_and_wrap_around_the_range() -> None:
    ips = PodIPs("10.0.0.0/29")  # .2 … .6 to give out
    given = [ips.text(ips.allocate()) for _ in range(5)]
    assert given == [f"10.0.0.{n}" for n in range(2, 7)]
    ips.release(ips.reserve("10.0.0.5"))
    ips.release(ips.reserve("10.0.0.3"))
    # On from .6, the last given out: round to .2 (held), then the free ones in order.
    assert [ips.text(ips.allocate()) for _ in range(2)] == ["10.0.0.3", "10.0.0.5"]


def test_a_released_address_is_not_given_out_again_at_once() -> None:
    ips = PodIPs("10.0.0.0/29")  # .2 … .6 to give out
    deleted = ips.allocate()
    ips.allocate()
    ips.release(deleted)
    assert [ips.text(ips.allocate()) for _ in range(4)] == [
        "10.0.0.4",
        "10.0.0.5",
        "10.0.0.6",
        "10.0.0.2",  # its turn, once the range has come round
    ]


def test_a_resumed_pods_ip_is_not_given_to_another() -> None:
    ips = PodIPs("10.0.1.0/24")
    kept = ips.reserve("10.0.1.2")
    assert ips.text(kept) == "10.0.1.2"
    assert ips.text(ips.allocate()) == "10.0.1.3"


def test_an_ip_outside_the_pod_cidr_is_kept_as_its_text() -> None:
    ips = PodIPs("10.0.1.0/24")
    assert ips.reserve("192.168.7.9") == "192.168.7.9"
    assert ips.reserve("not an ip") == "not an ip"
    ips.release("192.168.7.9")  # not this node's: nothing to hand back
    assert ips.text(ips.allocate()) == "10.0.1.2"

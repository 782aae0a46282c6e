"""`pinnace up`'s cluster CA: the data directory's ca.crt, made there on the first start and
published again after a restart; `--in-memory` makes one for the run."""

from __future__ import annotations

from pathlib import Path

from pinnace.cli.up import CA_FILE, UpOptions, cluster_with_root_ca
from pinnace.clock import Clock, VirtualEventLoop
from pinnace.cluster import ClusterOptions


def test_the_ca_is_made_once_in_the_data_directory(tmp_path: Path) -> None:
    clock = Clock(VirtualEventLoop())
    options = UpOptions(data_dir=str(tmp_path), cluster=ClusterOptions(seed=1))
    first = cluster_with_root_ca(options, clock, None).root_ca
    assert first.startswith("-----BEGIN CERTIFICATE-----")
    assert (tmp_path / CA_FILE).read_text() == first
    (tmp_path / CA_FILE).write_text("-----BEGIN CERTIFICATE-----\nkept\n")
    assert (
        cluster_with_root_ca(options, clock, None).root_ca == "-----BEGIN CERTIFICATE-----\nkept\n"
    )
    in_memory = UpOptions(data_dir=None, cluster=ClusterOptions(seed=1))
    assert cluster_with_root_ca(in_memory, clock, None).root_ca == ""  # the ControlPlane makes one


def test_with_tls_the_published_ca_is_the_one_that_signs_the_serving_certificate(
    tmp_path: Path,
) -> None:
    clock = Clock(VirtualEventLoop())
    options = UpOptions(data_dir=str(tmp_path), cluster=ClusterOptions(seed=1))
    published = cluster_with_root_ca(options, clock, tmp_path / "pki").root_ca
    assert published == (tmp_path / "pki" / "ca.crt").read_text()
    assert not (tmp_path / CA_FILE).exists()

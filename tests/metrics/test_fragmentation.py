"""The fragmentation measures, on numbers worked by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pinnace.metrics.fragmentation import fragmentation, free_capacity

GI = 1024**3
# resources: cpu (millicores), memory (bytes), pods


def test_pods_of_one_and_a_half_cpus_strand_a_quarter_of_three_empty_four_cpu_nodes() -> None:
    free = np.array([[4000, 16 * GI, 110]] * 3)
    shapes = np.array([[1500, 1 * GI, 1]])
    f = fragmentation(free, shapes)
    assert f.fits.tolist() == [[2], [2], [2]]
    assert f.stranded[0, 0] == 3 * 1000
    assert f.share[0, 0] == pytest.approx(0.25)
    # memory: 14 GiB of 16 left on each node, pods: 108 of 110
    assert f.share[0, 1] == pytest.approx(14 / 16)
    assert f.share[0, 2] == pytest.approx(108 / 110)
    assert f.largest_free.tolist() == [4000, 16 * GI, 110]
    assert f.largest_multiple.tolist() == [2]


def test_the_resource_that_runs_out_first_strands_the_others() -> None:
    # node a: 3 CPUs free but 1 GiB; node b: 1 CPU free and 8 GiB
    free = np.array([[3000, 1 * GI, 10], [1000, 8 * GI, 10]])
    shapes = np.array([[1000, 1 * GI, 1], [500, 0, 1]])
    f = fragmentation(free, shapes)
    # 1 CPU + 1 GiB: a holds 1 (memory), b holds 1 (cpu)
    assert f.fits[:, 0].tolist() == [1, 1]
    assert f.stranded[0].tolist() == [2000, 7 * GI, 18]
    assert f.share[0, 0] == pytest.approx(2000 / 4000)
    assert f.share[0, 1] == pytest.approx(7 / 9)
    # 500m without memory: a holds 6, b holds 2; memory is not requested, so not stranded
    assert f.fits[:, 1].tolist() == [6, 2]
    assert f.share[1, 0] == 0
    assert math.isnan(f.share[1, 1])
    assert f.largest_free.tolist() == [3000, 8 * GI, 10]
    assert f.largest_multiple.tolist() == [1, 6]


def test_pods_count_limits_like_any_resource() -> None:
    free = np.array([[4000, 4 * GI, 1]])
    f = fragmentation(free, np.array([[100, 0, 1]]))
    assert f.fits.tolist() == [[1]]
    assert f.stranded[0, 0] == 3900


def test_free_capacity_is_never_negative_and_nothing_free_is_no_share() -> None:
    allocatable = np.array([[4000, 8 * GI, 110], [4000, 8 * GI, 110]])
    requested = np.array([[4500, 8 * GI, 3], [4000, 2 * GI, 2]])
    free = free_capacity(allocatable, requested)
    assert free.tolist() == [[0, 0, 107], [0, 6 * GI, 108]]
    f = fragmentation(free, np.array([[1000, GI, 1]]))
    assert f.fits.tolist() == [[0], [0]]
    assert math.isnan(f.share[0, 0])  # no CPU free at all
    assert f.share[0, 1] == 1.0


def test_no_nodes() -> None:
    f = fragmentation(np.zeros((0, 3), dtype=np.int64), np.array([[1000, GI, 1]]))
    assert f.fits.shape == (0, 1)
    assert f.largest_free.tolist() == [0, 0, 0]
    assert f.largest_multiple.tolist() == [0]
    assert np.isnan(f.share).all()


def test_a_shape_must_request_something() -> None:
    with pytest.raises(ValueError, match="request something"):
        fragmentation(np.array([[1, 1, 1]]), np.array([[0, 0, 0]]))

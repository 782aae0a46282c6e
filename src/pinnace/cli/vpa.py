"""`pinnace up`'s flags for the Vertical Pod Autoscaler: those of kubernetes/autoscaler's
recommender and updater (vertical-pod-autoscaler/pkg/recommender/config and
pkg/updater/config), prefixed `--vpa-` as they share the cluster's command line."""

from __future__ import annotations

import argparse
import dataclasses

from pinnace.cli.arguments import add_durations
from pinnace.controllers.vpa import CHECKPOINT, PROMETHEUS, VPAOptions
from pinnace.controllers.vpa_model import RecommenderConfig

_VPA = VPAOptions()
_RECOMMENDATION = RecommenderConfig()
DURATIONS = {
    "recommender-interval": (_VPA.recommender_interval, "how often the recommender runs"),
    "updater-interval": (_VPA.updater_interval, "how often the updater runs"),
    "confidence-interval-cpu": (
        _RECOMMENDATION.confidence_interval_cpu,
        "the history that makes the CPU bounds' confidence 1",
    ),
    "confidence-interval-memory": (
        _RECOMMENDATION.confidence_interval_memory,
        "the history that makes the memory bounds' confidence 1",
    ),
    "history-length": (
        _VPA.history_length,
        "how far back the prometheus storage reads the usage history",
    ),
    "history-resolution": (
        _VPA.history_resolution,
        "the step at which the prometheus storage reads the usage history",
    ),
    "in-recommendation-bounds-eviction-lifetime-threshold": (
        _VPA.in_recommendation_bounds_eviction_lifetime_threshold,
        "how long a pod within the bounds lives before the updater may still evict it",
    ),
}
"""Duration flags, without their `--vpa-` prefix: defaults in seconds and what they set."""


def add_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("vertical pod autoscaler (its recommender's and updater's)")
    group.add_argument(
        "--no-vpa",
        dest="vpa",
        action="store_false",
        help="do not run the VPA's recommender and updater",
    )
    add_durations(group, DURATIONS, "1m", prefix="vpa-")
    group.add_argument(
        "--vpa-storage",
        choices=(CHECKPOINT, PROMETHEUS),
        default=_VPA.storage,
        help="where the recommender's initial history comes from: prometheus reads each pod's "
        f"past usage from the cluster's usage history when it first sees it ({_VPA.storage})",
    )
    group.add_argument(
        "--vpa-min-replicas",
        type=int,
        default=_VPA.min_replicas,
        metavar="N",
        help=f"the fewest live replicas the updater evicts from ({_VPA.min_replicas})",
    )
    group.add_argument(
        "--vpa-eviction-rate-limit",
        type=float,
        default=_VPA.eviction_rate_limit,
        metavar="PODS_PER_SECOND",
        help="pods the updater evicts per second (0 or less: no limit, the default)",
    )
    group.add_argument(
        "--vpa-eviction-rate-burst",
        type=int,
        default=_VPA.eviction_rate_burst,
        metavar="N",
        help=f"evictions allowed at once under the rate limit ({_VPA.eviction_rate_burst})",
    )
    group.add_argument(
        "--vpa-eviction-tolerance",
        type=float,
        default=_VPA.eviction_tolerance,
        metavar="FRACTION",
        help=f"the fraction of replicas evicted at once ({_VPA.eviction_tolerance:g})",
    )


def options(args: argparse.Namespace) -> VPAOptions | None:
    """The VPA's options from the flags; None with --no-vpa."""
    if not args.vpa:
        return None
    return dataclasses.replace(
        _VPA,
        recommender_interval=args.vpa_recommender_interval,
        updater_interval=args.vpa_updater_interval,
        min_replicas=args.vpa_min_replicas,
        eviction_tolerance=args.vpa_eviction_tolerance,
        eviction_rate_limit=args.vpa_eviction_rate_limit,
        eviction_rate_burst=args.vpa_eviction_rate_burst,
        storage=args.vpa_storage,
        history_length=args.vpa_history_length,
        history_resolution=args.vpa_history_resolution,
        in_recommendation_bounds_eviction_lifetime_threshold=(
            args.vpa_in_recommendation_bounds_eviction_lifetime_threshold
        ),
        recommendation=dataclasses.replace(
            _RECOMMENDATION,
            confidence_interval_cpu=args.vpa_confidence_interval_cpu,
            confidence_interval_memory=args.vpa_confidence_interval_memory,
        ),
    )

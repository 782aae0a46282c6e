"""`pinnace bench`: measure Pinnace's speed on this machine, one benchmark a subcommand."""

from __future__ import annotations

import argparse
import sys

from pinnace.bench import api as api_bench
from pinnace.bench import nodes as nodes_bench
from pinnace.bench import scheduler as scheduler_bench
from pinnace.bench import scheduler_api as scheduler_api_bench
from pinnace.bench import simulate as simulate_bench
from pinnace.bench import store as store_bench
from pinnace.cli import up
from pinnace.cli.arguments import whole
from pinnace.cli.gym import ENGINES
from pinnace.store import StoreError


def _bench_store(args: argparse.Namespace) -> int:
    backends = [args.backend] if args.backend else list(store_bench.BACKENDS)
    try:
        results = store_bench.run(backends, args.objects, args.watchers)
    except StoreError as e:
        print(f"pinnace bench store: {e}", file=sys.stderr)
        return 1
    print(store_bench.render(results, args.objects, args.watchers, args.json))
    return 0


def _bench_api(args: argparse.Namespace) -> int:
    sizes = (args.pods, args.clients, args.watchers, args.watch_writes, args.watch_rate)
    try:
        results = api_bench.run(args.backend, *sizes)
    except api_bench.BenchError as e:
        print(f"pinnace bench api: {e}", file=sys.stderr)
        return 1
    print(api_bench.render(results, args.backend, *sizes, args.json))
    return 0


def _bench_scheduler(args: argparse.Namespace) -> int:
    workloads = [args.workload] if args.workload else list(scheduler_bench.WORKLOADS)
    try:
        measure = scheduler_api_bench.run if args.through_api else scheduler_bench.run
        results = measure(workloads, args.nodes, args.pods)
    except scheduler_bench.BenchError as e:
        print(f"pinnace bench scheduler: {e}", file=sys.stderr)
        return 1
    print(scheduler_bench.render(results, args.json, args.through_api))
    return 0


def _bench_simulate(args: argparse.Namespace) -> int:
    try:
        scenario = (
            simulate_bench.load(args.scenario)
            if args.scenario
            else getattr(simulate_bench, args.workload)(args.nodes, args.pods, args.hours)
        )
    except (ValueError, OSError) as e:  # ScenarioError is a ValueError
        print(f"pinnace bench simulate: {e}", file=sys.stderr)
        return 1
    print(simulate_bench.render(simulate_bench.run(scenario), args.json))
    return 0


def _bench_gym(args: argparse.Namespace) -> int:
    try:
        from pinnace.bench import gym as gym_bench
    except ImportError as e:  # gymnasium is the extra pinnace[gym]
        print(f"pinnace bench gym: {e}", file=sys.stderr)
        return 1
    sizes = args.nodes or list(gym_bench.DEFAULT_NODES)
    try:
        results = [
            gym_bench.run(n, args.steps, args.rate, args.features, args.engine) for n in sizes
        ]
    except ValueError as e:  # a scenario the engine cannot run
        print(f"pinnace bench gym: {e}", file=sys.stderr)
        return 1
    print(gym_bench.render(results, args.features, args.engine, args.json))
    return 0


def _bench_nodes(args: argparse.Namespace) -> int:
    try:
        results = nodes_bench.run(
            args.nodes, args.pods_per_node, args.seconds, args.compaction_interval
        )
    except nodes_bench.BenchError as e:
        print(f"pinnace bench nodes: {e}", file=sys.stderr)
        return 1
    print(nodes_bench.render(results, args.json))
    return 0


def configure(bench: argparse.ArgumentParser) -> None:
    benchmarks = bench.add_subparsers(dest="benchmark", metavar="BENCHMARK", required=True)
    store = benchmarks.add_parser(
        "store",
        help="the versioned store: writes, reads, lists, watch fan-out, write latency",
    )
    store.add_argument(
        "--backend", choices=store_bench.BACKENDS, help="measure one backend (default: both)"
    )
    store.add_argument(
        "--objects", type=whole(1), default=10_000, help="objects written and listed (10000)"
    )
    store.add_argument("--watchers", type=whole(1), default=10, help="concurrent watchers (10)")
    store.add_argument("--json", action="store_true", help="print JSON instead of a table")
    store.set_defaults(run=_bench_store)
    _add_bench_api(benchmarks)
    _add_bench_scheduler(benchmarks)
    _add_bench_nodes(benchmarks)
    _add_bench_simulate(benchmarks)
    _add_bench_gym(benchmarks)


def _add_bench_gym(benchmarks: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    gym = benchmarks.add_parser(
        "gym",
        help="the research environment: steps per second, the real filters computing the mask",
    )
    gym.add_argument(
        "--nodes",
        type=whole(1),
        action="append",
        help="cluster size; repeat for several (100 and 5000)",
    )
    gym.add_argument("--steps", type=whole(1), default=2000, help="pods placed, one a step (2000)")
    gym.add_argument(
        "--rate", type=float, default=200.0, help="pods arriving per simulated second (200)"
    )
    gym.add_argument(
        "--features",
        choices=("requests", "usage", "both"),
        default="both",
        help="what the observation holds of each node (both)",
    )
    gym.add_argument(
        "--engine",
        choices=ENGINES,
        default="cluster",
        help="every component of pinnace up, or the scheduler alone (cluster)",
    )
    gym.add_argument("--json", action="store_true", help="print JSON instead of a table")
    gym.set_defaults(run=_bench_gym)


def _add_bench_simulate(benchmarks: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    simulate = benchmarks.add_parser(
        "simulate",
        help="the simulated mode: a day of pod churn on the virtual clock, or a scenario",
    )
    simulate.add_argument(
        "--workload",
        choices=simulate_bench.WORKLOADS,
        default="churn",
        help="bare pods arriving (churn), or Deployments restarted hourly, Jobs arriving and a"
        " node failing and recovering (day)",
    )
    simulate.add_argument("--nodes", type=whole(1), default=1000, help="nodes (1000)")
    simulate.add_argument(
        "--pods", type=whole(0), default=10_000, help="pod lifetimes over the run (10000)"
    )
    simulate.add_argument("--hours", type=whole(1), default=24, help="simulated hours (24)")
    simulate.add_argument(
        "--scenario", metavar="FILE", help="measure this scenario instead, for its own until"
    )
    simulate.add_argument("--json", action="store_true", help="print JSON instead of a table")
    simulate.set_defaults(run=_bench_simulate)


def _add_bench_api(benchmarks: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    api = benchmarks.add_parser(
        "api",
        help="the Kubernetes API over HTTP: pod creates, a big list, watch delivery latency",
    )
    api.add_argument(
        "--backend",
        choices=api_bench.BACKENDS,
        default="sqlite",
        help="the server's store (sqlite); etcd starts Debian's etcd-server for it",
    )
    api.add_argument(
        "--pods", type=whole(1), default=10_000, help="pods created and listed (10000)"
    )
    api.add_argument(
        "--clients", type=whole(1), default=16, help="concurrent creating clients (16)"
    )
    api.add_argument("--watchers", type=whole(1), default=100, help="concurrent watchers (100)")
    api.add_argument(
        "--watch-writes",
        type=whole(1),
        default=1000,
        help="pods created while the watchers watch (1000)",
    )
    api.add_argument(
        "--watch-rate", type=whole(1), default=200, help="their creates per second (200)"
    )
    api.add_argument("--json", action="store_true", help="print JSON instead of a table")
    api.set_defaults(run=_bench_api)


def _add_bench_scheduler(benchmarks: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    scheduler = benchmarks.add_parser(
        "scheduler",
        help="the scheduler core on kube-scheduler's benchmark workloads: pods/s, latency",
    )
    scheduler.add_argument(
        "--workload",
        choices=scheduler_bench.WORKLOADS,
        help="measure one workload (default: all)",
    )
    scheduler.add_argument(
        "--nodes", type=whole(1), help="nodes, instead of the workload's own (5000)"
    )
    scheduler.add_argument(
        "--pods", type=whole(1), help="pods scheduled, instead of the workload's own (10000)"
    )
    scheduler.add_argument(
        "--through-api",
        action="store_true",
        help="create the pods through the in-process API server and bind them through it, "
        "as scheduler_perf does (default: the scheduler core alone)",
    )
    scheduler.add_argument("--json", action="store_true", help="print one JSON object per workload")
    scheduler.set_defaults(run=_bench_scheduler)


def _add_bench_nodes(benchmarks: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    nodes = benchmarks.add_parser(
        "nodes",
        help="simulated nodes and their pods kept alive in real time: memory and CPU",
    )
    nodes.add_argument("--nodes", type=whole(1), default=1000, help="simulated nodes (1000)")
    nodes.add_argument(
        "--pods-per-node", type=whole(0), default=110, help="running pods on each node (110)"
    )
    nodes.add_argument(
        "--seconds",
        type=whole(1),
        default=60,
        help="how long the nodes are kept alive once every pod runs (60)",
    )
    nodes.add_argument(
        "--compaction-interval",
        type=up.positive_seconds,
        default=up.DEFAULT_COMPACTION_INTERVAL,
        metavar="SECONDS",
        help="how often the store is compacted, as by pinnace up "
        f"({up.DEFAULT_COMPACTION_INTERVAL:g}): the history it keeps until then is what a "
        "start's burst of writes costs",
    )
    nodes.add_argument("--json", action="store_true", help="print one JSON object")
    nodes.set_defaults(run=_bench_nodes)

"""PolicyScore and PolicyPick: a scheduling policy written as a Python function, run as a Score
plugin, so the same policy places pods in `pinnace up` and in `pinnace simulate`.

The policy is named by import path in the plugin's arguments, `policy: "package.module:fn"`
(a module beside the configuration file is found, as for plugins of your own), and is called
once per scheduling cycle, after the Filter plugins, with two NumPy float64 arrays:

    fn(pod, nodes) -> scores

`pod` has the `POD_FEATURES` of the pod being placed; `nodes` has one row per feasible node
(those that passed every Filter plugin, in the node table's order) and the `NODE_FEATURES`
as columns. Usage is the node table's, averaged over `usageWindow` (as for the Trimaran
plugins); a node not sampled yet has 0 samples and zero usage. The forecast is what
`pinnace.forecast` predicts for a pod of the pod's workload (`forecast`: "ewma", the default,
or "holt-winters" with `seasonLength` samples), NaN while the workload has no history (for
Holt-Winters, less than two seasons).

`fn` returns one finite score per row. PolicyScore scales them linearly to [0, 100] (the lowest
0, the highest 100; all equal: 100 each), and its weight adds them to the other Score plugins'.
PolicyPick (or PolicyScore with `mode: pick`) picks the node outright: the row with the highest
score (the first of equals), or the row whose index `fn` returns as a single integer, gets 100
and the others 0; with the other Score plugins disabled, or a weight that outweighs them, that
node is the one chosen. A policy that raises, or returns something else, fails the cycle with
a scheduler error naming the policy (`running Score plugins: plugin "PolicyScore" failed
with: running policy ...`), and the pod is retried after a backoff.

A policy trained in pinnace.gym runs from its saved file instead: `policy: {model: PATH,
kind: maskable-ppo | q-table, features: ...}` (`pinnace.gym.learned`): the model sees the
environment's observation of the node table and the feasible nodes as its action mask, and the
node it picks gets 100, the others 0.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from pinnace.forecast import EWMA, HOLT_WINTERS, METHODS, workload_of
from pinnace.resources.names import CPU, MEMORY
from pinnace.scheduler.framework import CycleState, ScoreFailed, error
from pinnace.scheduler.nodetable import CPU_COLUMN, MEMORY_COLUMN, PODS_COLUMN, NodeTable
from pinnace.scheduler.plugins.trimaran import go_round, pods_metric_load, usage_sampling
from pinnace.scheduler.podinfo import PodInfo

if TYPE_CHECKING:
    from pinnace.forecast import UsageHistory

NODE_COLUMNS: tuple[tuple[str, str, int | None], ...] = (
    # (feature, the NodeTable array it is read from, that array's column; None: one-dimensional)
    ("allocatable_cpu", "allocatable", CPU_COLUMN),  # millicores
    ("allocatable_memory", "allocatable", MEMORY_COLUMN),  # bytes
    ("requested_cpu", "requested", CPU_COLUMN),  # millicores, the pods' requests on the node
    ("requested_memory", "requested", MEMORY_COLUMN),  # bytes
    ("allocatable_pods", "allocatable", PODS_COLUMN),
    ("pods", "requested", PODS_COLUMN),  # pods on the node
    ("usage_cpu", "usage_mean", 0),  # millicores, mean over the usage window
    ("usage_memory", "usage_mean", 1),  # bytes, mean working set over the usage window
    ("usage_cpu_std", "usage_std", 0),  # standard deviation over the usage window
    ("usage_memory_std", "usage_std", 1),
    ("usage_samples", "usage_count", None),  # samples the usage is of (0: none yet)
    ("usage_cpu_forecast", "usage_forecast", 0),  # millicores, the EWMA of the window (0: none)
    ("usage_memory_forecast", "usage_forecast", 1),  # bytes
)
"""Where each column of the node feature matrix comes from, in order: the one layout both
`node_features` and `node_feature_row` follow."""
NODE_FEATURES = tuple(feature for feature, _, _ in NODE_COLUMNS)
"""The columns of the node feature matrix, in order."""
_SOURCES = tuple(dict.fromkeys(source for _, source, _ in NODE_COLUMNS))
_LAYOUT = tuple((_SOURCES.index(source), column) for _, source, column in NODE_COLUMNS)
POD_FEATURES = (
    "request_cpu",  # millicores
    "request_memory",  # bytes
    "forecast_cpu",  # millicores, NaN without a forecast
    "forecast_memory",  # bytes, NaN without a forecast
    "priority",
)
"""The entries of the pod feature vector, in order."""
SCORE, PICK = "score", "pick"

Policy = Callable[[np.ndarray, np.ndarray], Any]


def node_features(table: NodeTable, nodes: np.ndarray) -> np.ndarray:
    """The node feature matrix of rows `nodes` (see `NODE_COLUMNS`)."""
    arrays = [getattr(table, source)[nodes] for source in _SOURCES]
    out = np.empty((len(arrays[0]), len(_LAYOUT)), np.float64)
    for k, (source, column) in enumerate(_LAYOUT):
        out[:, k] = arrays[source] if column is None else arrays[source][:, column]
    return out


def node_feature_row(table: NodeTable, i: int) -> list[float]:
    """Row `i` of `node_features`, as Python floats (cheaper than NumPy for a few rows)."""
    rows = [getattr(table, source)[i].tolist() for source in _SOURCES]
    return [float(rows[s] if column is None else rows[s][column]) for s, column in _LAYOUT]


def pod_features(pod: PodInfo, forecast: tuple[float, float] | None) -> np.ndarray:
    """The pod feature vector (see `POD_FEATURES`)."""
    cpu, memory = forecast if forecast is not None else (np.nan, np.nan)
    return np.array(
        [pod.requests.get(CPU, 0), pod.requests.get(MEMORY, 0), cpu, memory, pod.priority],
        np.float64,
    )


def load_policy(path: str) -> Policy:
    """The callable at `module:attribute`."""
    module_name, _, attr = path.partition(":")
    if not module_name or not attr:
        raise ValueError(f'policy: Invalid value: "{path}": must be module:function')
    try:
        module = importlib.import_module(module_name)
    except Exception as e:  # the user's module may fail in any way while importing
        raise ValueError(
            f'policy: Invalid value: "{path}": cannot import {module_name}: {type(e).__name__}: {e}'
        ) from None
    policy = getattr(module, attr, None)
    if not callable(policy):
        raise ValueError(f'policy: Invalid value: "{path}": {module_name} has no function {attr}')
    return policy


class LearnedPolicy(Protocol):
    """A saved model as a policy: one-hot over `nodes`, the feasible rows of `table`."""

    def pick(
        self,
        table: NodeTable,
        pod: PodInfo,
        nodes: np.ndarray,
        forecast: tuple[float, float] | None,
    ) -> np.ndarray: ...


MODEL_LOADER = "pinnace.gym.learned:load_model"
"""What reads a saved model: the research environment's, which builds the observations the
model was trained on. Found by name at run time, as a policy function is: the environment is
built on the scheduler, not the other way round."""


def load_learned(spec: Mapping[str, Any]) -> LearnedPolicy:
    """The saved model `spec` names (`model`, `kind`, `features`)."""
    loader: Callable[..., Any] = load_policy(MODEL_LOADER)
    model: LearnedPolicy = loader(spec)
    return model


def model_beside(args: dict[str, Any], directory: str) -> dict[str, Any]:
    """`args` with a relative `policy.model` taken beside the configuration file, in
    `directory`, when the file is there: as a policy module beside it is found first, so a
    configuration and its model run from any working directory (else the working
    directory's)."""
    policy = args.get("policy")
    if not directory or not isinstance(policy, Mapping):
        return args
    model = policy.get("model")
    if not isinstance(model, str) or not model or os.path.isabs(model):
        return args
    beside = os.path.join(directory, model)
    if not os.path.exists(beside):
        return args
    return {**args, "policy": {**policy, "model": beside}}


class PolicyScore:
    name = "PolicyScore"
    default_mode = SCORE

    def __init__(self, args: Mapping[str, Any] | None = None) -> None:
        args = args or {}
        policy = args.get("policy")
        self.model: LearnedPolicy | None = None
        if isinstance(policy, Mapping):
            self.path = str(policy.get("model"))
            self.model = load_learned(policy)
        elif isinstance(policy, str) and policy:
            self.path = policy
            self.policy = load_policy(policy)
        elif policy is None or policy == "":
            raise ValueError(
                "policy: Required value: module:function of the policy, or {model, kind}"
            )
        else:
            raise ValueError(
                f"policy: Invalid value: {policy!r}: must be module:function, or {{model, kind}}"
            )
        self.mode = args.get("mode", self.default_mode)
        if self.mode not in (SCORE, PICK):
            raise ValueError(
                f'mode: Unsupported value: "{self.mode}": supported values: "{SCORE}", "{PICK}"'
            )
        self.forecast_method = args.get("forecast", EWMA)
        if self.forecast_method not in METHODS:
            supported = ", ".join(f'"{m}"' for m in METHODS)
            raise ValueError(
                f'forecast: Unsupported value: "{self.forecast_method}": supported values: '
                f"{supported}"
            )
        self.season_length = self._season_length(args)
        self.usage_window, self.usage_interval = usage_sampling(args)
        self.load_metric = pods_metric_load(args)
        self.workload_usage: UsageHistory | None = None
        """Set by the scheduler that samples the pods' usage."""

    def _season_length(self, args: Mapping[str, Any]) -> int:
        """`seasonLength`, which Holt-Winters needs (two seasons of history, at least two
        samples each), with statsmodels to fit it."""
        length = args.get("seasonLength", 0)
        if self.forecast_method != HOLT_WINTERS:
            return 0
        if isinstance(length, bool) or not isinstance(length, int) or length < 2:
            raise ValueError(
                f"seasonLength: Invalid value: {length!r}: forecast {HOLT_WINTERS} needs a "
                "season of at least 2 samples"
            )
        if importlib.util.find_spec("statsmodels") is None:
            raise ValueError(
                f'forecast: Invalid value: "{HOLT_WINTERS}": needs statsmodels: '
                "pip install 'pinnace[forecast]'"
            )
        return length

    def score(
        self, state: CycleState, pod: PodInfo, table: NodeTable, nodes: np.ndarray
    ) -> np.ndarray:
        try:
            forecast = self._forecast(pod)
            if self.model is not None:
                answer = self.model.pick(table, pod, nodes, forecast)
            else:
                answer = self.policy(pod_features(pod, forecast), node_features(table, nodes))
            return self._scores(answer, len(nodes))
        except Exception as e:  # the user's policy may fail in any way
            raise ScoreFailed(
                error(f'running policy "{self.path}": {type(e).__name__}: {e}')
            ) from None

    def _forecast(self, pod: PodInfo) -> tuple[float, float] | None:
        if self.workload_usage is None:
            return None
        return self.workload_usage.forecast(
            workload_of(pod.pod), self.forecast_method, season_length=self.season_length
        )

    def _scores(self, answer: Any, n: int) -> np.ndarray:
        values = np.asarray(answer)
        if self.mode == PICK and values.ndim == 0 and np.issubdtype(values.dtype, np.integer):
            if not 0 <= int(values) < n:
                raise ValueError(f"picked row {int(values)} of {n} feasible nodes")
            return _one_hot(int(values), n)
        values = values.astype(np.float64)
        if values.shape != (n,) or not np.isfinite(values).all():
            raise ValueError(f"expected {n} finite scores, got {values.shape} {values.dtype}")
        if self.mode == PICK:
            return _one_hot(int(np.argmax(values)), n)
        low, high = values.min(), values.max()
        if high == low:
            return np.full(n, 100, np.int64)
        return go_round(100 * (values - low) / (high - low))


class PolicyPick(PolicyScore):
    name = "PolicyPick"
    default_mode = PICK


def _one_hot(i: int, n: int) -> np.ndarray:
    scores = np.zeros(n, np.int64)
    scores[i] = 100
    return scores

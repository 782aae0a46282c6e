"""Pod Security levels, versions and a namespace's policy from its labels, as
k8s.io/pod-security-admission/api (helpers.go, constants.go) in v1.32.

A namespace's `pod-security.kubernetes.io/<mode>` label names a level (privileged, baseline,
restricted) and `<mode>-version` the policy version (`latest` or `v1.<minor>`) for each mode:
enforce, audit and warn. A mode without a label keeps the default (privileged:latest, as
kube-apiserver's PodSecurity plugin without an admission configuration file). A label that
cannot be parsed is an error; enforce then reads it as restricted (or latest), audit and warn
as privileged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pinnace.api.field import FieldError, Path, invalid

PRIVILEGED = "privileged"
BASELINE = "baseline"
RESTRICTED = "restricted"
LEVELS = (PRIVILEGED, BASELINE, RESTRICTED)
"""By strictness, least strict first."""

LATEST = 1 << 30
"""The minor version `latest` stands for: newer than any release."""

LABEL_PREFIX = "pod-security.kubernetes.io/"
MODES = ("enforce", "audit", "warn")

_VERSION = re.compile(r"^v1\.([0-9]|[1-9][0-9]*)$")
_LABELS = Path("metadata", "labels")


@dataclass(frozen=True, slots=True)
class LevelVersion:
    level: str
    minor: int
    """The policy version's minor (`v1.<minor>`), LATEST for `latest`."""

    def __str__(self) -> str:
        version = "latest" if self.minor == LATEST else f"v1.{self.minor}"
        return f"{self.level}:{version}"


DEFAULT = LevelVersion(PRIVILEGED, LATEST)


@dataclass(frozen=True, slots=True)
class Policy:
    enforce: LevelVersion = DEFAULT
    audit: LevelVersion = DEFAULT
    warn: LevelVersion = DEFAULT

    def fully_privileged(self) -> bool:
        return PRIVILEGED == self.enforce.level == self.audit.level == self.warn.level


def has_labels(labels: Mapping[str, Any]) -> bool:
    """Whether any label is Pod Security's (a namespace without one has the default policy)."""
    return any(key.startswith(LABEL_PREFIX) for key in labels)


def policy_to_evaluate(labels: Mapping[str, Any]) -> tuple[Policy, list[FieldError]]:
    """The namespace's policy from its labels, and the errors of those that cannot be parsed
    (the policy is whole even then)."""
    errors: list[FieldError] = []
    modes = {mode: _mode(labels, mode, errors) for mode in MODES}
    return Policy(**modes), errors


def _mode(labels: Mapping[str, Any], mode: str, errors: list[FieldError]) -> LevelVersion:
    level, minor = DEFAULT.level, DEFAULT.minor
    level_label, version_label = LABEL_PREFIX + mode, LABEL_PREFIX + mode + "-version"
    if level_label in labels:
        value = str(labels[level_label])
        if value in LEVELS:
            level = value
        else:
            errors.append(
                invalid(_LABELS.key(level_label), value, "must be one of " + ", ".join(LEVELS))
            )
            level = RESTRICTED if mode == "enforce" else PRIVILEGED  # audit and warn fail open
    if version_label in labels:
        value = str(labels[version_label])
        parsed = _VERSION.match(value)
        if value != "latest" and parsed is None:
            errors.append(invalid(_LABELS.key(version_label), value, 'must be "latest" or "v1.x"'))
        elif parsed is not None:
            minor = int(parsed.group(1))
    return LevelVersion(level, minor)


def stricter(a: str, b: str) -> bool:
    """Whether level `a` is stricter than level `b`."""
    return LEVELS.index(a) > LEVELS.index(b)

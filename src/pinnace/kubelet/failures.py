"""What the node agent does when one pass of one of its loops fails (lease renewal, node
status, the eviction manager, pod status writes): the pass is given up and the loop goes on at
its next period, as the kubelet's loops do (wait.Until around a function that logs its error and
returns), so one bad value stops neither that loop nor the others.

The kubelet logs every failed pass; here a loop logs each distinct error once (with its
traceback, unless it is an API error or the API server unreachable), and again only after a
pass of that loop has worked, so a pass failing every 10 s does not flood the terminal.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from pinnace.api.status import StatusError
from pinnace.client.transport import HTTPError

log = logging.getLogger(__name__)


class LoopFailures:
    """The errors the loops of the node `node` have logged since each last worked."""

    def __init__(self, node: str) -> None:
        self.node = node
        self._logged: dict[str, set[str]] = {}
        """By loop, the errors logged since it last had a pass that worked."""

    @contextlib.contextmanager
    def guard(self, loop: str) -> Iterator[None]:
        """One pass of `loop`: an exception in it is logged (once per distinct error) and
        goes no further."""
        try:
            yield
        except Exception as e:
            self._failed(loop, e)
        else:
            if self._logged.pop(loop, None) is not None:
                log.info("node %s: %s works again", self.node, loop)

    def _failed(self, loop: str, e: Exception) -> None:
        if isinstance(e, StatusError):
            error = e.message
        elif isinstance(e, HTTPError | OSError):  # the API server unreachable
            error = str(e)
        else:
            error = f"{type(e).__name__}: {e}"
        logged = self._logged.setdefault(loop, set())
        if error in logged:
            return
        logged.add(error)
        if isinstance(e, StatusError | HTTPError | OSError):
            log.warning("node %s: %s failed: %s", self.node, loop, error)
        else:
            log.error(
                "node %s: %s failed, retried every period (logged once): %s",
                self.node,
                loop,
                error,
                exc_info=e,
            )

"""What one recall did, layer by layer: timings, skipped layers, dropped candidates and notes,
and the `explain` view of it."""

from __future__ import annotations

import logging
import time
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from typing import Any

from memories.recall.pool import Dropped
from memories.recall.query_profile import QueryProfile
from memories.recall.routing import LAYERS, Route

logger = logging.getLogger(__name__)


@dataclass
class Trace:
    """What happened, layer by layer, for `explain` and the logs."""

    latency_ms: dict[str, float] = field(default_factory=dict)
    degraded: list[str] = field(default_factory=list)
    dropped: list[Dropped] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def timed(self, layer: str, started: float) -> None:
        elapsed = (time.perf_counter() - started) * 1000
        self.latency_ms[layer] = round(self.latency_ms.get(layer, 0.0) + elapsed, 2)

    def fail(self, layer: str, why: str) -> None:
        if layer not in self.degraded:
            self.degraded.append(layer)
        self.notes.append(f"{layer}: {why}")
        logger.warning("recall skipped %s: %s", layer, why)


def why(exc: BaseException) -> str:
    """The reason a layer is skipped, as a note says it."""
    if isinstance(exc, FutureTimeout):
        return "exceeded its time budget"
    return str(exc) or exc.__class__.__name__


def explain(
    *, profile: QueryProfile, decided: Route, trace: Trace, shortened: list[str]
) -> dict[str, Any]:
    """The query profile, the routing decision and the trace, as the answer's `explain`."""
    return {
        "query_profile": profile.as_dict(),
        "routing": {
            layer: {
                "asked": decided.asks(layer),
                "reasons": decided.reasons.get(layer, []),
                "not_asked_because": decided.declined.get(layer, []),
            }
            for layer in LAYERS
        }
        | {"ltm_mode": decided.ltm_mode, "forced": decided.forced},
        "dropped": [
            {"memory_id": d.memory_id, "source": d.source, "reason": d.reason}
            for d in trace.dropped
        ],
        "shortened": shortened,
        "latency_ms": trace.latency_ms,
        "notes": trace.notes,
    }

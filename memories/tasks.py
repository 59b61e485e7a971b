"""Celery entry points of the memory layers; each lives in its layer's `tasks.py`, except the
tasks of the locked, batched beat jobs, which live with their Job in `memories/jobs.py`.

Importing them here lets Celery's autodiscovery register them all under `memories.tasks.*`.
"""

from __future__ import annotations

from memories.history.tasks import history_outbox_drain_task
from memories.jobs import (
    ltm_forget_task,
    promotion_scan_task,
    reflection_run_task,
    stm_expire_sweep_task,
)
from memories.ltm.tasks import ltm_outbox_drain_task
from memories.recall.tasks import recall_effects_apply_task
from memories.review.tasks import (
    erasure_run_task,
    erasures_resume_task,
    tenant_purge_task,
    tenant_purges_resume_task,
)
from memories.write.tasks import stm_extract_catch_up_task, stm_extract_task, stm_vectors_task

__all__ = [
    "stm_extract_task",
    "stm_extract_catch_up_task",
    "stm_vectors_task",
    "stm_expire_sweep_task",
    "ltm_outbox_drain_task",
    "ltm_forget_task",
    "history_outbox_drain_task",
    "recall_effects_apply_task",
    "promotion_scan_task",
    "erasure_run_task",
    "erasures_resume_task",
    "tenant_purge_task",
    "tenant_purges_resume_task",
    "reflection_run_task",
]

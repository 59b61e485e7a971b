"""Celery application: the worker and beat load their configuration from Django settings."""

import os
from typing import Any
from urllib.parse import urlsplit

from celery import Celery, Task
from celery.signals import beat_init, task_received, worker_ready
from kombu.exceptions import OperationalError as BrokerError

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings")


class BoundedTask(Task):  # type: ignore[misc]
    """Publishing fails fast: a broker that timed out or refused moments ago (or the Redis
    server it lives on) is not waited on again for REDIS_FAIL_FAST_MS, and a failed publish
    raises StoreUnavailable, as every store adapter does."""

    def apply_async(self, *args: Any, **kwargs: Any) -> Any:
        if self.app.conf.task_always_eager:
            return super().apply_async(*args, **kwargs)
        from memoryproject.errors import StoreUnavailable
        from memoryproject.redis_client import server_failed, server_failed_recently

        broker = urlsplit(str(self.app.conf.broker_url))
        default_port = 6379 if broker.scheme.startswith("redis") else 5672
        server = (broker.hostname or "127.0.0.1", broker.port or default_port)
        if server_failed_recently(*server):
            raise StoreUnavailable(
                f"The broker at {server[0]}:{server[1]} failed moments ago; not waiting on it"
            )
        try:
            return super().apply_async(*args, **kwargs)
        except BrokerError as exc:
            server_failed(*server)
            raise StoreUnavailable(f"The broker did not take the task: {exc}") from exc


app = Celery("memoryproject", task_cls=BoundedTask)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_ready.connect
def _worker_heartbeat(sender: Any = None, **_: Any) -> None:
    from celery.worker import state

    from memoryproject.heartbeats import ConsumerWatch, heartbeat_start, redis_queue_depth

    queues = [queue.name for queue in sender.app.amqp.queues.consume_from.values()]
    slots = sender.controller.concurrency
    watch = ConsumerWatch(
        queue_depth=redis_queue_depth(str(sender.app.conf.broker_url), queues),
        busy=lambda: len(state.active_requests) >= slots,
    )
    task_received.connect(lambda **_: watch.taken(), weak=False)
    heartbeat_start(role="worker", watch=watch)


@beat_init.connect
def _beat_heartbeat(**_: Any) -> None:
    from memoryproject.heartbeats import heartbeat_start

    heartbeat_start(role="beat")

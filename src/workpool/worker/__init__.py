"""The worker: claims runs, executes them, renews their leases, reports their ends."""

from workpool.worker.options import WorkerOptions
from workpool.worker.worker import Worker

__all__ = ["Worker", "WorkerOptions"]

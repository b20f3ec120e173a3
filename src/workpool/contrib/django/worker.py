"""The pools of a Django project's task backends, for ``workpool worker``:

    DJANGO_SETTINGS_MODULE=mysite.settings workpool worker workpool.contrib.django.worker:default

``default`` is the alias of a WorkpoolBackend in TASKS. Importing this module sets Django
up (``django.setup()``), as ``manage.py`` does, so the worker's tasks may use the ORM;
``manage.py workpool_worker`` runs the same command for you.
"""

from __future__ import annotations

import django
from django.apps import apps

from workpool.app import Workpool
from workpool.contrib.django.backend import WorkpoolBackend
from workpool.contrib.django.compat import task_backends

if not apps.ready:
    django.setup()


def pool_of(alias: str) -> Workpool:
    """The pool of the task backend ``alias``; LookupError if it is not a WorkpoolBackend."""
    if alias not in task_backends.settings:
        raise LookupError(f"TASKS has no backend {alias!r}: it has {', '.join(task_backends)}")
    backend = task_backends[alias]
    if not isinstance(backend, WorkpoolBackend):
        raise LookupError(f"TASKS[{alias!r}] is a {type(backend).__name__}, not a WorkpoolBackend")
    return backend.pool


def __getattr__(name: str) -> Workpool:
    """``workpool.contrib.django.worker:ALIAS`` is the pool of TASKS[ALIAS]."""
    if name.startswith("_"):
        raise AttributeError(name)
    try:
        return pool_of(name)
    except LookupError as error:
        raise AttributeError(f"{name!r}: {error}") from error

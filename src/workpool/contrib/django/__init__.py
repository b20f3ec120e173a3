"""workpool as a Django Tasks backend (``django.tasks`` of Django 6, or the
``django-tasks`` backport): ``TASKS = {"default": {"BACKEND":
"workpool.contrib.django.WorkpoolBackend"}}``, and ``manage.py workpool_worker`` (this
package in INSTALLED_APPS) runs the tasks. See README.md, "Django"."""

from workpool.contrib.django.backend import WorkpoolBackend

__all__ = ["WorkpoolBackend"]

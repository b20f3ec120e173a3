"""The Django app of ``workpool.contrib.django``: it brings ``manage.py workpool_worker``."""

from django.apps import AppConfig


class WorkpoolConfig(AppConfig):
    name = "workpool.contrib.django"
    label = "workpool"  # not "django", the last part of its name
    verbose_name = "workpool"

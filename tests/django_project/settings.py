"""Settings of the test project: its tasks go through workpool's Django Tasks backend.

The store is ``$WORKPOOL_URL`` (the backend's default when OPTIONS gives no URL), so the
test and the worker process it starts share one store; the tests override TASKS with
the URL of the backend under test.
"""

SECRET_KEY = "only-for-tests"
USE_TZ = True
INSTALLED_APPS = [
    "django_tasks",  # the backport; with Django 6, django.tasks needs no app
    "workpool.contrib.django",  # manage.py workpool_worker
    "tests.django_project.shop",
]
DATABASES: dict[str, dict[str, str]] = {}
TASKS = {
    "default": {
        "BACKEND": "workpool.contrib.django.WorkpoolBackend",
        "QUEUES": ["default", "mail"],
        "OPTIONS": {"APP": "shop-tasks"},
    }
}
LOGGING_CONFIG = None  # the worker configures workpool's logging itself

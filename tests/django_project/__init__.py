"""A Django project whose tasks run on workpool (tests/contrib/test_django_tasks.py)."""

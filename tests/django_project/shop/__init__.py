"""The test project's app: its tasks.py defines the tasks the tests enqueue."""

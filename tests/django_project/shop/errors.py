"""Exceptions of the test project's tasks, for the tests of their class paths."""


class OutOfStockError(Exception):
    pass


class Order:
    class NotPaidError(Exception):
        pass

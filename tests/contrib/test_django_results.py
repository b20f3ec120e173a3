"""A stored run error read back as Django's TaskError: the class's path from the
traceback Python wrote for it."""

from __future__ import annotations

import json
from typing import get_args

import pytest

from tests.django_project.shop import errors
from workpool.backends.base import RunState
from workpool.contrib.django.results import STATUSES, exception_class_path
from workpool.models import RunError
from workpool.serialization import error_json


def stored(error: BaseException) -> RunError:
    """``error`` as a worker stores it."""
    try:
        raise error
    except BaseException as raised:
        return RunError.model_validate(json.loads(error_json(raised)))


def chained() -> BaseException:
    try:
        raise KeyError("sku-1")
    except KeyError as cause:
        try:
            raise errors.OutOfStockError("sku-1: none left\nValueError: not this line") from cause
        except errors.OutOfStockError as error:
            return error


@pytest.mark.parametrize(
    ("error", "path"),
    [
        (ValueError("boom: the disk is full"), "builtins.ValueError"),
        (ValueError(), "builtins.ValueError"),
        (errors.OutOfStockError("sku-1"), "tests.django_project.shop.errors.OutOfStockError"),
        (errors.OutOfStockError(), "tests.django_project.shop.errors.OutOfStockError"),
        (chained(), "tests.django_project.shop.errors.OutOfStockError"),
        (errors.Order.NotPaidError("A-1"), "tests.django_project.shop.errors.Order.NotPaidError"),
    ],
)
def test_the_class_path_is_read_from_the_traceback(error: BaseException, path: str) -> None:
    assert exception_class_path(stored(error)) == path


def test_without_a_traceback_workpool_errors_and_builtins_are_known() -> None:
    lost = RunError(type="WorkerLostError", message="its worker was lost 3 times")
    assert exception_class_path(lost) == "workpool.errors.WorkpoolError"  # a name only
    late = RunError(type="RunTimeoutError", message="run 01 attempt 1 exceeded its timeout")
    assert exception_class_path(late) == "workpool.errors.RunTimeoutError"
    assert exception_class_path(RunError(type="TimeoutError", message="")) == (
        "builtins.TimeoutError"
    )
    unreadable = RunError(type="Mystery", message="?", traceback="cut short")
    assert exception_class_path(unreadable) == "Mystery"


def test_every_run_state_has_a_django_status() -> None:
    assert set(STATUSES) == set(get_args(RunState))

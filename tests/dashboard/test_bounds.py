"""Numbers out of range sent to the dashboard (issue 23, defect 7): a 400 saying what
is accepted, never a 500, and the store unchanged. Plain HTTP to ``workpool
dashboard`` in a subprocess, on each backend."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from http.cookies import SimpleCookie

import pytest

from tests.cli.helpers import ROOT
from workpool import Workpool
from workpool.dashboard.runs import MAX_PAGE_SIZE
from workpool.validation import MAX_COUNT

CSRF_COOKIE = "workpool_dashboard_csrf"


@pytest.fixture
def dashboard(backend_url: str) -> Iterator[str]:
    """``workpool dashboard`` on the store of ``backend_url`` (queue mail limited to 3);
    its address, ending with /."""
    pool = Workpool(backend_url)
    pool.set_max_parallelism_sync("mail", 3)  # the store exists, and mail is known
    pool.close()
    command = [sys.executable, "-m", "workpool", "dashboard", "--url", backend_url, "--port", "0"]
    with subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    ) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            assert line.startswith("workpool dashboard: http://127.0.0.1:"), line
            yield line.split()[2]
        finally:
            process.terminate()
            process.wait(timeout=20)


def request(url: str, form: dict[str, str] | None = None) -> tuple[int, str]:
    """(status, body) of a GET of ``url``, or of a POST of ``form`` with the CSRF token
    a GET of the overview hands out (as a browser would send it)."""
    data, headers = None, {}
    if form is not None:
        site = url.split("/actions/")[0] + "/"
        with urllib.request.urlopen(site, timeout=20) as page:
            cookie = SimpleCookie(page.headers["Set-Cookie"])[CSRF_COOKIE].value
        data = urllib.parse.urlencode({**form, "csrf": cookie}).encode()
        headers = {"Cookie": f"{CSRF_COOKIE}={cookie}"}
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, data=data, headers=headers), timeout=20
        ) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        with error:
            return error.code, error.read().decode()


BAD_LIMITS = [
    "99999999999999999999999",
    str(2**63),
    str(MAX_COUNT + 1),
    "-1",
    "1.5",
    "nan",
    "inf",
    "²",
    "1e3",
    "true",
]


async def test_a_queue_limit_out_of_range_is_a_400_and_changes_nothing(
    dashboard: str, backend_url: str
) -> None:
    for typed in BAD_LIMITS:  # one dashboard for them all: a process each is slow
        form = {"queue": "mail", "max_parallelism": typed}
        status, body = await asyncio.to_thread(request, f"{dashboard}actions/limit", form)
        assert status == 400, (typed, body)
        assert f"max_parallelism must be a whole number from 0 to {MAX_COUNT}" in body
    async with Workpool(backend_url) as pool:
        assert (await pool.get_queue("mail")).max_parallelism == 3


async def test_the_largest_queue_limit_is_taken(dashboard: str, backend_url: str) -> None:
    form = {"queue": "mail", "max_parallelism": str(MAX_COUNT)}
    status, body = await asyncio.to_thread(request, f"{dashboard}actions/limit", form)
    assert status == 200, body  # the redirect to the overview, followed
    async with Workpool(backend_url) as pool:
        assert (await pool.get_queue("mail")).max_parallelism == MAX_COUNT


async def test_a_page_size_out_of_range_is_a_400(dashboard: str) -> None:
    for typed in ["99999999999999999999999", "0", "201", "²", "-5", "nan"]:
        query = urllib.parse.urlencode({"limit": typed})
        status, body = await asyncio.to_thread(request, f"{dashboard}runs?{query}")
        assert status == 400, (typed, body)
        assert f"limit must be a whole number from 1 to {MAX_PAGE_SIZE}" in body

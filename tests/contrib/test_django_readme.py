"""The README's Django section runs as printed: its settings and tasks.py make a project
with its manage.py, the worker command it shows runs the task, and the checkout code
prints what its comment says."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.test_readme import BLOCKS, README, wait_for_start_line

MANAGE_PY = """\
import os
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "mysite.settings")
from django.core.management import execute_from_command_line

execute_from_command_line(sys.argv)
"""

pytestmark = pytest.mark.slow


def django_block(name: str) -> str:
    (block,) = [block for block in BLOCKS if block.file == f"django/{name}"]
    return block.source


def test_the_django_example_runs_with_the_worker_it_shows(tmp_path: Path) -> None:
    project = tmp_path / "mysite-project"
    for package in ("mysite", "orders"):
        (project / package).mkdir(parents=True)
        (project / package / "__init__.py").write_text("")
    base = 'SECRET_KEY = "readme"\nUSE_TZ = True\n'  # what startproject gives a project
    (project / "mysite" / "settings.py").write_text(base + django_block("mysite/settings.py"))
    (project / "orders" / "tasks.py").write_text(django_block("orders/tasks.py"))
    (project / "manage.py").write_text(MANAGE_PY)
    command = re.search(r"^python manage\.py workpool_worker [^#\n]*", README.read_text(), re.M)
    assert command, "the Django section no longer shows its worker command"
    env = {
        k: v for k, v in os.environ.items() if k not in ("WORKPOOL_URL", "DJANGO_SETTINGS_MODULE")
    }
    stderr_path = tmp_path / "worker.stderr"
    with stderr_path.open("wb") as stderr:
        worker = subprocess.Popen(
            [sys.executable, *shlex.split(command.group())[1:]],
            cwd=project,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        start_line = wait_for_start_line(worker, stderr_path)
        assert "emails" in start_line, start_line  # the backend's QUEUES
        shell = subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", django_block("checkout.py")],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        expected = re.search(r"# (SUCCESSFUL .*)$", django_block("checkout.py"), re.M)
        assert expected, "the checkout example no longer says what it prints"
        # Django 5.2's shell first says how many models it imported: the last line is ours.
        assert shell.returncode == 0, shell
        assert shell.stdout.splitlines()[-1:] == [expected.group(1)], shell
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=30)
    assert worker.returncode == 0, stderr_path.read_text()
    assert (project / "tasks.db").exists()  # the store its OPTIONS name

"""``workpool dashboard`` as a user starts it: safe by default, one line per refusal."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from tests.cli.helpers import ROOT, workpool
from tests.dashboard.http import status_of
from workpool import Workpool


def existing_store(tmp_path: Path) -> str:
    """A SQLite store that exists (the command never creates one)."""
    url = f"sqlite:///{tmp_path}/store.db"
    pool = Workpool(url)
    pool.stats_sync()
    pool.close()
    return url


def test_another_address_without_authentication_is_refused(tmp_path: Path) -> None:
    url = existing_store(tmp_path)

    result = workpool(url, "dashboard", "--host", "0.0.0.0", "--port", "0")

    assert result.returncode == 2
    assert result.stderr.startswith(
        "workpool: refusing to serve the dashboard on 0.0.0.0 without authentication"
    )
    assert "--token" in result.stderr
    assert result.stdout == ""


def test_a_token_from_the_environment_lets_it_serve_another_address(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "WORKPOOL_URL": existing_store(tmp_path),
        "WORKPOOL_DASHBOARD_TOKEN": "from-the-environment",
    }
    command = [sys.executable, "-m", "workpool", "dashboard", "--host", "0.0.0.0", "--port", "0"]
    with subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            assert line.startswith("workpool dashboard: http://0.0.0.0:"), line
            port = line.split()[2].rsplit(":", 1)[1].strip("/")
            assert status_of(f"http://127.0.0.1:{port}/") == 401
            assert status_of(f"http://127.0.0.1:{port}/", "Bearer from-the-environment") == 200
        finally:
            process.terminate()
            process.wait(timeout=20)


def test_a_missing_store_is_refused(tmp_path: Path) -> None:
    result = workpool(f"sqlite:///{tmp_path}/none.db", "dashboard")

    assert result.returncode == 1
    assert "no workpool database at" in result.stderr
    assert not (tmp_path / "none.db").exists()


def test_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    url = existing_store(tmp_path)
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]

        result = workpool(url, "dashboard", "--port", str(port))

    assert result.returncode == 2
    assert result.stderr.startswith(f"workpool: cannot serve the dashboard on 127.0.0.1:{port}")
    assert len(result.stderr.splitlines()) == 1


def test_basic_auth_needs_a_user_and_a_password(tmp_path: Path) -> None:
    result = workpool(existing_store(tmp_path), "dashboard", "--basic-auth", "nocolon")

    assert result.returncode == 2
    assert "user:password" in result.stderr

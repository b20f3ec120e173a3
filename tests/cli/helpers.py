"""Running the ``workpool`` command as a user would, for the CLI tests."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def workpool(url: str | None, *arguments: str) -> subprocess.CompletedProcess[str]:
    """``python -m workpool ARGUMENTS`` with $WORKPOOL_URL set to ``url`` (None: as the
    environment has it), output to a pipe."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    if url is not None:
        env["WORKPOOL_URL"] = url
    env.pop("COLUMNS", None)  # a pipe gets 100 columns
    return subprocess.run(
        [sys.executable, "-m", "workpool", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env=env,
    )

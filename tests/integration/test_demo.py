"""`make demo` (examples/orders.py) runs, and its closing figures say what they count."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.integration.processes import ROOT


@pytest.mark.slow
def test_the_demo_names_what_its_rates_count() -> None:
    result = subprocess.run(
        [sys.executable, "examples/orders.py"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )
    assert result.returncode == 0, result.stderr
    output = result.stdout + result.stderr
    assert "error rate" not in output  # it read as "runs that failed" where none did
    # Every run succeeded but the canceled one; the two charges were retried twice each.
    assert re.search(r"7 runs completed \(6 succeeded, 0 failed for good, 1 canceled\)", output)
    assert re.search(r"attempts that failed, incl\. retried: 4 of 10 \(40%\)", output), output
    # The retried attempts are WARNINGs in the log, one line each in the demo's format.
    warnings = [line for line in output.splitlines() if "WARNING" in line]
    assert len(warnings) == 4, output
    assert all("ConnectionError: payment gateway timed out" in line for line in warnings)
    assert "Traceback" not in output

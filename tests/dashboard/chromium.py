"""Debian's chromium, headless, as the browser tests and the docs' screenshots launch it."""

from __future__ import annotations

import os
import shutil

ARGUMENTS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    # Without these, Chromium's own connections to the network are refused here and
    # slow it down: the tests reach 127.0.0.1 only.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def executable() -> str:
    """$WORKPOOL_CHROMIUM, else ``chromium`` on PATH (``make test`` installs Debian's);
    RuntimeError saying how to get it if there is none."""
    found = os.environ.get("WORKPOOL_CHROMIUM") or shutil.which("chromium")
    if found is None:
        raise RuntimeError(
            "no chromium on PATH: `make test` installs it (apt-get install chromium)"
        )
    return found

"""A pool module that fails at import, as a broken deploy does: its worker processes
die at start, every time."""

from __future__ import annotations

raise RuntimeError("this module is broken on purpose (tests of worker processes)")

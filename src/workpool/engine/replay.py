"""Whether a run's saved steps still fit its code: the replay checks of one execution.

Each step call is numbered in the order the execution reaches it (its position, saved
with the step) and, where it can be, hashed from what it was called with. A replay
stops the run (``StepMismatchError``; the worker moves it to ``needs_attention``) when:

- arguments: a step whose saved record is used (a result, a child, an event wait) was
  called with other arguments than the ones it was saved with (or as another kind);
- order: a saved completed step was not reached although a step saved after it (a
  larger position) was replayed: the code no longer reaches it before the later one.
  This is checked before each new step starts (after letting concurrent branches catch
  up), when the run suspends, and when the handler ends.

Not a mismatch: a new step (it runs); a saved step no replayed step comes after (a step
removed or renamed at the end: its result is never read); a failed step called with
new arguments (it runs again); sleeps (a timer has no result) and ``patched`` markers.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from workpool.backends.base import StepRecord
from workpool.errors import DuplicateStepError, StepMismatchError
from workpool.validation import check_name

PATCH_PREFIX = "patched:"
"""Step names of ``ctx.patched`` markers: ``patched:<change id>``."""


def args_hash(*parts: Any) -> str | None:
    """A short hash of JSON-able arguments (None if they are not JSON: not checked)."""
    try:
        text = json.dumps(parts, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return None
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def completed(step: StepRecord) -> bool:
    """A saved step whose outcome a replay hands back (sleeps and markers excluded)."""
    if step.kind == "sleep" or step.name.startswith(PATCH_PREFIX):
        return False
    if step.kind == "workflow":
        return step.status != "waiting"
    return step.status == "succeeded"


class Replay:
    """The positions, names and replays of one execution of a run."""

    def __init__(self, run_id: str) -> None:
        self._run_id = run_id
        self._positions: dict[str, int] = {}
        self._last: StepRecord | None = None
        """The replayed step with the largest saved position."""
        self.duplicate: DuplicateStepError | None = None
        self.mismatch: StepMismatchError | None = None

    def reach(self, name: str) -> int:
        """Note that the execution reached step ``name``; return its position."""
        check_name(name, what="step name")
        if name in self._positions:
            self.duplicate = DuplicateStepError(
                f"run {self._run_id} used the step name {name!r} twice in one execution; "
                "give every step its own name (e.g. add the loop index: f'charge-{i}')"
            )
            raise self.duplicate
        self._positions[name] = position = len(self._positions)
        return position

    def reached(self, name: str) -> bool:
        return name in self._positions

    def position(self, name: str) -> int:
        return self._positions[name]

    def replay(self, saved: StepRecord, kind: str, called_with: str | None) -> None:
        """A saved record is about to be used: stop if it was saved by another call."""
        if saved.kind != kind:
            self.stop(
                f"step {saved.name!r} was saved as a {saved.kind!r} step and is now used as a "
                f"{kind!r} step"
            )
        if None not in (saved.args_hash, called_with) and saved.args_hash != called_with:
            self.stop(
                f"step {saved.name!r} is now called with other arguments than the ones its "
                "saved result came from"
            )
        last = self._last
        if saved.position is not None and (
            last is None or last.position is None or saved.position > last.position
        ):
            self._last = saved

    def unreached(self, saved: dict[str, StepRecord]) -> list[StepRecord]:
        """Saved completed steps not reached, though a step saved after them was replayed."""
        last = self._last
        if last is None or last.position is None:
            return []
        return [
            step
            for step in saved.values()
            if step.position is not None
            and step.position < last.position
            and step.name not in self._positions
            and completed(step)
        ]

    def check_order(self, saved: dict[str, StepRecord]) -> None:
        """Stop if a saved completed step was skipped (see the module docstring)."""
        skipped = self.unreached(saved)
        if skipped and self._last is not None:
            first = min(skipped, key=lambda step: step.position or 0)
            self.stop(
                f"saved step {first.name!r} (position {first.position}) was not reached, "
                f"though step {self._last.name!r} saved after it (position "
                f"{self._last.position}) was replayed: the code no longer reaches its steps "
                "as it did"
            )

    def stop(self, why: str) -> None:
        self.mismatch = StepMismatchError(
            f"run {self._run_id}: {why}. The run needs attention: rerun it from a step "
            f"(workpool runs rerun {self._run_id} --from-step NAME) or cancel it"
        )
        raise self.mismatch

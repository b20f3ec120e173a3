"""The CLI on a store holding a corrupt run record: `runs show` says in one line which
run and field are bad (exit 2), and `runs list` lists the other runs."""

from __future__ import annotations

from tests.cli.helpers import workpool
from tests.conformance.corrupting import corrupt
from workpool import RunContext, Workpool


async def test_runs_show_names_the_bad_field_and_runs_list_goes_on(backend_url: str) -> None:
    pool = Workpool(backend_url)

    @pool.workflow()
    async def noop(ctx: RunContext, value: int) -> int:
        return value

    bad, good = await pool.enqueue_many([noop.prepare(1), noop.prepare(2)])
    await corrupt(backend_url, bad.id, "created_at", "noon")
    await pool.aclose()

    shown = workpool(backend_url, "runs", "show", bad.id)
    assert (shown.returncode, shown.stdout) == (2, "")
    assert len(shown.stderr.splitlines()) == 1, shown.stderr
    assert bad.id in shown.stderr
    assert "'created_at'" in shown.stderr

    listed = workpool(backend_url, "runs", "list")
    assert listed.returncode == 0, listed.stderr
    assert good.id in listed.stdout
    assert bad.id not in listed.stdout

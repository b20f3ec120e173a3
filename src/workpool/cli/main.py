"""Entry point of the ``workpool`` command: a click group of subcommands."""

from __future__ import annotations

import click

from workpool.cli.acting import cancel, delete, failures, retry
from workpool.cli.cron import cron
from workpool.cli.dashboard import dashboard
from workpool.cli.limits import limits
from workpool.cli.migrate import migrate
from workpool.cli.pausing import pause, resume, run_now
from workpool.cli.queues import queues
from workpool.cli.runs import runs, steps
from workpool.cli.stats import stats, workflows
from workpool.cli.worker import worker


@click.group()
@click.version_option(package_name="workpool")
def cli() -> None:
    """workpool: durable functions on SQLite, PostgreSQL or Redis."""


for command in (cancel, retry, delete, failures, pause, resume, run_now):
    runs.add_command(command)
cli.add_command(worker)
cli.add_command(queues)
cli.add_command(runs)
cli.add_command(steps)
cli.add_command(stats)
cli.add_command(workflows)
cli.add_command(limits)
cli.add_command(cron)
cli.add_command(dashboard)
cli.add_command(migrate)


def main() -> None:
    """Run the command line."""
    cli()

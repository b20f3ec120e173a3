"""``manage.py workpool_worker [--backend ALIAS] [OPTIONS]``: ``workpool worker`` on the
pool of a WorkpoolBackend of TASKS (``default`` unless ``--backend``), with every option
of ``workpool worker`` (``--concurrency``, ``--processes``...). Its queues are the
backend's QUEUES unless ``--queues`` is given."""

from __future__ import annotations

import argparse
import sys
from typing import Any, NoReturn

from django.core.management.base import BaseCommand, CommandError

from workpool.cli.worker import worker
from workpool.contrib.django.compat import task_backends
from workpool.contrib.django.worker import pool_of


class Command(BaseCommand):
    help = (
        "Run a workpool worker for the tasks of a WorkpoolBackend: --backend ALIAS (default "
        "'default'), then any option of `workpool worker` (see --help)."
    )

    def run_from_argv(self, argv: list[str]) -> NoReturn:
        """Hand the options to ``workpool worker`` itself (Django's parser would refuse
        the ones it does not know)."""
        parser = argparse.ArgumentParser(add_help=False)
        parser.add_argument("--backend", default="default")
        known, rest = parser.parse_known_args(argv[2:])
        try:
            pool_of(known.backend)
        except LookupError as error:
            self.stderr.write(f"CommandError: {error}")  # as Django reports one
            sys.exit(CommandError(error).returncode)
        if not any(option == "--queues" or option.startswith("--queues=") for option in rest):
            queues = task_backends[known.backend].queues
            rest = ["--queues", ",".join(sorted(queues) or ["default"]), *rest]
        target = f"workpool.contrib.django.worker:{known.backend}"
        worker.main([target, *rest], prog_name=f"{argv[0]} {argv[1]}")

    def handle(self, *args: Any, **options: Any) -> None:
        raise CommandError(
            "workpool_worker runs until it is stopped: start it from a shell "
            "(python manage.py workpool_worker), not with call_command"
        )

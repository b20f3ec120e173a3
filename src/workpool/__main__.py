"""``python -m workpool`` runs the command line."""

from workpool.cli.main import main

main()

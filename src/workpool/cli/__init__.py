"""The ``workpool`` command line."""

"""The workpool benchmark suite: ``python -m benchmarks`` (see docs/benchmarks.md)."""

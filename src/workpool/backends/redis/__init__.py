"""The Redis backend: runs in hashes, queues in sorted sets, every transition a Lua script."""

-- Migration 0008: where idle workers are woken (backends/sqlite/wakeups.py).
--
-- Each backend instance that waits for work binds a datagram socket and announces its
-- address here, once per queue it waits on. A transaction that makes work runnable in
-- a queue reads the addresses of that queue and, after its commit, sends one datagram
-- to each. A row outlives a killed process; the first sender refused by its address
-- deletes it.

CREATE TABLE wakeups (
    queue TEXT NOT NULL,
    address TEXT NOT NULL,  -- the socket's abstract name, without the leading NUL
    PRIMARY KEY (queue, address)
) WITHOUT ROWID;

PRAGMA user_version = 8;

-- Migration 0012: the rate limits a worker's code sets on a workflow's runs, recorded in
-- the registry beside its queue, max_concurrency, retry policy and crons (JSON text; NULL
-- when a version that did not record them registered the workflow).

ALTER TABLE workflows ADD COLUMN rate_limits TEXT;

PRAGMA user_version = 12;

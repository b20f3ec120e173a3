-- Migration 0021: shared limits (Workpool.limit). A run subject to several gates (its
-- workflow's and shared ones) lists them all in gate_list, JSON [[gate, limit], ...] in
-- gate id order; gate and gate_limit then name the one it waits at (the first that was
-- full when it was last examined). NULL: one gate at most, as before.
-- workflows.limits: the shared limits a workflow's runs count against, as registered.

ALTER TABLE runs ADD COLUMN gate_list TEXT;
ALTER TABLE workflows ADD COLUMN limits TEXT;

PRAGMA user_version = 21;

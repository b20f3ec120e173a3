-- Migration 0008: shared limits (Workpool.limit), as SQLite migration 0021. A run subject
-- to several gates lists them all in gate_list, JSON [[gate, limit], ...] in gate id order;
-- gate and gate_limit then name the one it waits at. NULL: one gate at most.
ALTER TABLE runs ADD COLUMN gate_list text;
ALTER TABLE workflows ADD COLUMN limits text;

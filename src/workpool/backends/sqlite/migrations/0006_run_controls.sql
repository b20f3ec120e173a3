-- Migration 0006: run controls (time limits, progress).

ALTER TABLE runs ADD COLUMN timeout REAL;                         -- seconds; NULL: the workflow's
ALTER TABLE runs ADD COLUMN attempt_time REAL NOT NULL DEFAULT 0; -- seconds the attempt ran before
                                                                  -- its suspensions
ALTER TABLE runs ADD COLUMN progress TEXT;                        -- JSON: the handler's latest

PRAGMA user_version = 6;

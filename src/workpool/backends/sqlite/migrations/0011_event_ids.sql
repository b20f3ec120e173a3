-- Migration 0011: the ids of the events sent to a run (send_event's event_id), so that a
-- sender's retry stores its event once. Deleted with the run.

CREATE TABLE event_ids (
    run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    event_id TEXT NOT NULL,
    PRIMARY KEY (run_id, event_id)
) WITHOUT ROWID;

PRAGMA user_version = 11;

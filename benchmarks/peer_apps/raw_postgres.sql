-- name: schema
CREATE TABLE IF NOT EXISTS jobs (
    id bigserial PRIMARY KEY,
    status text NOT NULL DEFAULT 'queued',
    payload jsonb NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_queued ON jobs (id) WHERE status = 'queued';
CREATE OR REPLACE FUNCTION jobs_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('jobs', '');
    RETURN NULL;
END $$;
CREATE OR REPLACE TRIGGER jobs_inserted AFTER INSERT ON jobs
    FOR EACH STATEMENT EXECUTE FUNCTION jobs_notify();

-- name: enqueue
INSERT INTO jobs (payload) VALUES (%s)

-- name: claim
UPDATE jobs SET status = 'running'
WHERE id IN (
    SELECT id FROM jobs WHERE status = 'queued' ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED
)
RETURNING id, payload

-- name: done
UPDATE jobs SET status = 'done' WHERE id = ANY(%s)

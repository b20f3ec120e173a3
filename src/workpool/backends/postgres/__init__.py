"""The PostgreSQL backend: runs in one schema of a PostgreSQL database (psycopg 3)."""

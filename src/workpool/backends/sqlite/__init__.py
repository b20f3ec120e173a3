"""The SQLite backend: one WAL-mode file shared by the processes of one host."""

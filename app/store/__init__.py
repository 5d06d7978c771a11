"""The run store: what the service persists about runs, threads and their events (protocols.py),
on SQLite or Postgres; backend.py opens the configured one."""

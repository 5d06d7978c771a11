"""The run store: what the service persists about runs, threads and their events, and tenants'
document collections with their full-text index (protocols.py), on SQLite or Postgres;
backend.py opens the configured one."""

"""The embedded SQLite store, one module per concern (app/store/protocols.py)."""

"""The Postgres store, one module per concern (app/store/protocols.py)."""

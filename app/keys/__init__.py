"""Keys and secrets, read and checked without I/O: the API keys by name and the caller each
identifies (tenancy.py), the webhook secret and the signatures it makes (signing.py). Below the
settings, which parse both."""

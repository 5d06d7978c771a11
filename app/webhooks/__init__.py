"""Webhooks: a run's end POSTed to the URL its caller gave, signed per Standard Webhooks."""

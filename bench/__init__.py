"""Benchmarks: where the time and the model calls of a run go (`make bench`)."""

"""Test doubles shared by the tests and the benchmarks: scripted chat models, declarative tree
scenarios, and the Gemini REST simulator. Nothing in the product imports this package."""

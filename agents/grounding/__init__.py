"""Grounded answers: evidence items a run keeps (evidence.py), and the citation verifier with no
model in it (verify.py, over quotes.py's matching and sentences.py's splitting). Pure: no I/O."""

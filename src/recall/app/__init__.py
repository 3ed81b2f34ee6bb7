"""Use cases: what recall does, for a caller (`gate.Principal`) resolved in one place, `gate.py`."""

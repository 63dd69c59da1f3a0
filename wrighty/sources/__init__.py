"""Trackers wrighty takes items from (docs/sources.md): a module per tracker's API. Each reads
only; what a sync does with what it read is `services/sources.py`'s, and what an issue becomes
`domain/sources.py`'s."""

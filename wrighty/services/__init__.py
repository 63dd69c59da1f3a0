"""The operations every entry point (the CLI, the inbox, the worker) goes through, one module
per concern: items (reading items and the operator actions on them), show (what `show` gathers
about an item), runlogs (a run's logs read back), resume (the facts of the resume rule on this
installation), reaper (settling expired claims) and status (the health report), among others
(docs/architecture.md names each).

Nothing is imported here: a command loads only the service module it uses, so that a read
command stays cheap to start.
"""

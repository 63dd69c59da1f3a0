"""The worker: the claim loop (loop.py), one claim's run (run.py), the store as a run sees it
(patient.py), and beside them the worker's row in the registry (registry.py), where agents
work (workspaces.py) and the run logs they leave (runlogs.py).

Nothing is imported here: `wrighty logs` reads run logs without loading the worker.
"""

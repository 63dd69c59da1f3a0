"""The worker: the claim loop (loop.py), one claim's run (run.py: the steps prepare.py,
watch.py, verify.py and finish.py over the shared life.py), the store as a run sees it
(patient.py), and beside them the worker's row in the registry (registry.py); where agents
work is wrighty/workproduct/'s. The run logs are written by the supervisor
(supervisor/process.py) and read back by services/runlogs.py.

Nothing is imported here.
"""

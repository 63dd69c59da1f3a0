"""The agent adapters: one module per vendor CLI, the command adapter, their shared contract
(base.py) and the registry that finds an adapter by name (registry.py)."""

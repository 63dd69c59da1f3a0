"""Starting, watching and stopping agent process trees (psutil lives here)."""

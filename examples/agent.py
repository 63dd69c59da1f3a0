"""The example agent, runnable from a clone: `python3 examples/agent.py` (wrighty installed).

The agent itself ships in the package (wrighty/example_agent.py), so that an installed wrighty
runs it from anywhere as `wrighty-example-agent`; this file only starts it.
"""

import sys

from wrighty.example_agent import main

if __name__ == "__main__":
    sys.exit(main())

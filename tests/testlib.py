"""The test helpers moved to tools/shaperlib (the package the tools use
too); this module only re-exports them for tests/integration/shards_test.py
until it imports shaperlib itself."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
from shaperlib import *  # noqa: E402,F401,F403

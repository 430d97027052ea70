"""The tests of the Python package run against the build's libparity.so
(PARITY_LIB or PARITY_BUILD, else build/), with the package's pytest
plugin loaded as a user's conftest.py would load it."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

pytest_plugins = ["parity.pytest_plugin", "pytester"]

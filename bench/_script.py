"""`python3 bench/NAME.py ...` runs as `python3 -m bench.NAME ...`.

Run as a file, a script's directory (bench/) is the first entry of the import
path and the checkout is not on it; a script imports this module (found there)
before anything else, and it runs the same interpreter again as the package's
module with the checkout on PYTHONPATH. Not imported otherwise.
"""
import os
import sys

_script = os.path.abspath(sys.argv[0])
_root = os.path.dirname(os.path.dirname(_script))
_name = os.path.splitext(os.path.basename(_script))[0]
_path = os.environ.get("PYTHONPATH")
os.execve(sys.executable, [sys.executable, "-m", f"bench.{_name}", *sys.argv[1:]],
          {**os.environ, "PYTHONPATH": _root + (os.pathsep + _path if _path else "")})

"""``spark-submit jobs/scripts/salted_join.py ...``: see :func:`jobs.skew.salted_join.main`."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:  # spark-submit puts jobs/scripts/ on the path, not the project root
    sys.path.insert(0, ROOT)

if __name__ == "__main__":
    from jobs.skew.salted_join import main

    sys.exit(main())

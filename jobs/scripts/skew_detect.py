"""``spark-submit jobs/scripts/skew_detect.py ...``: see :func:`jobs.skew.detect.main`."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])
if ROOT not in sys.path:  # spark-submit puts jobs/scripts/ on the path, not the project root
    sys.path.insert(0, ROOT)

if __name__ == "__main__":
    from jobs.skew.detect import main

    sys.exit(main())

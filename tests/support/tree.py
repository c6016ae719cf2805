"""A copy of the working tree (its tracked and new files, links kept as links), for tests
that build from it or change it: they write only under their temp dirs."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.support.config import REPO


def copy_tree(dst: Path) -> Path:
    """Copy the checkout's files (``git ls-files``: tracked and untracked, not ignored) to
    ``dst``; returns ``dst``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for rel in filter(None, listed.split("\0")):
        src, out = REPO / rel, dst / rel
        if src.is_symlink() or src.is_file():
            out.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, out, follow_symlinks=False)
    return dst

"""What a rewrite knows of each planned group as it goes: its new files and checksums."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from icefloe.jobs.base.plan import FileGroup
from icefloe.jobs.base.verify import Checksum


@dataclass
class GroupResult:
    group: FileGroup
    group_id: str
    new_files: list[Any] = field(default_factory=list)  # Java DataFile objects
    new_paths: list[str] = field(default_factory=list)
    new_sizes: list[int] = field(default_factory=list)
    input: Checksum = field(default_factory=Checksum)
    output: Checksum = field(default_factory=Checksum)
    engine: str = "spark"  # "arrow" when icefloe.jobs.rewrite.arrow_engine wrote (and verified) it

"""Packaging: one import root, ``icefloe``, with each top-level folder (a layer) mapped under
it: ``icefloe.jobs`` is ``jobs/``. The metadata is in ``setup.cfg``; this file only maps."""

import ast
from pathlib import Path

from setuptools import find_packages, setup

ROOT = Path(__file__).parent
# the layers, top to bottom: icefloe/__init__.py's LAYERS (read, not imported)
LAYERS = next(
    ast.literal_eval(node.value)
    for node in ast.parse((ROOT / "icefloe" / "__init__.py").read_text()).body
    if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "LAYERS"
)

package_dir = {"icefloe": "icefloe"} | {f"icefloe.{layer}": layer for layer in LAYERS}
packages = ["icefloe"] + [
    f"icefloe.{layer}{'.' + sub if sub else ''}"
    for layer in LAYERS
    for sub in ["", *find_packages(where=layer)]
]

setup(package_dir=package_dir, packages=packages)

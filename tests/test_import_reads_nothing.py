"""Importing trainscale reads no data file: every list a computation uses comes from its caller.

Every module of the package is imported in a fresh interpreter with ``TRAINSCALE_DATA`` pointing
at a folder that does not exist, under an audit hook (:func:`sys.addaudithook`) that records
every file the process opens. No opened path may lie in that folder, in the repository's
``data/`` or in a wheel's ``trainscale/_data``: a module that read a catalogue at import (the
framework list once did) would open one of them, whether or not the file is there.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import trainscale

_SCRIPT = r"""
import importlib, json, os, pkgutil, sys

opened = []


def hook(event, args):
    if event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        opened.append(os.path.abspath(os.fsdecode(args[0])))


sys.addaudithook(hook)
import trainscale

names = [m.name for m in pkgutil.walk_packages(trainscale.__path__, "trainscale.")]
for name in names:
    importlib.import_module(name)
print(json.dumps({"modules": len(names), "opened": opened}))
"""


def test_importing_every_module_opens_no_data_file(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-data-folder"
    package = Path(trainscale.__file__).resolve().parent
    env = {
        **os.environ,
        "TRAINSCALE_DATA": str(missing),
        "PYTHONPATH": os.pathsep.join([str(package.parent), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["modules"] > 100  # every module of the package was imported
    assert any(path.endswith(".py") for path in seen["opened"])  # the hook saw the imports
    data_folders = (missing, package.parents[1] / "data", package / "_data")
    read = [
        path
        for path in seen["opened"]
        if any(Path(path).is_relative_to(folder) for folder in data_folders)
    ]
    assert read == [], f"read at import: {read}"

"""``python -m trainscale.bench …`` = ``trainscale bench …`` (also under torchrun)."""

from __future__ import annotations

import sys

from trainscale.cli import main

if __name__ == "__main__":
    sys.exit(main(["bench", *sys.argv[1:]]))

"""The bench command without PyTorch: the main package never imports it, and the command says
how to install it."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from trainscale.bench.config import SHAPE_FIELDS
from trainscale.bench.options import model_shape
from trainscale.errors import TrainscaleError

from .conftest import TINY, env_with_source


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code],
        env=env_with_source(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_trainscale_and_its_cli_do_not_import_torch():
    done = _python(
        "import sys, trainscale, trainscale.ingest.runs, trainscale.bench, trainscale.bench.sweep\n"
        "from trainscale.cli import _build_parser\n"
        "_build_parser().parse_args(['bench', '--seq-len', '8', '--out', 'x'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch'))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_bench_without_torch_says_how_to_install_it(tmp_path):
    args = [*TINY, "--out", str(tmp_path / "run")]
    done = _python(
        "import sys\n"
        "sys.modules['torch'] = None  # as if PyTorch were not installed\n"
        "from trainscale.cli import main\n"
        f"sys.exit(main(['bench', *{args!r}]))"
    )
    assert done.returncode == 2
    assert "bench needs PyTorch" in done.stderr and "pip install -e '.[bench]'" in done.stderr
    assert not (tmp_path / "run").exists()


def test_bench_needs_a_model_shape(tmp_path):
    done = _python(
        "import sys\nfrom trainscale.cli import main\n"
        f"sys.exit(main(['bench', '--layers', '2', '--seq-len', '8', '--out', {str(tmp_path)!r}]))"
    )
    assert done.returncode == 2
    assert (
        "give --model or the model shape; missing --hidden, --heads, --kv-heads, --ffn, --vocab"
    ) in done.stderr


def test_bench_refuses_a_mixture_of_experts_model():
    """The harness builds dense decoders: an MoE catalogue model is a named error, never a dense
    model of its attention and vocabulary."""
    args = argparse.Namespace(model="mixtral-8x7b", **dict.fromkeys(SHAPE_FIELDS))
    with pytest.raises(TrainscaleError, match="mixtral-8x7b is not a dense decoder"):
        model_shape(args)

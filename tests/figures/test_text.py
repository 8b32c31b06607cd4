"""trainscale.figures._text: the setup words a figure derives from its data."""

from __future__ import annotations

import pandas as pd

from trainscale.figures._text import seq_and_batch


def test_seq_and_batch_reads_the_rows():
    rows = pd.DataFrame({"seq_len": [4096, 4096], "global_batch": [2048, 2048]})
    assert seq_and_batch(rows) == "seq 4,096, global batch 2,048"


def test_seq_and_batch_gives_a_range_where_the_rows_vary():
    rows = pd.DataFrame({"seq_len": [2048, 8192, 4096], "global_batch": [512, 512, 512]})
    assert seq_and_batch(rows) == "seq 2,048–8,192, global batch 512"

"""Scale bands of GPU counts, in their order."""

from __future__ import annotations

import pandas as pd

from trainscale.published.scale import SCALE_BANDS, in_band_order, scale_band


def test_bands_split_at_256_and_1024() -> None:
    bands = scale_band(pd.Series([1, 256, 257, 1024, 1025, 16384]))
    assert bands.tolist() == [
        "≤ 256 GPUs", "≤ 256 GPUs", "257–1,024 GPUs", "257–1,024 GPUs", "> 1,024 GPUs",
        "> 1,024 GPUs",
    ]  # fmt: skip


def test_tables_come_out_in_band_order_without_other_rows() -> None:
    table = pd.DataFrame({"scale_band": ["> 1,024 GPUs", "all", "≤ 256 GPUs"], "rows": [1, 2, 3]})
    ordered = in_band_order(table)
    first, _, last = SCALE_BANDS
    assert ordered["scale_band"].tolist() == [first, last]

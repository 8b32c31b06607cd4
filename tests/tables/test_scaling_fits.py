"""Tests of trainscale.tables.scaling_fits on series with known parameters."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from trainscale.fits import usl_model
from trainscale.schema import SCALING_FIT_COLUMNS, names
from trainscale.tables.scaling_fits import scaling_fits

GPUS = np.array([8, 16, 32, 64, 128, 256, 512, 1024, 2048], dtype=float)


def _series(model: str, study: str, x: np.ndarray, power: np.ndarray, **extra) -> pd.DataFrame:
    n = len(x)
    return pd.DataFrame(
        {
            "source": "sim",
            "study": study,
            "model": model,
            "gpu": "h100-sxm-80gb",
            "tp": 1,
            "pp": 1,
            "sharding": "fsdp",
            "recompute": "none",
            "seq_len": 4096,
            "global_batch": 2048,
            "micro_batch": np.minimum(2, 2048 // GPUS[:n]).astype(int),  # the paper setup's
            "precision": "bf16",
            "num_gpus": GPUS[:n].astype(int),
            "dp": GPUS[:n].astype(int),
            "tokens_per_s": x,
            "tokens_per_s_per_gpu": x / GPUS[:n],
            "power_w_per_gpu": power,
            "fits_memory": True,
            **extra,
        }
    )


@pytest.fixture(scope="module")
def synthetic():
    rng = np.random.default_rng(7)
    noise = np.exp(rng.normal(0.0, 0.01, GPUS.size))
    usl = _series(
        "usl-model",
        "fsdp_scaleout",
        usl_model(GPUS, 1000.0, 0.02, 2e-5) * noise,
        600.0 * GPUS**-0.01 * noise,
    )
    power_law = 500.0 * GPUS**0.9 * noise  # tokens/s per GPU falls as N^-0.1
    law = _series("law-model", "power_efficiency", power_law, 650.0 * GPUS**-0.02 * noise)
    duplicate = law.assign(study="hardware_generations")  # the same configurations again
    short = _series("short-model", "fsdp_scaleout", GPUS[:3] * 100.0, np.full(3, 600.0))
    other = _series("other-model", "best_plan", GPUS * 100.0, np.full(GPUS.size, 600.0))
    return pd.concat([usl, law, duplicate, short, other], ignore_index=True)


def test_columns_and_series(synthetic, catalogue):
    table = scaling_fits(synthetic, models=catalogue.models)
    assert list(table.columns) == names(SCALING_FIT_COLUMNS)
    # short series (3 counts) and studies that are not scale-outs are left out
    assert sorted(table["model"].unique()) == ["law-model", "usl-model"]
    # one row per series, metric and parameter: 2 loglog metrics x 2 + USL x 3
    assert table.groupby("model").size().tolist() == [7, 7]
    assert (table["n"] == GPUS.size).all()  # the duplicated configurations count once
    assert table[["ci_low", "ci_high"]].notna().all().all()


def test_loglog_slopes_recover_the_power_law(synthetic, catalogue):
    table = scaling_fits(synthetic, models=catalogue.models).set_index(
        ["model", "metric", "parameter"]
    )
    slope = table.loc[("law-model", "tokens_per_s_per_gpu", "slope")]
    assert slope["ci_low"] <= -0.1 <= slope["ci_high"]
    assert slope["estimate"] == pytest.approx(-0.1, abs=0.01)
    power = table.loc[("law-model", "power_w_per_gpu", "slope")]
    assert power["ci_low"] <= -0.02 <= power["ci_high"]
    pct = table.loc[("law-model", "tokens_per_s_per_gpu", "pct_per_doubling")]
    assert pct["estimate"] == pytest.approx(100 * (2 ** slope["estimate"] - 1))


def test_usl_recovers_sigma_kappa_and_the_peak(synthetic, catalogue):
    table = scaling_fits(synthetic, models=catalogue.models).set_index(["model", "parameter"])
    usl = table.loc["usl-model"]
    sigma, kappa = usl.loc["sigma"], usl.loc["kappa"]
    assert sigma["ci_low"] <= 0.02 <= sigma["ci_high"]
    assert kappa["ci_low"] <= 2e-5 <= kappa["ci_high"]
    n_star = usl.loc["n_star"]
    assert n_star["ci_low"] <= np.sqrt(0.98 / 2e-5) <= n_star["ci_high"]
    fits = usl.loc[["sigma", "kappa", "n_star"]]
    assert (fits["metric"] == "tokens_per_s").all() and (fits["fit"] == "usl").all()


def test_published_series_keep_their_micro_batch_and_citation(catalogue):
    x = 1000.0 * GPUS[:5] ** 0.95
    rows = _series(
        "",
        "published",
        x,
        np.full(5, np.nan),
        citation="Paper 2024",
        layers=32,
        hidden=4096,
        heads=32,
        ffn=11008,
        vocab=32000,
    )
    rows = rows.assign(source="published", global_batch=rows["num_gpus"] * 4, micro_batch=4)
    off_rule = _series("off-rule", "fsdp_scaleout", x, np.full(5, 600.0)).assign(micro_batch=1)
    rows = pd.concat([rows, off_rule], ignore_index=True)
    table = scaling_fits(rows, models=catalogue.models)
    assert set(table["origin"]) == {"Paper 2024"}
    assert set(table["batch"]) == {"micro 4 per GPU"}
    assert set(table["model"]) == {"llama2-7b"}  # named from its catalogue shape
    assert set(table["metric"]) == {"tokens_per_s_per_gpu", "tokens_per_s"}  # no power data


def test_labels_print_integers_and_say_simulated(catalogue):
    """User trial item 16: the dataset holds these columns as floats, and the table printed
    "12.0L h768.0", "tp1.0×pp1.0", "global 2048.0 (fixed)"; its source read "sim"."""
    x = 1000.0 * GPUS[:5] ** 0.95
    floats = {"tp": 1.0, "pp": 1.0, "global_batch": 2048.0, "num_gpus": GPUS[:5]}
    sim = _series("law-model", "fsdp_scaleout", x, np.full(5, 600.0)).assign(**floats)
    published = _series("", "published", x, np.full(5, np.nan), citation="Paper 2024")
    published = published.assign(
        source="published", layers=12.0, hidden=768.0, heads=12.0, ffn=3072.0, vocab=50368.0,
        micro_batch=26.0, tp=1.0, pp=1.0, global_batch=np.nan, num_gpus=GPUS[:5],
    )  # fmt: skip
    table = scaling_fits(pd.concat([sim, published], ignore_index=True), models=catalogue.models)
    assert set(table["source"]) == {"simulated", "published"}
    assert set(table["plan"]) == {"tp1×pp1 fsdp, recompute none"}
    assert set(table["batch"]) == {"global 2048 (fixed)", "micro 26 per GPU"}
    assert set(table["model"]) == {"law-model", "12L h768"}


def test_usl_rows_explain_an_infinite_peak_and_r2_is_per_gpu(synthetic, catalogue):
    table = scaling_fits(synthetic, models=catalogue.models).set_index(["model", "parameter"])
    law = table.loc[("law-model", "n_star")]  # a power law never peaks
    assert law["estimate"] == np.inf
    assert "no peak: throughput still rises at the largest count" in law["note"]
    assert table.loc[("law-model", "sigma"), "note"] == table.loc[("law-model", "kappa"), "note"]
    assert "no peak" not in table.loc[("law-model", "sigma"), "note"]
    # R² of log tokens/s per GPU, which a USL fits poorly for a power law (about 0.72 here),
    # where R² of log whole-job tokens/s read 0.997, as every USL row did ("1.000")
    assert table.loc[("law-model", "n_star"), "r2"] < 0.9
    assert table.loc[("usl-model", "n_star"), "r2"] > 0.95  # a USL series is explained

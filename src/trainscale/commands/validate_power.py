"""``trainscale validate --holdout``'s power section: node power and node energy per token of the
metered runs (``data/published/power-measurements.csv``), each source predicted by a power fit
that left it out (:mod:`trainscale.calibrate.power`), and in sample.

Node scope (its GPUs plus host, AC at the wall, no switches, no PUE), the scope of the meters.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

if TYPE_CHECKING:
    from trainscale.calibrate.power import PowerFit
    from trainscale.sim.calibration import Calibration
    from trainscale.sim.catalogue import Catalogue

__all__ = ["format_power_table", "format_throughput_lines", "power_fit", "print_power_holdout"]


def power_fit(calibration: Calibration, catalogue: Catalogue) -> PowerFit | None:
    """The power stage refitted on the shipped metered rows (None without the file)."""
    from trainscale.calibrate.power import calibrate_power
    from trainscale.paths import data_dir
    from trainscale.published.power_rows import load_power_rows
    from trainscale.published.sources import load_sources

    path = data_dir() / "published" / "power-measurements.csv"
    if not path.is_file():
        return None
    sources = load_sources(
        data_dir() / "published" / "sources.yaml", frameworks=catalogue.framework_keys
    )
    rows = load_power_rows(path, catalogue, sources)
    return calibrate_power(rows, calibration, catalogue)


def format_power_table(fit: PowerFit) -> str:
    """One line per source: held-out and in-sample signed error of node power and of node
    energy per token, percent, and the measured and held-out predicted values."""
    header = (
        f"{'source':<40} {'metric':<20} {'metered':>9} {'held-out':>9} {'error':>8} "
        f"{'in-sample':>9}"
    )
    lines = [header]
    inside = fit.in_sample.set_index(["citation", "metric"])["error_pct"]
    for row in fit.held_out.sort_values(
        ["citation", "metric"], ascending=[True, False]
    ).itertuples():
        digits = ".0f" if row.metric == "node_power_w_avg" else ".4f"
        lines.append(
            f"{row.citation:<40} {row.metric:<20} {row.observed:>9{digits}} "
            f"{row.predicted:>9{digits}} {row.error_pct:>+7.2f}% "
            f"{inside[(row.citation, row.metric)]:>+8.2f}%"
        )
    return "\n".join(lines)


def format_throughput_lines(fit: PowerFit) -> str:
    """One line per metered run: its tokens/s per GPU predicted in steady state and over the
    whole timed run (evaluations included where its benchmark's rules are known), and metered."""
    runs = fit.in_sample.drop_duplicates("citation").sort_values("citation")
    lines = [f"{'tokens/s per GPU':<40} {'steady':>9} {'run':>9} {'metered':>9} {'error':>8}"]
    for row in runs.itertuples():
        error = 100.0 * (row.run_tokens_per_s_per_gpu / row.measured_tokens_per_s_per_gpu - 1.0)
        lines.append(
            f"{row.citation:<40} {row.tokens_per_s_per_gpu:>9.1f} "
            f"{row.run_tokens_per_s_per_gpu:>9.1f} {row.measured_tokens_per_s_per_gpu:>9.1f} "
            f"{error:>+7.2f}%"
        )
    return "\n".join(lines)


def print_power_holdout(calibration: Calibration, catalogue: Catalogue) -> pd.DataFrame | None:
    """Print the power section; return the held-out rows (None without metered rows)."""
    fit = power_fit(calibration, catalogue)
    if fit is None:
        return None
    print(
        "\nnode power (W per node) and node energy per token (J), predicted vs metered (MLPerf "
        "power logs, AC, node scope: GPUs plus host, no switches, no PUE); held-out: the power "
        "fit without the row's source"
    )
    print(format_power_table(fit))
    print(format_throughput_lines(fit))
    terms = fit.terms
    print(
        f"host_power_scale {terms.host_power_scale:g} (fitted on all sources); 80 % interval "
        f"factors: node power exp(+-1.28*{terms.node_power_log_sigma}), energy "
        f"exp(+-1.28*{terms.energy_log_sigma})"
    )
    return fit.held_out

"""A measurement is refused when it implies an impossible or absurdly low utilisation, as well
as an impossible high one: hypothesis over the published rows scaled by random factors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.calibrate.test_measurements import BASE, CATALOGUE, MEASURED, foundry, write
from trainscale.calibrate.measurements import MeasurementChecks, read_measurements
from trainscale.errors import ConfigurationError
from trainscale.sim.configs import build_configs
from trainscale.sim.simulate import predict_arrays

CHECKS = MeasurementChecks()
TABLE = foundry(6)
_configs, _, _ = build_configs(
    TABLE, hardware=CATALOGUE.hardware, models=CATALOGUE.models,
    frameworks=CATALOGUE.frameworks, origin="t",
)  # fmt: skip
_predicted = predict_arrays(_configs, BASE, CATALOGUE)
PREDICTED = _predicted["tokens_per_s_per_gpu"]
MFU = _predicted["mfu"]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    row=st.integers(0, len(TABLE) - 1),
    factor=st.one_of(st.floats(1e-9, 1 / CHECKS.max_under_prediction * 0.99), st.floats(0.5, 1.3)),
)
def test_a_measurement_far_below_the_prediction_is_refused(
    tmp_path_factory: pytest.TempPathFactory, row: int, factor: float
) -> None:
    table = TABLE.copy()
    table[MEASURED] = PREDICTED  # the others plausible
    table.loc[row, MEASURED] = PREDICTED[row] * factor
    path = write(table, tmp_path_factory.mktemp("m") / "m.csv")
    low = factor < 1 / CHECKS.max_under_prediction or MFU[row] * factor < CHECKS.min_mfu
    if low:
        with pytest.raises(ConfigurationError, match=rf"row {row}, column '{MEASURED}': .* below"):
            read_measurements(path, catalogue=CATALOGUE, base=BASE)
    else:
        found = read_measurements(path, catalogue=CATALOGUE, base=BASE)
        assert np.isfinite(found.table[MEASURED]).all()


def test_a_thousandth_of_a_token_per_second_is_refused(tmp_path: Path) -> None:
    table = TABLE.assign(**{MEASURED: 0.001})
    with pytest.raises(ConfigurationError, match="implies MFU"):
        read_measurements(write(table, tmp_path / "m.csv"), catalogue=CATALOGUE, base=BASE)

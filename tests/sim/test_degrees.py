"""trainscale.sim.degrees: the one definition of the parallel degrees."""

from __future__ import annotations

import numpy as np

from trainscale.sim.degrees import data_parallel_degree, local_batch, model_parallel_degree


def test_model_parallel_degree_is_tp_pp_cp() -> None:
    assert model_parallel_degree(4, 2) == 8
    assert model_parallel_degree(4, 2, 2) == 16


def test_data_parallel_degree_is_zero_where_the_gpus_do_not_divide() -> None:
    assert data_parallel_degree(2048, 4, 2) == 256
    assert data_parallel_degree(96, 8, 8) == 0
    got = data_parallel_degree(np.array([64, 48, 48]), np.array([2, 4, 5]), np.array([2, 1, 1]))
    np.testing.assert_array_equal(got, [16, 12, 0])


def test_local_batch_is_the_global_batch_per_replica() -> None:
    assert local_batch(2048, 256) == 8
    np.testing.assert_array_equal(local_batch(np.array([1024, 64]), np.array([128, 0])), [8, 64])

"""The pipeline formulas of trainscale.sim.plan.pipeline, each checked against its source."""

from __future__ import annotations

import numpy as np
import pytest

from trainscale.sim.plan.pipeline import boundary_bytes, bubble


def test_1f1b_bubble_is_p_minus_1_slots():
    # Narayanan et al. 2021 (arXiv 2104.04473) §2.2.1: the 1F1B bubble is (p - 1) micro-batch
    # slots of the slowest stage.
    assert bubble(np.array([4]), np.array([1]), np.array([1.0])) == pytest.approx([3.0])


def test_interleaving_divides_the_bubble_by_v():
    # Narayanan et al. 2021 §2.2.2: with v model chunks per device the bubble is (p - 1)/v slots.
    out = bubble(np.array([8, 8]), np.array([1, 4]), np.array([2.0, 2.0]))
    assert out == pytest.approx([14.0, 3.5])


def test_no_pipeline_no_bubble():
    assert bubble(np.array([1]), np.array([1]), np.array([5.0])) == pytest.approx([0.0])


def test_boundary_sends_bf16_activations_and_sequence_parallel_sends_1_over_t():
    # Narayanan et al. 2021 §4.1 (scatter/gather): with tensor parallelism t each rank sends 1/t
    # of the b·s·h activations; bf16 is 2 bytes per element.
    tokens, hidden = np.array([4096.0, 4096.0]), np.array([8192.0, 8192.0])
    out = boundary_bytes(tokens, hidden, np.array([8, 8]), np.array([False, True]))
    assert out == pytest.approx([2 * 4096 * 8192, 2 * 4096 * 8192 / 8])

"""A benchmark run's whole-window throughput: its training steps plus the evaluations timed with
them.

A metered benchmark run reports the tokens it trained over its timed window (MLPerf Training:
``run_start`` to ``run_stop``), and that window also holds the evaluations the benchmark's rules
require. The simulator predicts a training step; the run the row describes is

``T_run = (S / B)·t_step + E·ceil(V / B)·φ·t_step``

with ``S`` the samples trained (the run's own figure: when it converged is a property of the run,
like its global batch), ``B`` the global batch in sequences, ``t_step`` the predicted step time,
``E`` the evaluations in the window (:func:`evaluations`), ``V`` the evaluation samples, each
evaluated in batches of ``B`` sequences, one forward pass per batch (a partial last batch takes a
whole pass), and ``φ`` a forward pass's share of a training step: forward FLOPs over the step's
(:func:`forward_share`). The whole-run tokens per second are ``S·seq_len / T_run``. Evaluation
passes are counted at the training step's rate of work (same GEMM shapes, same parallel plan);
the gradient reduction and optimizer step they skip are small beside their forward work.

:data:`MLPERF_EVALUATIONS` holds the evaluation rules of the MLPerf benchmarks whose metered rows
the power calibration reads, each with its source.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "MLPERF_EVALUATIONS",
    "EvaluationRule",
    "evaluations",
    "forward_share",
    "run_tokens_per_s",
]


@dataclass(frozen=True, slots=True)
class EvaluationRule:
    """How often and on what a benchmark evaluates: every ``every_samples`` trained samples from
    ``first_samples`` on, on ``eval_samples`` samples; ``source`` says where each number is
    printed."""

    every_samples: int
    first_samples: int
    eval_samples: int
    source: str


#: The evaluation rules of the MLPerf Training benchmarks of
#: ``data/published/power-measurements.csv``, by the benchmark name its rows print.
MLPERF_EVALUATIONS: dict[str, EvaluationRule] = {
    "llama2_70b_lora": EvaluationRule(
        every_samples=384,
        first_samples=1920,
        eval_samples=173,
        source=(
            "NVIDIA NeMo implementation, MLPerf Training v4.0 (the one the Dell v4.1 submission "
            "runs: NVIDIA/benchmarks/llama2_70b_lora/implementations/nemo in "
            "https://github.com/mlcommons/training_results_v4.0): configs/config_common.sh sets "
            "VAL_CHECK_INTERVAL=384 and SKIP_EVALS=4, conf/megatron_gpt_peft_tuning_config.yaml "
            "evaluates first after (SKIP_EVALS+1)*VAL_CHECK_INTERVAL = 1,920 samples, on the "
            "whole validation set (limit_val_batches 1.0, drop_last False) in batches of the "
            "global batch; the runs' logs print eval_samples 173 (results/*/llama2_70b_lora/"
            "result_*.txt) and evaluate every 384 samples after the first (eval_start events). "
            "The reference: https://github.com/mlcommons/training/tree/master/llama2_70b_lora "
            "(eval_steps 48 at global batch 8 = 384 samples). [A] SKIP_EVALS: the Dell config "
            "file's own value was not read; 4 is the implementation's common default"
        ),
    ),
}


def forward_share(lora: ArrayLike, full_recompute: ArrayLike) -> np.ndarray:
    """A forward pass's share of a training step's FLOPs: a forward pass does 2 FLOPs per weight
    per token, the backward 4 (input and weight gradients; Narayanan et al. 2021, eq. 3), 2 under
    LoRA (frozen weights compute no weight gradient), and full recomputation runs the forward
    again: 1/3 for training, 1/2 for LoRA, 1/4 and 1/3 with full recomputation."""
    backward = np.where(np.asarray(lora, bool), 2.0, 4.0)
    again = np.where(np.asarray(full_recompute, bool), 2.0, 0.0)
    return 2.0 / (2.0 + backward + again)


def evaluations(run_samples: ArrayLike, rule: EvaluationRule) -> np.ndarray:
    """Evaluations inside a run that trained ``run_samples`` samples: one at ``first_samples``
    and one every ``every_samples`` after, up to the run's last sample (MLPerf stops at an
    evaluation)."""
    after = np.floor((np.asarray(run_samples, np.float64) - rule.first_samples)
                     / rule.every_samples + 1e-9)  # fmt: skip
    return np.where(after >= 0.0, after + 1.0, 0.0)


def run_tokens_per_s(
    *,
    step_time_s: ArrayLike,
    global_batch: ArrayLike,
    seq_len: ArrayLike,
    run_samples: ArrayLike,
    rule: EvaluationRule,
    share: ArrayLike,
) -> np.ndarray:
    """Tokens per second over a run's whole timed window (module docstring): ``run_samples``
    trained in steps of ``global_batch`` sequences of ``seq_len`` tokens taking ``step_time_s``
    each, plus the evaluations of ``rule``, a forward pass taking ``share`` of a step."""
    step = np.asarray(step_time_s, np.float64)
    batch = np.asarray(global_batch, np.float64)
    samples = np.asarray(run_samples, np.float64)
    passes = evaluations(samples, rule) * np.ceil(rule.eval_samples / batch)
    seconds = samples / batch * step + passes * np.asarray(share, np.float64) * step
    return samples * np.asarray(seq_len, np.float64) / seconds

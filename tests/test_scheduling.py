"""How many workers a run gets (tests/scheduling.py's ``workers``, read by ``-n auto``)."""

from __future__ import annotations

import pytest

from tests.scheduling import workers


@pytest.mark.parametrize(
    ("markexpr", "count"),
    [
        ("", 3),  # the whole suite
        ("not workflow and not slurm and not browser", 2),  # the inner loop (README)
        ("not slurm", 3),  # workflow and browser tests still wait
        ("workflow", 3),
        ("slurm or browser", 3),
        ("bench", 2),
        ("not workflow and not slurm and not browser and not bench", 2),
    ],
)
def test_a_third_worker_only_where_tests_that_wait_may_run(markexpr: str, count: int) -> None:
    assert workers(markexpr) == count

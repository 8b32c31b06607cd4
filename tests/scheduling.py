"""How the suite is spread over pytest-xdist's workers (tests/conftest.py's
``pytest_xdist_auto_num_workers`` and ``pytest_collection_modifyitems``): how many workers, which
modules must run in one worker, and in what order."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from _pytest.mark.expression import Expression

# The suite runs in worker processes (pytest-xdist: ``-n auto --dist loadgroup
# --no-loadscope-reorder`` in pyproject's addopts, :func:`workers` of them; ``-n 0`` runs it in
# this one process). Each
# worker has its own session: a session fixture runs once in every worker that runs a test using
# it, each in that worker's own temporary folder (tmp_path_factory), so no two workers share a
# file. What keeps the expensive ones from running twice is the grouping below: pytest-xdist
# runs a group whole in one worker, and hands the groups out in the order of the collection.

#: The session fixtures of tests/conftest.py that start Snakemake or SLURM jobs (tens of seconds to
#: minutes each), longest first. A module using one (directly or through another fixture) joins
#: its group, and these groups run first, so that the other worker takes the modules meanwhile.
ONE_WORKER = ("report_run", "smoke_run", "user_studies_run", "slurm_smoke_run")


#: Marks of the tests that spend part of their time waiting on processes they started, not
#: computing: Snakemake runs (a copy's jobs one after another; through SLURM, the executor checks
#: job states every 10 s and more), Chromium.
WAITING = ("workflow", "slurm", "browser")


def workers(markexpr: str) -> int:
    """How many workers a run gets (``-n auto``): two where its mark expression (``-m``)
    leaves out every mark of :data:`WAITING` (the inner loop: computing only, one worker per
    core of the 2-core machine the suite is sized for), three where it may select one (a third
    worker computes in the others' waits; CHANGELOG.md gives the times measured). The
    expression is read by pytest's own parser of ``-m`` (``_pytest.mark.expression``, not
    public API: pytest is pinned in the test extra)."""
    if not markexpr:
        return 3
    selects = Expression.compile(markexpr).evaluate
    waits = any(selects(lambda name, /, mark=mark, **_: name == mark) for mark in WAITING)
    return 3 if waits else 2


def _shared_fixtures(item: pytest.Item) -> list[str]:
    """The fixtures of ``item`` that its group must share: those of :data:`ONE_WORKER` and every
    session fixture of a conftest.py under tests/ (the simulated studies of the figures, the
    torchrun launches of the harness, the refits of the calibration tests, …)."""
    shared = []
    for name in item.fixturenames:
        definitions = item._fixtureinfo.name2fixturedefs.get(name)  # the ones in force: last
        if name in ONE_WORKER or (
            definitions
            and definitions[-1].scope == "session"
            and definitions[-1].baseid.startswith("tests/")
        ):
            shared.append(name)
    return shared


def rank(key: str) -> tuple[int, str]:
    """A group's place: :data:`ONE_WORKER` in order, then other shared fixtures, then modules."""
    if key in ONE_WORKER:
        return (ONE_WORKER.index(key), "")
    return (len(ONE_WORKER), key) if key.startswith("fixture:") else (len(ONE_WORKER) + 1, key)


def xdist_groups(items: Sequence[pytest.Item]) -> dict[str, str]:
    """Module (the node id before ``::``) -> its group: modules that share a fixture
    (:func:`_shared_fixtures`) form one group, named after the first such fixture
    (:func:`rank`); any other module is a group of its own."""
    parent: dict[str, str] = {}

    def root(key: str) -> str:
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    for item in items:
        module = item.nodeid.split("::")[0]
        for name in _shared_fixtures(item):
            fixture = name if name in ONE_WORKER else f"fixture:{name}"
            first, second = sorted((root(module), root(fixture)), key=rank)
            parent[second] = first  # itself where they are one group already
    return {module: root(module) for module in (item.nodeid.split("::")[0] for item in items)}


def suffix_group(item: pytest.Item, group: str) -> None:
    """End ``item``'s node id with ``@group``, which is how pytest-xdist's loadgroup scheduler
    reads the group. pytest-xdist 3.8 does it by setting ``item._nodeid``, which pytest 9.2 no
    longer reads (the id is ``item._id``, a ``NodeId``): without this every test is scheduled on
    its own and a session fixture runs once in each worker that meets it."""
    if "@" in item.nodeid:
        return
    from _pytest.nodeid import coerce_node_id

    item._id = coerce_node_id(f"{item.nodeid}@{group}")

"""trainscale.study.sweep: loading and checking study files, expansion, chunks, simulation."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from trainscale.errors import ConfigurationError, InputFileError
from trainscale.schema import CONFIGURATION_COLUMNS, PRECISIONS, RECOMPUTE_MODES, SHARDINGS
from trainscale.sim.calibration import load_calibration
from trainscale.sim.catalogue import load_catalogue
from trainscale.sim.simulate import predict
from trainscale.study.chunks import chunk_count, write_study_configurations
from trainscale.study.expand import ExpansionSummary, expand_study
from trainscale.study.grid import grid_blocks
from trainscale.study.load import load_study
from trainscale.study.micro_batch import resolve_micro_batch
from trainscale.study.simulate import simulate_configurations
from trainscale.study.spec import Filters, Study

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "workflow" / "schemas" / "study.schema.yaml"

#: What the library takes from its caller: the shipped catalogues and calibration.
CATALOGUE = load_catalogue()
#: The catalogues a study's names are checked against (load_study).
NAMES = {"hardware": CATALOGUE.hardware, "models": CATALOGUE.models}
#: The catalogue and calibration a study is expanded and simulated with.
SHIPPED = {"catalogue": CATALOGUE, "calibration": load_calibration()}

#: A complete, valid study (Llama-2 7B, FSDP on H100); tests change one thing at a time.
BASE = {
    "description": "test study",
    "fixed": {
        "model": "llama2-7b", "seq_len": 4096, "global_batch": 256, "micro_batch": 1,
        "gpu": "h100-sxm-80gb", "pp": 1, "sharding": "fsdp", "recompute": "none",
        "precision": "bf16",
    },
    "sweep": {"num_gpus": [8, 16], "tp": [1, 2]},
}  # fmt: skip


def _write(tmp_path: Path, data: dict, name: str = "study") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _study(**changes: object) -> Study:
    fields = {"name": "t", "path": "t.yaml", "description": "test", **changes}
    fields.setdefault("fixed", BASE["fixed"])
    fields.setdefault("sweep", BASE["sweep"])
    return Study(**fields)  # type: ignore[arg-type]


def _load_error(tmp_path: Path, data: dict) -> str:
    path = _write(tmp_path, data)
    with pytest.raises(InputFileError) as caught:
        load_study(path, schema=SCHEMA, **NAMES)
    message = str(caught.value)
    assert message.startswith(f"{path}: ")  # every message names the file first
    return message


def _with(section: str, **values: object) -> dict:
    data = yaml.safe_load(yaml.safe_dump(BASE))
    data[section] = {**data.get(section, {}), **values}
    return data


# --------------------------------------------------------------------------------------------
# The schema


def test_schema_lists_exactly_the_configuration_columns() -> None:
    schema = yaml.safe_load(SCHEMA.read_text())
    columns = [c.name for c in CONFIGURATION_COLUMNS]

    assert list(schema["properties"]["fixed"]["properties"]) == columns
    assert list(schema["properties"]["sweep"]["properties"]) == columns
    assert schema["$defs"]["sharding"]["enum"] == list(SHARDINGS)
    assert schema["$defs"]["recompute"]["enum"] == list(RECOMPUTE_MODES)
    assert schema["$defs"]["precision"]["enum"] == list(PRECISIONS)


def test_every_schema_key_has_a_description() -> None:
    schema = yaml.safe_load(SCHEMA.read_text())
    defs = schema["$defs"]

    def described(node: dict) -> bool:
        target = defs[node["$ref"].split("/")[-1]] if "$ref" in node else {}
        return bool(node.get("description") or target.get("description"))

    assert schema["description"]
    for key, node in schema["properties"].items():
        assert described(node), key
        for child, sub in node.get("properties", {}).items():
            assert described(sub), f"{key}.{child}"


# --------------------------------------------------------------------------------------------
# Loading: valid files


def test_the_smoke_study_loads() -> None:
    study = load_study(REPO / "config/studies/smoke.yaml", schema=SCHEMA, **NAMES)

    assert study.name == "smoke"
    assert study.grid_size == 12  # 4 GPU counts x 3 tp degrees
    assert study.rows_per_job == 4
    assert study.filters == Filters(max_model_parallel=2)


def test_defaults_apply_when_sections_are_left_out(tmp_path: Path) -> None:
    data = {"description": "one row", "fixed": {**BASE["fixed"], "num_gpus": 8, "tp": 1}}

    study = load_study(_write(tmp_path, data), schema=SCHEMA, **NAMES)

    assert study.sweep == {} and study.derive == {}
    assert study.filters == Filters(drop_invalid=True, fits_memory=False)
    assert study.grid_size == 1


def test_a_custom_shape_needs_no_model(tmp_path: Path) -> None:
    fixed = {k: v for k, v in BASE["fixed"].items() if k != "model"}
    shape = {"layers": 2, "hidden": 256, "heads": 4, "kv_heads": 4, "ffn": 1024, "vocab": 1000}
    data = {**BASE, "fixed": {**fixed, **shape, "mlp": "gelu"}}

    assert load_study(_write(tmp_path, data), schema=SCHEMA, **NAMES).fixed["hidden"] == 256


# --------------------------------------------------------------------------------------------
# Loading: what is rejected, and the message


def test_unknown_gpu_names_file_key_and_valid_names(tmp_path: Path) -> None:
    message = _load_error(tmp_path, _with("fixed", gpu="h300-sxm-999gb"))

    assert "key 'fixed.gpu': unknown GPU 'h300-sxm-999gb'; valid: " in message
    assert message.endswith(", ".join(sorted(CATALOGUE.hardware.gpus)))


def test_unknown_gpu_in_a_sweep_names_its_position(tmp_path: Path) -> None:
    data = _with("sweep", gpu=["a100-sxm-80gb", "a200"])
    del data["fixed"]["gpu"]

    message = _load_error(tmp_path, data)

    assert "key 'sweep.gpu[1]': unknown GPU 'a200'; valid: " in message


def test_unknown_model_lists_the_catalogue(tmp_path: Path) -> None:
    message = _load_error(tmp_path, _with("fixed", model="llama9-1t"))

    assert "key 'fixed.model': unknown model 'llama9-1t'; valid: " in message
    assert message.endswith(", ".join(sorted(CATALOGUE.models)))


@pytest.mark.parametrize(
    ("section", "values", "expected"),
    [
        ("fixed", {"seq_len": -4096}, "key 'fixed.seq_len': -4096 is less than the minimum of 1"),
        ("sweep", {"num_gpus": [8, 0]}, "key 'sweep.num_gpus[1]': 0 is less than the minimum of 1"),
        (
            "fixed",
            {"nic_gbit_per_s_per_gpu": 0},
            "key 'fixed.nic_gbit_per_s_per_gpu': 0 is less than the minimum of 1",
        ),
        ("fixed", {"global_batch": 2.5}, "key 'fixed.global_batch': 2.5 is not of type 'integer'"),
        ("sweep", {"tp": []}, "key 'sweep.tp': [] should be non-empty"),
    ],
)
def test_negative_zero_and_fractional_counts_are_rejected(
    tmp_path: Path, section: str, values: dict, expected: str
) -> None:
    data = _with(section, **values)
    if section == "sweep":
        for key in values:
            data["fixed"].pop(key, None)

    assert expected in _load_error(tmp_path, data)


def test_negative_count_message_says_what_the_key_is(tmp_path: Path) -> None:
    message = _load_error(tmp_path, _with("fixed", num_gpus=-8))

    expected = (
        "\n  key 'fixed.num_gpus': -8 is less than the minimum of 1 (GPUs in the job, 1 to "
        "2^20 = 1,048,576.)\n"
    )
    assert expected in message + "\n"


@pytest.mark.parametrize(
    ("data", "key", "allowed"),
    [
        ({**BASE, "sweeps": {}}, "sweeps", "description, fixed, sweep, derive, filters"),
        (_with("fixed", num_gpu=8), "fixed.num_gpu", "model, layers, hidden"),
        (_with("filters", fits_mem=True), "filters.fits_mem", "drop_invalid, fits_memory"),
    ],
)
def test_unknown_key_is_named_with_the_allowed_keys(
    tmp_path: Path, data: dict, key: str, allowed: str
) -> None:
    message = _load_error(tmp_path, data)

    assert f"key '{key}': unknown key; allowed: {allowed}" in message


def test_a_choice_lists_the_allowed_values(tmp_path: Path) -> None:
    message = _load_error(tmp_path, _with("fixed", sharding="fsdp2"))

    assert "key 'fixed.sharding': 'fsdp2' is not allowed; allowed: ddp, zero1, zero2" in message


def test_micro_batch_accepts_auto_and_explains_it(tmp_path: Path) -> None:
    assert load_study(_write(tmp_path, _with("fixed", micro_batch="auto")), schema=SCHEMA, **NAMES)

    message = _load_error(tmp_path, _with("fixed", micro_batch="max"))

    assert "key 'fixed.micro_batch': 'max' is not allowed (Sequences per GPU" in message
    assert '"auto"' in message


def test_every_problem_is_listed(tmp_path: Path) -> None:
    data = _with("fixed", num_gpus=-8, sharding="fsdp2")
    del data["sweep"]["num_gpus"]

    message = _load_error(tmp_path, data)

    assert "invalid study:\n" in message
    assert "key 'fixed.num_gpus'" in message and "key 'fixed.sharding'" in message


def test_schema_and_catalogue_problems_are_listed_together(tmp_path: Path) -> None:
    """User trial item 2: a study with an unknown GPU and a bad sharding showed only the
    sharding error; the catalogue check ran only once the schema passed."""
    data = _with("fixed", gpu="h300", sharding="fsdp3")
    data["sweep"]["model"] = ["llama2-7b", "llama9-1t"]
    del data["fixed"]["model"]

    message = _load_error(tmp_path, data)

    assert "key 'fixed.sharding': 'fsdp3' is not allowed; allowed: ddp" in message
    assert "key 'fixed.gpu': unknown GPU 'h300'; valid: a100-sxm-40gb" in message
    assert "key 'sweep.model[1]': unknown model 'llama9-1t'; valid:" in message


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda d: d["sweep"].pop("tp"),
            "missing configuration column(s) tp: give them under 'fixed' or 'sweep'",
        ),
        (
            lambda d: d["fixed"].update(tp=1),
            "key 'sweep.tp': also given under 'fixed'; give each column in one place",
        ),
        (
            lambda d: d.update(derive={"global_batch_tokens": 1048576}),
            "key 'derive.global_batch_tokens': derives global_batch, which is also given under "
            "'fixed'",
        ),
        (
            lambda d: d["fixed"].pop("model"),
            "key 'fixed.model': give a model catalogue key, or all of layers, hidden",
        ),
    ],
    ids=["missing", "twice", "derived-and-given", "no-model"],
)
def test_incomplete_or_contradictory_studies_are_rejected(
    tmp_path: Path, change, expected: str
) -> None:
    data = yaml.safe_load(yaml.safe_dump(BASE))
    data["sweep"].setdefault("tp", [1, 2])
    change(data)

    assert expected in _load_error(tmp_path, data)


def test_a_missing_file_is_named(tmp_path: Path) -> None:
    with pytest.raises(InputFileError, match=r"absent\.yaml: cannot read"):
        load_study(tmp_path / "absent.yaml", schema=SCHEMA, **NAMES)


# --------------------------------------------------------------------------------------------
# Expansion


def test_grid_is_the_cartesian_product_with_the_last_axis_fastest() -> None:
    configurations, rejects = expand_study(_study(), **SHIPPED)

    assert list(zip(configurations["num_gpus"], configurations["tp"], strict=True)) == [
        (8, 1), (8, 2), (16, 1), (16, 2),
    ]  # fmt: skip
    assert rejects.empty
    assert (configurations["model"] == "llama2-7b").all()
    assert str(configurations["num_gpus"].dtype) == "Int64"


def test_auto_micro_batch_is_null_in_the_table() -> None:
    fixed = {**BASE["fixed"], "micro_batch": "auto"}

    configurations, _ = expand_study(_study(fixed=fixed), **SHIPPED)

    assert configurations["micro_batch"].isna().all()


def test_derive_global_batch_from_tokens_drops_rows_that_do_not_divide() -> None:
    fixed = {k: v for k, v in BASE["fixed"].items() if k not in ("global_batch", "seq_len")}
    study = _study(
        fixed={**fixed, "num_gpus": 8, "tp": 1},
        sweep={"seq_len": [4096, 3000]},
        derive={"global_batch_tokens": 1_048_576},
    )

    configurations, rejects = expand_study(study, **SHIPPED)

    assert configurations["global_batch"].tolist() == [256]  # 1,048,576 / 4,096
    assert rejects["row"].tolist() == [1]
    assert rejects["column"].tolist() == ["derive.global_batch_tokens"]
    assert rejects["reason"].tolist() == [
        "global_batch_tokens 1048576 is not divisible by seq_len 3000"
    ]


def test_derive_global_batch_per_data_parallel_rank() -> None:
    fixed = {k: v for k, v in BASE["fixed"].items() if k != "global_batch"}
    study = _study(fixed=fixed, derive={"sequences_per_dp_rank": 4})

    configurations, _ = expand_study(study, **SHIPPED)

    # dp = num_gpus / tp: (8,1) -> 8, (8,2) -> 4, (16,1) -> 16, (16,2) -> 8
    assert configurations["global_batch"].tolist() == [32, 16, 64, 32]


def test_filters_drop_rows_with_their_reason() -> None:
    sweep = {"num_gpus": [16], "tp": [1, 2, 4, 16]}
    study = _study(sweep=sweep, filters=Filters(max_model_parallel=8, max_tp_per_node=True))

    configurations, rejects = expand_study(study, **SHIPPED)

    assert configurations["tp"].tolist() == [1, 2, 4]
    assert rejects["row"].tolist() == [3, 3]
    assert rejects["reason"].tolist() == [
        "tp·pp·cp = 16·1·1 = 16 exceeds max_model_parallel 8",
        "tp 16 exceeds the 8 GPUs per node (tensor parallelism would span nodes)",
    ]


def test_max_tp_per_node_uses_the_rows_gpus_per_node() -> None:
    fixed = {**BASE["fixed"], "gpus_per_node": 4, "num_gpus": 16}
    study = _study(fixed=fixed, sweep={"tp": [4, 8]}, filters=Filters(max_tp_per_node=True))

    configurations, rejects = expand_study(study, **SHIPPED)

    assert configurations["tp"].tolist() == [4]
    assert rejects["reason"].tolist() == [
        "tp 8 exceeds the 4 GPUs per node (tensor parallelism would span nodes)"
    ]


def test_rows_the_validator_rejects_go_to_rejects() -> None:
    study = _study(sweep={"num_gpus": [8], "tp": [1, 3]})

    configurations, rejects = expand_study(study, **SHIPPED)

    assert configurations["tp"].tolist() == [1]
    assert rejects[["row", "column"]].to_numpy().tolist() == [[1, "tp"]]
    assert rejects["reason"].iloc[0] == "tp 3 does not divide heads 32"
    assert rejects["tp"].iloc[0] == 3  # the rejected row's own values are kept


def test_with_drop_invalid_false_an_invalid_row_fails() -> None:
    study = _study(sweep={"num_gpus": [8], "tp": [1, 3]}, filters=Filters(drop_invalid=False))

    with pytest.raises(ConfigurationError, match=r"row 1, column 'tp': tp 3 does not divide"):
        expand_study(study, **SHIPPED)


def test_filtered_rows_are_not_errors_with_drop_invalid_false() -> None:
    study = _study(filters=Filters(drop_invalid=False, max_model_parallel=1))

    configurations, rejects = expand_study(study, **SHIPPED)

    assert configurations["tp"].tolist() == [1, 1]
    assert len(rejects) == 2


def test_non_finite_numbers_are_rejected_at_load(tmp_path: Path) -> None:
    data = _with("fixed", nic_gbit_per_s_per_gpu=float("inf"))
    data["sweep"]["num_gpus"] = [8, float("nan")]

    message = _load_error(tmp_path, data)

    assert "key 'fixed.nic_gbit_per_s_per_gpu': inf is not a finite positive number" in message
    assert "key 'sweep.num_gpus[1]': nan is not a finite positive number" in message


def test_a_yaml_inf_is_rejected_at_load(tmp_path: Path) -> None:
    path = _write(tmp_path, BASE)
    path.write_text(
        path.read_text().replace("fixed:\n", "fixed:\n  nic_gbit_per_s_per_gpu: .inf\n")
    )

    with pytest.raises(
        InputFileError, match=r"nic_gbit_per_s_per_gpu': inf is not a finite positive"
    ):
        load_study(path, schema=SCHEMA, **NAMES)


# --------------------------------------------------------------------------------------------
# Streaming expansion: blocks, zero-row studies, warnings, chunk files


def _ddp(models: list[str], **filters: object) -> Study:
    fixed = {k: v for k, v in BASE["fixed"].items() if k != "model"}
    return _study(
        path="config/studies/x.yaml",
        fixed={**fixed, "num_gpus": 8, "tp": 1, "sharding": "ddp"},
        sweep={"model": models},
        filters=Filters(**filters),
    )


def test_grid_blocks_are_the_cross_product_in_order() -> None:
    sweep = {"num_gpus": [8, 16, 32], "tp": [1, 2], "pp": [1, 2, 4], "seq_len": [2048, 4096]}
    fixed = {k: v for k, v in BASE["fixed"].items() if k not in sweep}
    study = _study(fixed=fixed, sweep=sweep)

    blocks = list(grid_blocks(study, block_rows=5))
    grid = pd.concat([block for _, block in blocks], ignore_index=True)

    assert [first for first, _ in blocks] == list(range(0, 36, 5))
    assert all(len(block) <= 5 for _, block in blocks)
    expected = list(itertools.product(*sweep.values()))
    assert list(grid[list(sweep)].itertuples(index=False, name=None)) == expected
    assert (grid["model"] == "llama2-7b").all()
    whole, _ = expand_study(study, block_rows=7, **SHIPPED)
    at_once, _ = expand_study(study, block_rows=1000, **SHIPPED)
    pd.testing.assert_frame_equal(whole, at_once)


def test_a_million_row_grid_streams_in_bounded_blocks() -> None:
    sweep = {
        "num_gpus": [8 * 2**i for i in range(10)], "global_batch": [64 * 2**i for i in range(10)],
        "micro_batch": [1, 2, 4, 8, 16], "tp": [1, 2, 4, 8], "pp": [1, 2, 4, 8, 16],
        "seq_len": [1024 * i for i in range(1, 11)], "recompute": ["none", "selective", "full"],
        "precision": ["bf16", "fp8"], "sharding": ["fsdp", "hsdp"],
    }  # fmt: skip
    fixed = {k: v for k, v in BASE["fixed"].items() if k not in sweep}
    study = _study(fixed=fixed, sweep=sweep)
    assert study.grid_size == 1_200_000
    product = itertools.product(*sweep.values())

    rows = 0
    for first, block in grid_blocks(study, block_rows=1 << 16):
        assert first == rows and 0 < len(block) <= 1 << 16
        head = block[list(sweep)].head(3).itertuples(index=False, name=None)
        assert list(head) == list(itertools.islice(product, 3))  # spot check each block
        product = itertools.islice(product, len(block) - 3, None)
        rows += len(block)
    assert rows == study.grid_size


def test_a_study_left_with_no_rows_names_the_file_and_the_filter() -> None:
    study = _ddp(["llama2-70b", "llama2-13b"], fits_memory=True)

    with pytest.raises(InputFileError) as caught:
        expand_study(study, **SHIPPED)

    message = str(caught.value)
    assert message.startswith("config/studies/x.yaml: the study has no rows left: every one of")
    assert "the 2 grid rows was removed: 2 by filter 'fits_memory'" in message
    assert "GiB per GPU does not fit in the usable memory of h100-sxm-80gb" in message


def test_no_rows_left_from_several_filters_lists_each() -> None:
    study = _study(sweep={"num_gpus": [8], "tp": [3, 16]}, filters=Filters(max_model_parallel=8))

    with pytest.raises(InputFileError) as caught:
        expand_study(study, **SHIPPED)

    message = str(caught.value)
    assert "every one of the 2 grid rows was removed: " in message
    assert "1 by the validator ('tp') (e.g. tp 3 does not divide heads 32)" in message
    assert "1 by filter 'max_model_parallel' (e.g. tp·pp·cp = 16·1·1 = 16 exceeds" in message


def test_no_rows_left_writes_nothing(tmp_path: Path) -> None:
    study = _ddp(["llama2-70b"], fits_memory=True)
    out = tmp_path / "x"

    with pytest.raises(InputFileError, match="filter 'fits_memory'"):
        write_study_configurations(
            study, directory=out / "configurations", rejects=out / "rejects.parquet",
            counts=out / "chunk_counts.json", rows_per_job=2, **SHIPPED,
        )  # fmt: skip

    assert not out.exists() or not list(out.iterdir())


def test_losing_more_than_half_the_rows_warns_with_the_counts(tmp_path: Path) -> None:
    study = _ddp(["llama2-1b", "llama2-70b", "llama2-13b"], fits_memory=True)
    out = tmp_path / "x"

    summary, warning = write_study_configurations(
        study, directory=out / "configurations", rejects=out / "rejects.parquet",
        counts=out / "chunk_counts.json", rows_per_job=2, **SHIPPED,
    )  # fmt: skip

    assert summary.kept_rows == 1
    assert warning is not None
    assert warning.startswith("warning: config/studies/x.yaml: 2 of 3 grid rows (66.7 %) were")
    assert "2 by filter 'fits_memory'" in warning
    rejects = pd.read_parquet(out / "rejects.parquet")
    assert rejects["model"].tolist() == ["llama2-70b", "llama2-13b"]
    assert set(rejects["column"]) == {"filters.fits_memory"}


def test_losing_half_or_fewer_rows_does_not_warn(tmp_path: Path) -> None:
    study = _ddp(["llama2-1b", "llama2-70b"], fits_memory=True)
    out = tmp_path / "x"

    _, warning = write_study_configurations(
        study, directory=out / "configurations", rejects=out / "rejects.parquet",
        counts=out / "chunk_counts.json", rows_per_job=2, **SHIPPED,
    )  # fmt: skip

    assert warning is None


@pytest.mark.parametrize(("rows_per_job", "block_rows"), [(1, 1000), (3, 2), (4, 5), (100, 3)])
def test_chunk_files_hold_rows_per_job_surviving_rows_in_grid_order(
    tmp_path: Path, rows_per_job: int, block_rows: int
) -> None:
    sweep = {"num_gpus": [8, 16, 32, 64], "tp": [1, 2, 4]}
    study = _study(sweep=sweep, filters=Filters(max_model_parallel=2))
    out = tmp_path / "x"

    summary, _ = write_study_configurations(
        study, directory=out / "configurations", rejects=out / "rejects.parquet",
        counts=out / "chunk_counts.json", rows_per_job=rows_per_job, block_rows=block_rows,
        **SHIPPED,
    )  # fmt: skip

    counts = json.loads((out / "chunk_counts.json").read_text())
    expected, expected_rejects = expand_study(study, **SHIPPED)
    assert counts["rows"] == summary.kept_rows == 8 and counts["grid_rows"] == 12
    assert counts["chunks"] == chunk_count(8, rows_per_job)  # from the surviving rows
    assert counts["dropped"] == {"filters.max_model_parallel": 4}
    files = [out / "configurations" / f"{i}.parquet" for i in range(counts["chunks"])]
    assert sorted(p.name for p in (out / "configurations").iterdir()) == sorted(
        p.name for p in files
    )
    parts = [pd.read_parquet(p, dtype_backend="numpy_nullable") for p in files]
    assert all(len(p) == rows_per_job for p in parts[:-1]) and 0 < len(parts[-1]) <= rows_per_job
    pd.testing.assert_frame_equal(pd.concat(parts, ignore_index=True), expected)
    rejects = pd.read_parquet(out / "rejects.parquet", dtype_backend="numpy_nullable")
    pd.testing.assert_frame_equal(rejects, expected_rejects, check_dtype=False)


# --------------------------------------------------------------------------------------------
# Chunks


@pytest.mark.parametrize(
    ("rows", "per_job", "jobs"), [(0, 5, 1), (1, 5, 1), (10, 5, 2), (11, 5, 3)]
)
def test_chunk_count(rows: int, per_job: int, jobs: int) -> None:
    assert chunk_count(rows, per_job) == jobs


def test_chunk_count_needs_a_positive_size() -> None:
    with pytest.raises(ValueError, match="rows_per_job must be at least 1"):
        chunk_count(10, 0)


# --------------------------------------------------------------------------------------------
# Simulation


def test_simulation_resolves_auto_micro_batch_like_the_paper_setup() -> None:
    fixed = {**BASE["fixed"], "micro_batch": "auto"}
    configurations, _ = expand_study(_study(fixed=fixed), **SHIPPED)

    results, dropped = simulate_configurations(configurations, Filters(), **SHIPPED)

    auto = configurations.astype(object).assign(micro_batch="auto")
    expected = predict(resolve_micro_batch(auto, **SHIPPED), **SHIPPED)
    assert results["micro_batch"].tolist() == expected["micro_batch"].tolist()
    np.testing.assert_allclose(results["step_time_s"], expected["step_time_s"])
    assert dropped.empty


def test_fits_memory_moves_rows_that_do_not_fit_to_dropped() -> None:
    # Plain DDP holds every weight, gradient and Adam state on each GPU, about 16 bytes per
    # parameter: ~18 GB for the 1.1B-parameter llama2-1b fits an 80 GB H100, ~1.1 TB for
    # Llama-2 70B does not.
    fixed = {k: v for k, v in BASE["fixed"].items() if k != "model"}
    study = _study(
        fixed={**fixed, "num_gpus": 8, "tp": 1, "sharding": "ddp"},
        sweep={"model": ["llama2-1b", "llama2-70b"]},
    )
    configurations, _ = expand_study(study, **SHIPPED)

    kept, none_dropped = simulate_configurations(configurations, Filters(), **SHIPPED)
    fitting, dropped = simulate_configurations(configurations, Filters(fits_memory=True), **SHIPPED)

    assert kept["fits_memory"].tolist() == [True, False] and none_dropped.empty
    assert fitting["model"].tolist() == ["llama2-1b"]
    assert dropped["model"].tolist() == ["llama2-70b"]
    assert (dropped["mem_gib_per_gpu"] > 80).all()


def test_an_empty_chunk_simulates_to_an_empty_table() -> None:
    results, dropped = simulate_configurations(pd.DataFrame(), Filters(), **SHIPPED)

    assert results.empty and dropped.empty


def test_a_ten_million_row_sweep_that_mostly_filters_out_warns_and_plans_from_survivors(
    tmp_path: Path,
) -> None:
    """User trial item 32: 10^7 grid rows of which 159k survive -> a warning with the counts,
    and simulate jobs planned from the 159k surviving rows (7 at 25,000), not the grid (400)."""
    study = load_study(_write(tmp_path, {**BASE, "rows_per_job": 25_000}), schema=SCHEMA, **NAMES)
    summary = ExpansionSummary(study)
    kept = pd.DataFrame({"num_gpus": range(159_000)})
    rejects = pd.DataFrame({"row": range(9_841_000), "column": "filters.fits_memory",
                            "reason": "predicted 90.0 GiB per GPU does not fit"})  # fmt: skip
    summary.add(10_000_000, kept, rejects)

    warning = summary.check()

    assert warning is not None and warning.startswith(f"warning: {study.path}: ")
    assert "9,841,000 of 10,000,000 grid rows (98.4 %) were removed, 159,000 remain" in warning
    assert "9,841,000 by filter 'fits_memory'" in warning
    assert chunk_count(summary.kept_rows, 25_000) == 7


def test_a_study_may_name_its_calibration_file(tmp_path: Path) -> None:
    import shutil

    from trainscale.paths import data_dir
    from trainscale.study.expand import expand_study
    from trainscale.study.simulate import simulate_configurations

    mine = tmp_path / "mine.yaml"
    shutil.copy(data_dir() / "calibration.yaml", mine)
    key = "  nic_efficiency:\n    value: "
    mine.write_text(mine.read_text().replace(key, key + "0.7 #"))
    data = {"description": "one row", "fixed": {**BASE["fixed"], "num_gpus": 64, "tp": 1},
            "calibration": str(mine)}  # fmt: skip
    study = load_study(_write(tmp_path, data), schema=SCHEMA, **NAMES)
    assert study.calibration == str(mine)
    calibration = load_calibration(study.calibration)
    configurations, _ = expand_study(study, catalogue=CATALOGUE, calibration=calibration)
    results, _ = simulate_configurations(
        configurations, study.filters, catalogue=CATALOGUE, calibration=calibration
    )
    assert (results["calibration_id"] == calibration.calibration_id).all()
    assert calibration.calibration_id != load_calibration().calibration_id


@pytest.mark.parametrize(
    ("value", "message"),
    [("missing.yaml", r"key 'calibration': no such file 'missing.yaml'"),
     ("mine.txt", r"key 'calibration'.*does not match")],
)  # fmt: skip
def test_a_study_calibration_that_does_not_load_is_refused(
    tmp_path: Path, value: str, message: str
) -> None:
    data = {"description": "one row", "fixed": {**BASE["fixed"], "num_gpus": 8, "tp": 1},
            "calibration": value}  # fmt: skip
    with pytest.raises(InputFileError, match=message):
        load_study(_write(tmp_path, data), schema=SCHEMA, **NAMES)

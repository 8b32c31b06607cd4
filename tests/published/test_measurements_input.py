"""Strict reading of the published measurements: a damaged row stops with a precise error.

Each test writes a copy of the real ``data/published/measurements.csv`` with one row damaged and
checks that :func:`trainscale.published.measurements.load_published` names the file, the CSV line,
the column
and the value; well-formed rows that the simulator cannot represent still go to the rejects.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trainscale.errors import InputFileError
from trainscale.paths import data_dir
from trainscale.published.matching import framework_profile
from trainscale.published.measurements import PublishedData, framework_mapping
from trainscale.published.measurements import load_published as _load_published
from trainscale.published.sources import load_sources
from trainscale.sim.catalogue import load_catalogue

REAL = data_dir() / "published" / "measurements.csv"
CATALOGUE = load_catalogue()


def load_published(path: Path | None = None) -> PublishedData:
    """The measurements of ``path`` (default the shipped ones), checked against the shipped
    catalogues."""
    return _load_published(
        path,
        hardware=CATALOGUE.hardware,
        models=CATALOGUE.models,
        frameworks=CATALOGUE.framework_keys,
    )


HEADER, *ROWS = list(csv.reader(REAL.open(newline="")))
COLUMN = {name: i for i, name in enumerate(HEADER)}


def _line_of(predicate) -> int:
    """1-based CSV line of the first row matching ``predicate(record)``."""
    for index, fields in enumerate(ROWS):
        if predicate(dict(zip(HEADER, fields, strict=True))):
            return index + 2
    raise AssertionError("no such row")


def _write(tmp: Path, rows: list[list[str]], raw_line: tuple[int, str] | None = None) -> Path:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER)
    writer.writerows(rows)
    lines = out.getvalue().split("\n")
    if raw_line is not None:
        lines[raw_line[0] - 1] = raw_line[1]
    path = tmp / "measurements.csv"
    path.write_text("\n".join(lines))
    return path


def _damaged(tmp: Path, line: int, column: str, value: str) -> Path:
    rows = [list(r) for r in ROWS]
    rows[line - 2][COLUMN[column]] = value
    return _write(tmp, rows)


SHIPPED = load_sources(
    data_dir() / "published" / "sources.yaml", frameworks=CATALOGUE.framework_keys
)
NARAYANAN = _line_of(lambda r: r["metric"] == "achieved_TFLOPs_per_GPU")
FOUNDRY = _line_of(lambda r: "llm-foundry" in r["source"])
BUSBW = _line_of(lambda r: r["metric"] == "busbw_GBps" and r["value"].replace(".", "").isdigit())
MFU = _line_of(lambda r: r["metric"] == "MFU_pct" and r["value"].isdigit())
POWER_NOTE = _line_of(lambda r: r["metric"] == "power_note")
POWER = _line_of(lambda r: r["metric"] == "power_w_per_gpu_avg" and r["value"].isdigit())
ZHAO = _line_of(lambda r: r["value"].startswith(">1"))


@pytest.mark.parametrize(
    ("line", "column", "value", "allowed"),
    [
        (NARAYANAN, "value", "13x7", "a plain number"),
        (NARAYANAN, "value", "about 140", "a lower bound"),
        (NARAYANAN, "value", "-140", "not negative"),
        (NARAYANAN, "value", "", "a plain number"),
        (NARAYANAN, "value", "48-47", "low-high"),
        (FOUNDRY, "value", "fast", "text only in power_note rows"),
        (FOUNDRY, "layers", "24x", "positive whole number"),
        (FOUNDRY, "tp", "-1", "positive whole number"),
        (FOUNDRY, "seq_len", "2048.5", "positive whole number"),
        (FOUNDRY, "num_gpus", "eight", "'N and M'"),
        (FOUNDRY, "params_b", "-1.3", "positive number of billions"),
        (FOUNDRY, "source", "", "every row needs a source, url and metric"),
        (FOUNDRY, "url", "", "every row needs a source, url and metric"),
        (FOUNDRY, "url", "github.com/x", "https://"),
        (FOUNDRY, "metric", "", "every row needs a source, url and metric"),
        (FOUNDRY, "metric", "tokens_per_s_per_gpu", "tokens_per_s_per_GPU"),
        (NARAYANAN, "value", "400", "at most 312 TFLOP/s"),  # above the A100's dense peak
        (NARAYANAN, "value", "1.35e8", "a plain number"),  # user trial item 29: not accepted
        (BUSBW, "value", "5000", "NVLink bandwidth"),
        (MFU, "value", "140", "at most 100 %"),
        (POWER, "value", "4000", "TDP"),
    ],
)
def test_a_malformed_value_names_file_line_column_value_and_what_is_allowed(
    tmp_path: Path, line: int, column: str, value: str, allowed: str
) -> None:
    path = _damaged(tmp_path, line, column, value)
    with pytest.raises(InputFileError) as caught:
        load_published(path)
    message = str(caught.value)
    assert message.startswith(f"{path}:{line}: ")
    assert f"column '{column}'" in message
    assert repr(value) in message
    assert allowed in message
    assert caught.value.line == line


def test_text_is_allowed_in_power_note_rows_only(tmp_path: Path) -> None:
    published = load_published(_damaged(tmp_path, POWER_NOTE, "value", "any text at all"))
    assert POWER_NOTE in set(published.rejects["csv_row"])


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        ("extra", r"30 fields where the header has 29: broken quoting"),
        ("missing", r"28 fields where the header has 29"),
        ("open quote", r"a quote is not closed|broken CSV quoting"),
    ],
)
def test_broken_quoting_is_caught_record_by_record(
    tmp_path: Path, damage: str, expected: str
) -> None:
    line = FOUNDRY + 3
    fields = list(ROWS[line - 2])
    if damage == "extra":
        out = io.StringIO()
        csv.writer(out, lineterminator="").writerow(fields)
        text = out.getvalue() + ", with an unquoted comma"
    elif damage == "missing":
        out = io.StringIO()
        csv.writer(out, lineterminator="").writerow(fields[:-1])
        text = out.getvalue()
    else:
        text = ",".join(fields[:3]) + ',"' + ",".join(fields[3:])
    path = _write(tmp_path, [list(r) for r in ROWS], raw_line=(line, text))
    with pytest.raises(InputFileError, match=expected) as caught:
        load_published(path)
    assert str(caught.value).startswith(f"{path}:{line}: ")


def test_valid_but_unrepresentable_rows_are_rejected_with_the_right_reason() -> None:
    published = load_published()
    reasons = published.rejects.set_index("csv_row")["reason"]
    assert "lower bound" in reasons.loc[ZHAO]
    assert reasons.str.startswith("power anchor:").sum() == 5
    gpu_range = reasons[reasons.str.contains("8 and 128")]
    assert gpu_range.tolist() == [
        "value '33-39' is a range, not one measured number; the source gives a range of GPU "
        "counts (8 and 128), not the GPU count of one run"
    ]
    assert not reasons.str.startswith("mixture-of-experts model").any()


def test_mixture_of_experts_rows_are_normalised_apart_from_the_dense_rows() -> None:
    """The Megatron-Bridge MoE rows are predicted (in ``moe``), never among the dense rows the
    dense parameters are fitted on; their EP and routing come from the notes."""
    published = load_published()
    bridge = published.moe[published.moe["data_file"] == "measurements.csv"]
    assert len(bridge) == 9
    assert set(bridge["model"]) == {"gpt-oss-120b", "qwen3-30b-a3b", "qwen3-235b-a22b",
                                    "deepseek-v3"}  # fmt: skip
    assert not set(bridge["csv_row"]) & set(published.throughput["csv_row"])
    deepseek = bridge[bridge["model"] == "deepseek-v3"].iloc[0]
    assert (deepseek["ep"], deepseek["moe_routing"], deepseek["num_gpus"]) == (64, "balanced", 1024)
    drop = bridge[bridge["model_name"].str.contains("tokendrop")]
    assert (drop["moe_routing"] == "capacity").all() and (drop["capacity_factor"] == 1.0).all()


def test_every_throughput_row_has_a_framework_profile_and_its_source_text() -> None:
    published = load_published()
    rows = published.throughput
    assert set(rows["framework"]) <= set(CATALOGUE.framework_keys)
    assert rows["framework_text"].str.len().min() > 0
    zero3 = rows[rows["framework_text"].str.contains("ZeRO-3")]
    assert len(zero3) == 6 and (zero3["framework"] == "deepspeed").all()
    bridge = rows[rows["citation"].str.contains("Megatron-Bridge")]
    assert len(bridge) == 8 and (bridge["framework"] == "megatron").all()
    mapping = framework_mapping(published)
    assert list(mapping.columns) == ["framework_text", "framework", "rows"]
    assert mapping["rows"].sum() == len(rows)


@pytest.mark.parametrize(
    ("text", "sharding", "profile"),
    [
        ("Megatron-LM PTD-P", "none (DP all-reduce)", "megatron"),
        ("Megatron-LM + DeepSpeed ZeRO-3", "ZeRO-3", "deepspeed"),
        ("Megatron-LM", "ZeRO-3", "deepspeed"),
        ("Megatron-Bridge / Megatron-Core (NeMo 25.11 container)", "DDP (FSDP=0)", "megatron"),
        ("torchtitan (FSDP2/TP/PP/CP)", "FSDP2", "pytorch"),
        ("MosaicML Composer + llm-foundry (PyTorch FSDP, FlashAttention)", "", "pytorch"),
        ("Meta internal PyTorch 4D parallelism + NCCLX", "", "pytorch"),
        ("fairseq", "", "pytorch"),
    ],
)
def test_framework_profile(text: str, sharding: str, profile: str) -> None:
    assert framework_profile(text, sharding, patterns=SHIPPED.frameworks) == profile


def test_an_unknown_framework_is_rejected_with_the_known_profiles(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"framework 'JAX/Pax' is not mapped to a profile; known: "
                                         r"megatron, deepspeed, pytorch"):  # fmt: skip
        framework_profile("JAX/Pax", patterns=SHIPPED.frameworks, profiles=SHIPPED.profiles)
    published = load_published(_damaged(tmp_path, FOUNDRY, "framework", "JAX/Pax"))
    reason = published.rejects.set_index("csv_row").loc[FOUNDRY, "reason"]
    assert reason.startswith("framework 'JAX/Pax' is not mapped to a profile; known:")


def test_overrides_are_set_only_where_a_source_states_them() -> None:
    rows = load_published().throughput.set_index("csv_row")
    bridge = rows[rows["citation"].str.contains("Megatron-Bridge")]
    assert (bridge.loc[bridge["fp8_recipe"].notna(), "fp8_recipe"] == "current").all()
    assert (bridge["precision"] == "fp8").all()
    async_tp = rows[rows["framework_text"].str.startswith("torchtitan")
                    & rows["tp_comm_overlap"].fillna(False).astype(bool)]  # fmt: skip
    assert len(async_tp) == 7
    megatron_2021 = rows[rows["framework_text"] == "Megatron-LM PTD-P"]
    assert (~megatron_2021["overlap_grad_reduce"].astype(bool)).all()
    assert megatron_2021["assumptions"].str.contains("aed2f75e").all()
    foundry = rows[rows["citation"].str.contains("llm-foundry")]
    for name in ("overlap_grad_reduce", "overlap_param_gather", "tp_comm_overlap",
                 "fused_kernels", "shard_granularity", "fp8_recipe"):  # fmt: skip
        assert foundry[name].isna().all(), name


def test_old_stacks_and_compiled_runs_carry_their_documented_behaviours() -> None:
    """Megatron v1 (2019) all-reduces TP outputs synchronously on a DGX-2H; DeepSpeed's ZeRO-3 of
    early 2021 gathers parameters blocking; torchtitan rows that state torch.compile fuse."""
    rows = load_published().throughput
    shoeybi = rows[rows["citation"].str.startswith("Shoeybi")]
    assert len(shoeybi) == 10
    assert (shoeybi["tp_comm_overlap"] == False).all()  # noqa: E712 (object column)
    assert (shoeybi["system"] == "dgx2h-v100").all()
    assert shoeybi["assumptions"].str.contains("mpu/mappings.py").all()
    zero3 = rows[rows["citation"].str.startswith("Narayanan") & (rows["framework"] == "deepspeed")]
    assert len(zero3) == 6
    assert (zero3["overlap_param_gather"] == False).all()  # noqa: E712
    assert zero3["assumptions"].str.contains("v0.3.14").all()
    titan = rows[rows["citation"].str.startswith("torchtitan benchmarks")]
    stated = titan["fused_kernels"].astype(bool)
    assert stated.sum() == 16 and (~stated).sum() == 2
    assert not rows.loc[~rows["citation"].str.startswith("torchtitan benchmarks"),
                        "fused_kernels"].notna().any()  # fmt: skip


def test_torchtitan_pipeline_rows_run_as_torchtitan_defaults_them() -> None:
    """torchtitan@9dec370 splits the local batch into as many micro-batches as pipeline stages
    (--experimental.pipeline_parallel_microbatches default) and keeps FSDP2 unsharded after forward
    under PP: Table 5's local batch 32 on 8 stages is 8 micro-batches of 4, Table 6's 8 of 1."""
    rows = load_published().throughput
    titan = rows[rows["citation"].str.startswith("torchtitan benchmarks") & (rows["pp"] > 1)]
    assert len(titan) == 6
    assert (titan["sharding"] == "zero2").all()
    table5 = titan["table_or_figure"].str.startswith("Table 5")
    assert (titan.loc[table5, "micro_batch"] == 4).all()
    assert (titan.loc[table5, "global_batch"] == 256).all()
    assert (titan.loc[~table5, "micro_batch"] == 1).all()
    assert titan["assumptions"].str.contains("pipeline_parallel_microbatches").all()


def test_the_hardware_a_source_states_is_the_hardware_predicted() -> None:
    """torchtitan's benchmark page states "H100 96GB HBM2e" and "the default 500W power limit":
    those rows run on that part at that limit; no other row has a limit or that GPU."""
    rows = load_published().throughput
    titan = rows["citation"].str.startswith("torchtitan benchmarks")
    assert titan.sum() == 18
    assert (rows.loc[titan, "gpu"] == "h100-sxm-96gb").all()
    assert (rows.loc[titan, "power_limit_w"] == 500.0).all()
    assert (rows.loc[~titan, "gpu"] != "h100-sxm-96gb").all()
    assert (rows.loc[~titan, "power_limit_w"] == 0.0).all()
    assert CATALOGUE.hardware.system_for("h100-sxm-96gb").key == "grand-teton-h100-96gb"
    assert CATALOGUE.hardware.gpus["h100-sxm-96gb"].hbm_bytes_per_s == 2.4e12


# --- property: damage never changes a number silently --------------------------------------

_BASE = load_published()
_NUMERIC = ("layers", "hidden", "heads", "ffn", "vocab", "seq_len", "global_batch_seqs",
            "micro_batch", "gpus_per_node", "tp", "pp", "cp", "num_gpus", "params_b")  # fmt: skip
_GARBAGE = ("13x7", "-3", "abc", "1,5", "2.5e", "?")


def _normalised(published: PublishedData, skip: int) -> dict[str, pd.DataFrame]:
    out = {}
    for name in ("throughput", "collectives", "rejects"):
        frame = getattr(published, name)
        frame = frame[frame["csv_row"] != skip].reset_index(drop=True)
        out[name] = frame.astype(str)
    return out


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    index=st.integers(0, len(ROWS) - 1),
    column=st.sampled_from(("value", *_NUMERIC, "source", "url", "metric", "quote")),
    garbage=st.sampled_from(_GARBAGE),
)
def test_random_damage_is_a_named_error_or_leaves_every_other_row_unchanged(
    tmp_path: Path, index: int, column: str, garbage: str
) -> None:
    line = index + 2
    fields = list(ROWS[index])
    if column == "quote":
        rows = [list(r) for r in ROWS]
        text = ",".join(fields[:5]) + ',"' + ",".join(fields[5:])
        path = _write(tmp_path, rows, raw_line=(line, text))
    else:
        value = "" if column in ("source", "url", "metric") else garbage
        if column in _NUMERIC and not fields[COLUMN[column]] and column != "num_gpus":
            value = garbage  # an empty field becomes garbage, never a plausible number
        path = _damaged(tmp_path, line, column, value)
    try:
        damaged = load_published(path)
    except InputFileError as error:
        assert re.match(rf"{re.escape(str(path))}:\d+: ", str(error))
        assert error.line is not None and error.line >= line - 1
        return
    # No error: the damage must not have changed any other row's normalised result,
    # and the damaged row itself is unchanged or rejected, never a different number.
    before, after = _normalised(_BASE, line), _normalised(damaged, line)
    for name in before:
        pd.testing.assert_frame_equal(before[name], after[name])
    rows = damaged.throughput.set_index("csv_row")
    if line in rows.index:
        original = _BASE.throughput.set_index("csv_row").loc[line]
        assert rows.loc[line, "published_value"] == original["published_value"]


def _sources_with(tmp: Path, edit: str, into: str) -> Path:
    """The shipped sources.yaml with ``edit`` inserted before the line ``into``."""
    text = (data_dir() / "published" / "sources.yaml").read_text(encoding="utf-8")
    assert into in text
    path = tmp / "sources.yaml"
    path.write_text(text.replace(into, edit + into, 1), encoding="utf-8")
    return path


def test_a_new_framework_wording_is_a_sources_yaml_entry(tmp_path: Path) -> None:
    """JAX/Pax rows are rejected with the shipped rules; one ``frameworks`` entry maps them."""
    entry = "- pattern: '\\bpax\\b'\n  profile: megatron\n  describes: Pax\n"
    sources = load_sources(
        _sources_with(tmp_path, entry, "- pattern: 'torchtitan"),
        frameworks=CATALOGUE.framework_keys,
    )
    assert framework_profile("JAX/Pax", patterns=sources.frameworks) == "megatron"
    damaged = _damaged(tmp_path, FOUNDRY, "framework", "JAX/Pax")
    published = _load_published(
        damaged,
        hardware=CATALOGUE.hardware,
        models=CATALOGUE.models,
        frameworks=CATALOGUE.framework_keys,
        sources=sources,
    )
    row = published.throughput.set_index("csv_row").loc[FOUNDRY]
    assert row["framework"] == "megatron" and row["framework_text"] == "JAX/Pax"


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("- pattern: pax\n  profile: jax\n  describes: Pax\n",
         r"frameworks\[2\]\.profile: 'jax' is not a framework profile; allowed: megatron, "
         r"deepspeed, pytorch"),
        ("- pattern: 'pax('\n  profile: pytorch\n  describes: Pax\n",
         r"frameworks\[2\]\.pattern: 'pax\(' is not a regular expression"),
    ],
)  # fmt: skip
def test_a_bad_framework_entry_is_an_error_naming_it(
    tmp_path: Path, entry: str, message: str
) -> None:
    with pytest.raises(InputFileError, match=message):
        load_sources(
            _sources_with(tmp_path, entry, "- pattern: 'torchtitan"),
            frameworks=CATALOGUE.framework_keys,
        )

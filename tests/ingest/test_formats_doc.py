"""docs/ingest/run-manifest.md documents every key of the run schema; docs/ingest/formats.md
every log kind, with example lines that the parsers read."""

from __future__ import annotations

import re
from pathlib import Path

from trainscale.io.yaml import load_yaml

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "workflow" / "schemas" / "run.schema.yaml"
DOCS = REPO / "docs" / "ingest"


def _keys(node: dict, defs: dict, prefix: str = "") -> list[str]:
    """Every key path of the schema: ``cluster.nodes``, ``logs[].kind``, ``jobs.<job>.x``;
    the configuration ($ref) once, under ``configuration.``."""
    out = []
    for key, sub in node.get("properties", {}).items():
        path = prefix + key
        out.append(path)
        if "$ref" in sub:
            if not prefix.startswith("jobs."):
                out += _keys(defs[sub["$ref"].rsplit("/", 1)[-1]], defs, path + ".")
            continue
        extra = sub.get("additionalProperties")
        if isinstance(extra, dict) and "properties" in extra:
            out += _keys(extra, defs, path + ".<job>.")
        out += _keys(sub, defs, path + ".")
        if "properties" in sub.get("items", {}):
            out += _keys(sub["items"], defs, path + "[].")
    return out


def _documented() -> set[str]:
    text = (DOCS / "run-manifest.md").read_text()
    return set(re.findall(r"^\| `([^`]+)` \|", text, flags=re.MULTILINE))


def test_every_schema_key_is_documented() -> None:
    schema = load_yaml(SCHEMA)
    keys = _keys(schema, schema["$defs"])
    assert len(keys) > 70  # the walk reaches the nested keys
    missing = [k for k in keys if k not in _documented()]
    assert not missing, f"run.schema.yaml keys missing from docs/ingest/run-manifest.md: {missing}"


def test_no_documented_key_is_stale() -> None:
    schema = load_yaml(SCHEMA)
    stale = _documented() - set(_keys(schema, schema["$defs"]))
    assert not stale, f"documented but not in run.schema.yaml: {sorted(stale)}"


def test_every_log_kind_has_a_section_and_its_example_source_exists() -> None:
    schema = load_yaml(SCHEMA)
    kinds = schema["properties"]["logs"]["items"]["properties"]["kind"]["enum"]
    text = (DOCS / "formats.md").read_text()
    for kind in kinds:
        assert f"| `{kind}` |" in text, kind
    cited = set(re.findall(r"`((?:data|tests)/[\w./-]+\.\w+)`", text))
    assert len(cited) >= 6
    for path in cited:
        assert (REPO / path).is_file(), path


def _example(heading: str) -> str:
    """The first fenced block after ``## heading`` in formats.md."""
    text = (DOCS / "formats.md").read_text()
    section = text.split(f"\n## {heading}\n", 1)[1]
    return section.split("```\n", 2)[1]


def test_the_example_lines_are_read_by_their_parsers(tmp_path: Path) -> None:
    from trainscale.ingest.nccltests import parse_nccl_tests
    from trainscale.ingest.power_dcgmi import parse_dcgmi_dmon
    from trainscale.ingest.power_smi import parse_nvidia_smi_csv
    from trainscale.ingest.steplog import parse_step_log

    def write(name: str, heading: str) -> Path:
        path = tmp_path / name
        path.write_text(_example(heading))
        return path

    titan = parse_step_log(write("titan.log", "torchtitan"), "torchtitan")
    assert (titan.skipped_lines, titan.steps["tokens_per_s_per_gpu"].tolist()) == (0, [1230.0])
    megatron = parse_step_log(write("megatron.log", "Megatron-LM and forks"), "megatron")
    assert megatron.skipped_lines == 0
    assert megatron.steps["step_time_s"].tolist() == [1.2345]  # ms read as ms
    smi = parse_nvidia_smi_csv(write("smi.csv", "nvidia-smi CSV"))
    assert smi.samples["power_w"].tolist() == [557.69]
    dcgm = parse_dcgmi_dmon(
        write("dmon.txt", "DCGM (`dcgmi dmon`)"), start_time="2025-01-01 12:00:00"
    )
    assert dcgm.samples["power_w"].tolist() == [120.5]
    assert dcgm.samples["total_energy_j"].tolist() == [1234.567]  # mJ → J
    nccl = parse_nccl_tests(write("nccl.log", "nccl-tests"), collective="all_reduce_perf")
    assert nccl.results["busbw_gbytes_per_s"].tolist() == [89.51]

# Start-up checks, study bookkeeping and input functions (included first by the Snakefile).
#
# Everything here runs when the workflow is parsed, before any job starts: the config is checked
# against workflow/schemas/config.schema.yaml, the catalogues against their schemas
# (workflow/schemas/{hardware,models,frameworks,nccl}.schema.yaml), and every study listed in the
# config against workflow/schemas/study.schema.yaml and the catalogues, so an invalid value stops
# the run with a message naming the file, the key and what is allowed. Parsing stays fast: a
# study is read and checked, not expanded; it is expanded by the checkpoint
# study_configurations, whose chunk count plans the simulate jobs (rules/simulate.smk).
import json
import os
import re
import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from trainscale.errors import TrainscaleError
from trainscale.figures import FIGURES
from trainscale.figures.per_study import STUDY_FIGURES
from trainscale.sim.catalogue import load_catalogue
from trainscale.study.load import load_study
from trainscale.study.report import report_spec
from trainscale.study.scale import size_note
from trainscale.tables import TABLES
from trainscale.io.yaml import load_yaml

# Snakemake loads config files with its own YAML loader, where a key given twice silently keeps
# its last value: read each config file again with the project's loader, which rejects a
# duplicate key naming the file and both lines.
for _configfile in workflow.configfiles or ["config/config.yaml"]:
    if Path(_configfile).is_file():
        try:
            load_yaml(Path(_configfile))
        except TrainscaleError as error:
            raise WorkflowError(f"invalid config: {error}") from None

validate(config, "../workflow/schemas/config.schema.yaml")

# Figure and table names must be known to the registries (trainscale.figures.FIGURES,
# trainscale.tables.TABLES), and every listed study must be valid: each problem is collected
# and all of them stop the run here together, naming the file, the key and what is allowed (an
# unknown name lists the known ones, instead of a MissingInputException in rule all).
_problems = []
for _kind, _registry in (("figure", FIGURES), ("table", TABLES)):
    _unknown = [name for name in config[f"{_kind}s"] if name not in _registry]
    if _unknown:
        _problems.append(
            f"invalid config: unknown {_kind}(s) "
            + ", ".join(repr(name) for name in _unknown)
            + f" under '{_kind}s'; known: "
            + ", ".join(_registry)
        )

# A listed figure or table that reads a study's simulated table (results/sim/<study>.parquet,
# trainscale.report.registry.study_input) needs that study listed too: otherwise it is a named
# problem here (not a KeyError in a later rule), saying which study to list or which output to
# leave out.
_needs = {}
for _kind, _registry in (("figure", FIGURES), ("table", TABLES)):
    for _name in config[f"{_kind}s"]:
        for _spec in _registry[_name].inputs.values() if _name in _registry else ():
            _study = _spec.file.removeprefix("sim/")
            if _spec.file.startswith("sim/") and _study not in config["studies"]:
                _needs.setdefault(_study, []).append(f"{_kind} '{_name}'")
for _study, _outputs in _needs.items():
    _problems.append(
        f"invalid config: {', '.join(_outputs)} read(s) the study '{_study}' "
        f"(results/sim/{_study}.parquet), which is not listed under 'studies': list it there, "
        "or leave what reads it out of 'figures' and 'tables' (--config 'figures=[...]')"
    )

# Catalogues are inputs. Each rule declares, as named inputs, exactly the catalogue files and
# calibration its script reads (catalogue_inputs below), and the script loads them from
# snakemake.input and passes them down: the library never reads a catalogue on its own. Editing
# one reruns exactly the jobs that read it. The files are located from the workflow, not the
# working directory (--directory). TRAINSCALE_DATA (inherited by local and SLURM jobs) points at
# the same folder for the one caller that still loads the shipped catalogues itself: the
# `trainscale bench` harness (rule bench_run, which declares the files it reads).
DATA_DIR = Path(
    os.environ.setdefault("TRAINSCALE_DATA", str(Path(workflow.basedir, "data")))
)
#: Catalogue file by name (trainscale.sim.catalogue.CATALOGUE_FILES).
CATALOGUE_FILES = {
    name: str(DATA_DIR / f"{name}.yaml")
    for name in ("hardware", "models", "nccl", "frameworks")
}
CALIBRATION = str(DATA_DIR / "calibration.yaml")
# The JSON Schemas the scripts check inputs against are inputs too: TRAINSCALE_SCHEMAS (read by
# trainscale.paths.schema_file, inherited by local and SLURM jobs) points the library at the
# workflow's own workflow/schemas/, and the rules declare the files they read from there.
SCHEMA_DIR = Path(
    os.environ.setdefault(
        "TRAINSCALE_SCHEMAS", str(Path(workflow.basedir, "workflow", "schemas"))
    )
)


def schema_input(name):
    """The JSON Schema <name>.schema.yaml a rule's script reads (trainscale.paths.schema_file)."""
    return str(SCHEMA_DIR / f"{name}.schema.yaml")


STUDY_SCHEMA = schema_input("study")
#: The published CSV's per-source rules and power anchor: the sources.yaml beside the CSV, else
#: the shipped one (trainscale.published.measurements.load_published), and its JSON Schema.
PUBLISHED_SOURCES = {
    "sources": (
        str(Path(config["published"]).with_name("sources.yaml"))
        if Path(config["published"]).with_name("sources.yaml").is_file()
        else str(DATA_DIR / "published" / "sources.yaml")
    ),
    "sources_schema": schema_input("sources"),
}
#: The published mixture-of-experts runs beside the CSV and their rules, where there are any
#: (trainscale.published.moe; load_published reads them into PublishedData.moe).
PUBLISHED_SOURCES.update(
    {
        key: str(Path(config["published"]).with_name(name))
        for key, name in (
            ("moe_measurements", "moe-measurements.csv"),
            ("moe_sources", "moe-sources.yaml"),
        )
        if Path(config["published"]).with_name(name).is_file()
    }
)


def catalogue_inputs(*names):
    """Named inputs {name: file, name_schema: its JSON Schema} of the catalogue files a rule's
    script reads, e.g. `**catalogue_inputs("hardware", "models")`; the script loads
    snakemake.input.<name>, checked against the <name>_schema file.
    """
    unknown = [name for name in names if name not in CATALOGUE_FILES]
    if unknown or not names:
        raise WorkflowError(
            f"catalogue_inputs: unknown catalogue(s) {', '.join(unknown) or '(none given)'}; "
            f"known: {', '.join(CATALOGUE_FILES)}"
        )
    files = {name: CATALOGUE_FILES[name] for name in names}
    return files | {f"{name}_schema": schema_input(name) for name in names}


try:
    # Checked against their schemas here, so a bad catalogue value stops the run at start-up.
    CATALOGUE = load_catalogue(CATALOGUE_FILES)
except TrainscaleError as error:
    raise WorkflowError(f"invalid catalogue: {error}") from None

STUDIES = {}
# What each study's per-study outputs show (rules/studies.smk), checked here too.
STUDY_REPORTS = {}
for _name in config["studies"]:
    try:
        STUDIES[_name] = load_study(
            f"config/studies/{_name}.yaml",
            schema=STUDY_SCHEMA,
            hardware=CATALOGUE.hardware,
            models=CATALOGUE.models,
        )
        STUDY_REPORTS[_name] = report_spec(STUDIES[_name])
    except TrainscaleError as error:
        _problems.append(f"invalid study: {error}")
if _problems:
    raise WorkflowError("\n".join(_problems))

#: The {study} wildcard of the per-study rules: exactly the configured studies.
STUDY_NAMES = "|".join(re.escape(name) for name in STUDIES) or "(?!)"


wildcard_constraints:
    study=r"[A-Za-z0-9][A-Za-z0-9_-]*",
    chunk=r"\d+",


def study_calibration(study):
    """The calibration a study is simulated with: its calibration: file; with calibration:
    {measurements: [...]}, the file rule calibrate_study writes from them; else the shipped one.
    """
    return study_own_calibration(study) or CALIBRATION


def study_own_calibration(study):
    """The study's own calibration: its calibration: file (read when the study file is loaded),
    results/calibration/<study>.yaml for calibration: {measurements: [...]}, [] if none.
    """
    if STUDIES[study].calibration_measurements:
        return f"results/calibration/{study}.yaml"
    return STUDIES[study].calibration or []


def study_output_inputs(wildcards):
    """The files every per-study output of study {study} reads (rules/studies.smk, with
    unpack): the GPU and model catalogues, the study's simulated table, its file and schema,
    and its own calibration when it has one.
    """
    study = wildcards.study
    return {
        **catalogue_inputs("hardware", "models"),
        "simulated": f"results/sim/{study}.parquet",
        "study": f"config/studies/{study}.yaml",
        "schema": STUDY_SCHEMA,
        "calibration": study_own_calibration(study),
    }


def study_pilot_table(study):
    """The measured pilot runs a study was calibrated on (rule calibrate_study writes them
    beside its calibration), drawn over the study's scaling figure; [] if it names none.
    """
    if STUDIES[study].calibration_measurements:
        return f"results/calibration/{study}.pilots.parquet"
    return []


def study_measurement_files(study):
    """Every file under the study's calibration: {measurements: [...]} paths (a folder: all the
    files in it, recursively, in name order), so that editing any of them recalibrates.
    """
    files = []
    for path in map(Path, STUDIES[study].calibration_measurements):
        if path.is_dir():
            files += sorted(str(p) for p in path.rglob("*") if p.is_file())
        else:
            files.append(str(path))
    return files


def study_rows_per_job(study):
    """Rows per simulate job of a study: its own rows_per_job, else the config's."""
    return STUDIES[study].rows_per_job or config["rows_per_job"]


# A study that will plan thousands of simulate jobs says so, with an estimated time, before any
# job starts (trainscale.study.scale: rates measured by benchmarks/study_rate.py). Only the main
# Snakemake process prints it, not every job that parses this file again.
if workflow.is_main_process:
    for _name, _study in STUDIES.items():
        try:
            _cores = workflow.cores
        except WorkflowError:  # no --cores (a dry run): estimate for one core
            _cores = None
        _note = size_note(
            _study.path, _study.grid_size, study_rows_per_job(_name), _cores
        )
        if _note:
            print(_note, file=sys.stderr)


# Declared memory against the benchmark max_rss (results/benchmarks/**.tsv) of the default
# workflow (snakemake --cores 2: every job <= 331 MB) and of benchmarks/workflow_scale.py at 10^5,
# 10^6 and 10^7 grid rows (README "Large sweeps"): every declaration covers its job with at least
# 2x headroom; none had to be raised.


def configurations_mem_mb(study):
    """Memory of study_configurations: one block of the grid and one chunk of kept rows (MB).
    Measured max_rss 353 MB at 10^7 grid rows, rows_per_job 100,000 (declared 2,000)."""
    return 1000 + study_rows_per_job(study) // 100


def configurations_runtime(study):
    """Minutes for study_configurations: about 15 s per million grid rows, at least 10."""
    return max(10, STUDIES[study].grid_size // 2_000_000)


def chunk_mem_mb(study):
    """Memory of one simulate job, or of appending one chunk: grows with rows_per_job (MB).
    Measured max_rss 231 MB at 25,000 rows, 386 MB at 100,000 (declared 1,125 and 1,500).
    """
    return 1000 + study_rows_per_job(study) // 200


def get_study_chunks(wildcards):
    """The chunk files of one study, as many as its checkpoint wrote configuration files."""
    counts = checkpoints.study_configurations.get(study=wildcards.study).output.counts
    chunks = json.loads(Path(counts).read_text())["chunks"]
    return expand(
        "results/studies/{study}/chunks/{chunk}.parquet",
        study=wildcards.study,
        chunk=range(chunks),
    )


def get_sim_results():
    """One results/sim/<study>.parquet per configured study."""
    return expand("results/sim/{study}.parquet", study=list(STUDIES))


#: What a run folder's name may be: it becomes the {run} wildcard of rule ingest_run, and
#: results/measured/<run>_steps.parquet must not be mistaken for another run's results.
RUN_NAME = r"(?!.*_steps$)[A-Za-z0-9][A-Za-z0-9._-]*"


def discover_runs():
    """The run folders (<runs_dir>/<run>/run.yaml), sorted; a folder whose name cannot be a
    {run} wildcard stops the workflow at start-up, naming it, instead of never being ingested.
    """
    import re

    manifests = sorted(Path(config["runs_dir"]).glob("*/run.yaml"))
    bad = [m.parent for m in manifests if not re.fullmatch(RUN_NAME, m.parent.name)]
    if bad:
        raise WorkflowError(
            "run folder name(s) "
            + ", ".join(repr(str(folder)) for folder in bad)
            + " cannot be ingested: a run folder's name must start with a letter or digit, "
            "contain only letters, digits, '.', '_' and '-' (no spaces), and not end in "
            "'_steps'; rename the folder and its run_id"
        )
    return [manifest.parent.name for manifest in manifests]


RUNS = discover_runs()


def get_measured_results():
    """One results/measured/<run>.parquet per <runs_dir>/<run>/run.yaml; [] when none."""
    return [f"results/measured/{run}.parquet" for run in RUNS]


def get_figure_targets():
    """reports/figures/<name>.{pdf,png,svg} for every name in config["figures"]."""
    return expand(
        "reports/figures/{name}.{ext}",
        name=config["figures"],
        ext=("pdf", "png", "svg"),
    )


def get_table_targets():
    """reports/tables/<name>.{csv,md,tex} for every name in config["tables"]."""
    return expand(
        "reports/tables/{name}.{ext}", name=config["tables"], ext=("csv", "md", "tex")
    )


def get_all_targets(wildcards):
    """Everything `snakemake --cores all` builds (the default target, rule all)."""
    return [
        *get_sim_results(),
        "results/published.parquet",
        "results/validation.parquet",
        "results/dataset",
        *get_figure_targets(),
        *get_table_targets(),
        *get_study_targets(),
    ]


def get_study_targets():
    """reports/studies/<study>/<figure>.{pdf,png,svg} for every per-study figure
    (trainscale.figures.per_study.STUDY_FIGURES), fits.{csv,md,tex} and points.{csv,md,tex}
    for every study."""
    return [
        *expand(
            "reports/studies/{study}/{figure}.{ext}",
            study=list(STUDIES),
            figure=list(STUDY_FIGURES),
            ext=("pdf", "png", "svg"),
        ),
        *expand(
            "reports/studies/{study}/{table}.{ext}",
            study=list(STUDIES),
            table=("fits", "points"),
            ext=("csv", "md", "tex"),
        ),
    ]


def study_figure_inputs(wildcards):
    """The files per-study figure {figure} reads: every per-study output's (study_output_inputs)
    and its entry's inputs in trainscale.figures.per_study.STUDY_FIGURES, by name: the fits table
    (so the fits job runs first), the unplanned grid points, the pilot runs ([] without any).
    """
    study = wildcards.study
    paths = {
        "fits": f"reports/studies/{study}/fits.csv",
        "rejects": f"results/studies/{study}/rejects.parquet",
        "pilots": study_pilot_table(study),
    }
    extra = {key: paths[key] for key in STUDY_FIGURES[wildcards.figure].inputs}
    return study_output_inputs(wildcards) | extra


def study_description(wildcards):
    """The study's description (its file's ``description``), for the report captions."""
    return " ".join(STUDIES[wildcards.study].description.split())


#: The {name} wildcard of the figure and table rules: exactly the registries' names.
FIGURE_NAMES = "|".join(re.escape(name) for name in FIGURES)
TABLE_NAMES = "|".join(re.escape(name) for name in TABLES)
#: The {figure} wildcard of the study_figure rule: the per-study figures' names.
STUDY_FIGURE_NAMES = "|".join(re.escape(name) for name in STUDY_FIGURES)

#: The files figures and tables read, by the names the registries give them
#: (trainscale.report.registry.Input.file); a study's simulated table is "sim/<study>".
PRESENTATION_FILES = {
    "validation": "results/validation.parquet",
    "holdout": "results/holdout.parquet",
    "pilots": "results/pilots.parquet",
    "dataset": "results/dataset",
    "published": config["published"],
    "collectives": "results/collectives.parquet",
    "sim_vs_measured": "results/sim_vs_measured.parquet",
    "paper/claims": "results/paper/claims.parquet",
    "paper/claim_sensitivity": "results/paper/claim_sensitivity.parquet",
    "paper/energy": "results/paper/energy.parquet",
}


def presentation_inputs(output):
    """Named inputs of a figure or table (a trainscale.report.registry.Output): each file its render
    reads, by argument name, then each catalogue file it reads (Output.catalogue_files), by
    catalogue name; workflow/scripts/{figure,table}_render.py loads those and passes them in.
    """
    files = {}
    for key, spec in output.inputs.items():
        if spec.file.startswith("sim/"):
            files[key] = f"results/{spec.file}.parquet"
        else:
            files[key] = PRESENTATION_FILES[spec.file]
        if spec.file == "published":
            files.update({f"{key}_{k}": v for k, v in PUBLISHED_SOURCES.items()})
    if output.catalogue_files():
        files.update(catalogue_inputs(*output.catalogue_files()))
    return files


def figure_inputs(wildcards):
    """The figure rule's inputs: what trainscale.figures.FIGURES says figure {name} reads."""
    return presentation_inputs(FIGURES[wildcards.name])


def table_inputs(wildcards):
    """The table rule's inputs: what trainscale.tables.TABLES says table {name} reads."""
    return presentation_inputs(TABLES[wildcards.name])


def report_caption(kind):
    """The figure or table rule's caption param: the caption of output {name} in the report,
    the text of workflow/report/<kind>s/<name>.rst (printed by the rule's one caption file,
    workflow/report/<kind>.rst)."""

    def caption(wildcards):
        path = Path(
            workflow.basedir, "workflow", "report", f"{kind}s", f"{wildcards.name}.rst"
        )
        return path.read_text()

    return caption

# Start-up checks, study bookkeeping and input functions (included first by the Snakefile).
#
# Everything here runs when the workflow is parsed, before any job starts: the config is checked
# against workflow/schemas/config.schema.yaml, and every study listed in it against
# workflow/schemas/study.schema.yaml and the catalogues, so an invalid value stops the run with a
# message naming the file, the key and what is allowed. Parsing stays fast: a study is read and
# checked, not expanded (its row count is the product of its sweep lengths).
import os
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

from trainscale.errors import TrainscaleError
from trainscale.study import load_study

validate(config, "../workflow/schemas/config.schema.yaml")

# The catalogues are inputs of the jobs that read them, so editing one reruns those jobs. They
# are located from the workflow, not the working directory (--directory), and the library reads
# the same files (TRAINSCALE_DATA, inherited by local and SLURM jobs).
DATA_DIR = Path(
    os.environ.setdefault("TRAINSCALE_DATA", str(Path(workflow.basedir, "data")))
)
CATALOGUES = [
    str(DATA_DIR / f"{name}.yaml")
    for name in ("hardware", "models", "nccl", "frameworks")
]
CALIBRATION = str(DATA_DIR / "calibration.yaml")
STUDY_SCHEMA = str(Path(workflow.basedir, "workflow", "schemas", "study.schema.yaml"))

try:
    STUDIES = {
        name: load_study(f"config/studies/{name}.yaml", schema=STUDY_SCHEMA)
        for name in config["studies"]
    }
except TrainscaleError as error:
    raise WorkflowError(f"invalid study: {error}") from None


wildcard_constraints:
    study=r"[A-Za-z0-9][A-Za-z0-9_-]*",
    chunk=r"\d+",


def study_jobs(study):
    """Simulate jobs of a study: ceil(grid rows / rows_per_job)."""
    return STUDIES[study].job_count(config["rows_per_job"])


def get_study_chunks(wildcards):
    """The chunk Parquet files that make up one study's results."""
    return expand(
        "results/studies/{study}/chunks/{chunk}.parquet",
        study=wildcards.study,
        chunk=range(study_jobs(wildcards.study)),
    )


def get_sim_results():
    """One results/sim/<study>.parquet per configured study."""
    return expand("results/sim/{study}.parquet", study=list(STUDIES))


def get_measured_results():
    """One results/measured/<run>.parquet per <runs_dir>/<run>/run.yaml; [] when none."""
    manifests = sorted(Path(config["runs_dir"]).glob("*/run.yaml"))
    return [
        f"results/measured/{manifest.parent.name}.parquet" for manifest in manifests
    ]


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
    ]


def figure_outputs(name):
    """The three files of a figure, the PNG marked for the report with its caption."""
    pdf, png, svg = multiext(
        f"reports/figures/{name}", pdf=".pdf", png=".png", svg=".svg"
    )
    png = report(
        png,
        caption=f"../workflow/report/figures/{name}.rst",
        category="Figures",
        labels={"figure": name},
    )
    return [pdf, png, svg]


def table_outputs(name):
    """The three files of a table, the CSV marked for the report with its caption."""
    csv, md, tex = multiext(f"reports/tables/{name}", csv=".csv", md=".md", tex=".tex")
    csv = report(
        csv,
        caption=f"../workflow/report/tables/{name}.rst",
        category="Tables",
        labels={"table": name},
    )
    return [csv, md, tex]

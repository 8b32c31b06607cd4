# Per-study outputs: reports/studies/<study>/<figure>.{pdf,png,svg} for every per-study figure
# (trainscale.figures.per_study.STUDY_FIGURES; today scaling), fits.{csv,md,tex} and
# points.{csv,md,tex} for every study in config["studies"], drawn and written by
# trainscale.figures.per_study, trainscale.tables.study_fits and trainscale.tables.study_points
# from the study's own simulated table (results/sim/<study>.parquet, read as its dataset
# partition reads), so that editing one study reruns only its outputs. What they show (x axis,
# series, facet, metrics) is the study's report: block, or follows from what it sweeps (checked
# at start-up, rules/common.smk). The PNG and the CSV go into the report, captioned with the
# study's description. All read the GPU and model catalogues (the study's names are checked
# against them; the figure's colours and setup note) and, when the study names its own
# calibration: file, that file (checked when the study is loaded).


# Fits first: the figure's legend reads each series' slope from the table.
rule study_fits:
    input:
        unpack(study_output_inputs),
    output:
        csv=report(
            "reports/studies/{study}/fits.csv",
            caption="../workflow/report/studies/fits.rst",
            category="Studies",
            subcategory="{study}",
            labels={"study": "{study}", "output": "fits"},
        ),
        md="reports/studies/{study}/fits.md",
        tex="reports/studies/{study}/fits.tex",
    log:
        "results/logs/study_fits/{study}.log",
    benchmark:
        "results/benchmarks/study_fits/{study}.tsv"
    wildcard_constraints:
        study=STUDY_NAMES,
    conda:
        "../environment.yml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=5,
    params:
        description=study_description,
    script:
        "../workflow/scripts/study_fits.py"


# One rule for every per-study figure (trainscale.figures.per_study.STUDY_FIGURES): a new
# entry there is drawn for every study with no edit here. Its caption in the report is the
# entry's caption, printed by the rule's one caption file (a caption path cannot hold a
# wildcard).
rule study_figure:
    input:
        unpack(study_figure_inputs),
        # the points table its caption and note name (built with the figure, not only by all)
        points="reports/studies/{study}/points.csv",
    output:
        pdf="reports/studies/{study}/{figure}.pdf",
        png=report(
            "reports/studies/{study}/{figure}.png",
            caption="../workflow/report/study_figure.rst",
            category="Studies",
            subcategory="{study}",
            labels={"study": "{study}", "output": "{figure}"},
        ),
        svg="reports/studies/{study}/{figure}.svg",
    log:
        "results/logs/study_figure/{study}/{figure}.log",
    benchmark:
        "results/benchmarks/study_figure/{study}/{figure}.tsv"
    wildcard_constraints:
        study=STUDY_NAMES,
        figure=STUDY_FIGURE_NAMES,
    conda:
        "../environment.yml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=5,
    params:
        description=study_description,
        caption=lambda wildcards: STUDY_FIGURES[wildcards.figure].caption,
    script:
        "../workflow/scripts/study_figure.py"


rule study_points:
    input:
        unpack(study_output_inputs),
        shipped_calibration=CALIBRATION,
        rejects="results/studies/{study}/rejects.parquet",
    output:
        csv=report(
            "reports/studies/{study}/points.csv",
            caption="../workflow/report/studies/points.rst",
            category="Studies",
            subcategory="{study}",
            labels={"study": "{study}", "output": "points"},
        ),
        md="reports/studies/{study}/points.md",
        tex="reports/studies/{study}/points.tex",
    log:
        "results/logs/study_points/{study}.log",
    benchmark:
        "results/benchmarks/study_points/{study}.tsv"
    wildcard_constraints:
        study=STUDY_NAMES,
    conda:
        "../environment.yml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=5,
    params:
        description=study_description,
    script:
        "../workflow/scripts/study_points.py"


# A study's own calibration from its calibration: {measurements: [...]} (CSV/Parquet tables,
# Parquet written by trainscale ingest, run folders such as data/runs/<run>, folders of these):
# the run folders are ingested and the rows calibrated as trainscale calibrate --measurements
# PATH ... -o results/calibration/<study>.yaml does (trainscale.calibrate.user, with the
# catalogues, published measurements and shipped calibration declared here). The study's
# simulate jobs take this file as their calibration. Seconds: the pilot interval model is read
# from the calibration's published_pilot_errors block (measured on the published series only
# where the calibration has none of its own).
rule calibrate_study:
    input:
        **catalogue_inputs("hardware", "models", "frameworks", "nccl"),
        **PUBLISHED_SOURCES,
        run_schema=schema_input("run"),
        csv=config["published"],
        calibration=CALIBRATION,
        measurements=lambda wildcards: study_measurement_files(wildcards.study),
    output:
        calibration="results/calibration/{study}.yaml",
        pilots="results/calibration/{study}.pilots.parquet",
    log:
        "results/logs/calibrate_study/{study}.log",
    benchmark:
        "results/benchmarks/calibrate_study/{study}.tsv"
    conda:
        "../environment.yml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=lambda wildcards, attempt: 20 * attempt,
    params:
        paths=lambda wildcards: list(STUDIES[wildcards.study].calibration_measurements),
    script:
        "../workflow/scripts/calibrate_study.py"

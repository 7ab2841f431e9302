# One rule per figure. Each reads tables only, plus its own module and the shared style: restyling a
# figure reruns that figure alone.
rule fig1a:
    input:
        summary=f"{RESULTS}/summary/runs.csv",
        code=[f"{FIGURE_CODE}/scaling.py", f"{FIGURE_CODE}/style.py"],
    output:
        figure_report("fig1a", "fig1a"),
    params:
        experiment=FIGURE_CONFIG["fig1a"]["experiment"],
        out=figure_prefix,
        dpi=DPI,
    log:
        f"{RESULTS}/logs/figures/fig1a.log",
    conda:
        FIGURE_ENV
    shell:
        "grokslt figure fig1a --summary {input.summary:q} --experiment {params.experiment:q} --dpi {params.dpi} "
        "--out {params.out:q} > {log:q} 2>&1"


rule fig1b:
    input:
        summary=f"{RESULTS}/summary/runs.csv",
        code=[f"{FIGURE_CODE}/scaling.py", f"{FIGURE_CODE}/style.py"],
    output:
        figure_report("fig1b", "fig1b"),
    params:
        experiment=FIGURE_CONFIG["fig1b"]["experiment"],
        out=figure_prefix,
        dpi=DPI,
    log:
        f"{RESULTS}/logs/figures/fig1b.log",
    conda:
        FIGURE_ENV
    shell:
        "grokslt figure fig1b --summary {input.summary:q} --experiment {params.experiment:q} --dpi {params.dpi} "
        "--out {params.out:q} > {log:q} 2>&1"


rule fig2:
    input:
        summary=f"{RESULTS}/summary/runs.csv",
        tables=loss_tables([FIGURE_CONFIG["fig2"]["experiment"], FIGURE_CONFIG["fig2"].get("band_experiment")]
                           if FIGURE_CONFIG["fig2"].get("band_experiment") else [FIGURE_CONFIG["fig2"]["experiment"]]),
        code=[f"{FIGURE_CODE}/trajectory.py", f"{FIGURE_CODE}/style.py"],
    output:
        figure_report("fig2", "fig2"),
    params:
        experiment=FIGURE_CONFIG["fig2"]["experiment"],
        band=["--band-experiment", FIGURE_CONFIG["fig2"]["band_experiment"]]
        if FIGURE_CONFIG["fig2"].get("band_experiment") else [],
        out=figure_prefix,
        dpi=DPI,
    log:
        f"{RESULTS}/logs/figures/fig2.log",
    conda:
        FIGURE_ENV
    shell:
        "grokslt figure fig2 --summary {input.summary:q} --loss-data {input.tables:q} --experiment {params.experiment:q} "
        "{params.band:q} --dpi {params.dpi} --out {params.out:q} > {log:q} 2>&1"


rule trajectories:
    input:
        summary=f"{RESULTS}/summary/runs.csv",
        tables=lambda wildcards: loss_tables([wildcards.experiment]),
        code=[f"{FIGURE_CODE}/trajectory.py", f"{FIGURE_CODE}/style.py"],
    output:
        report(f"{RESULTS}/figures/trajectories_{{experiment}}.png", caption="../report/trajectories.rst",
               category="Figures", subcategory="Trajectories (appendix H.2)"),
        f"{RESULTS}/figures/trajectories_{{experiment}}.pdf",
    params:
        out=figure_prefix,
        dpi=DPI,
    log:
        f"{RESULTS}/logs/figures/trajectories_{{experiment}}.log",
    conda:
        FIGURE_ENV
    shell:
        "grokslt figure trajectories --summary {input.summary:q} --loss-data {input.tables:q} "
        "--experiment {wildcards.experiment:q} --dpi {params.dpi} --out {params.out:q} > {log:q} 2>&1"


rule fig9:
    input:
        summary=f"{RESULTS}/summary/runs.csv",
        code=[f"{FIGURE_CODE}/severity.py", f"{FIGURE_CODE}/style.py"],
    output:
        figure_report("fig9", "fig9"),
    params:
        experiment=FIGURE_CONFIG["fig9"]["experiment"],
        out=figure_prefix,
        dpi=DPI,
    log:
        f"{RESULTS}/logs/figures/fig9.log",
    conda:
        FIGURE_ENV
    shell:
        "grokslt figure fig9 --summary {input.summary:q} --experiment {params.experiment:q} --dpi {params.dpi} "
        "--out {params.out:q} > {log:q} 2>&1"


rule sensitivity_figure:
    input:
        table=f"{RESULTS}/sensitivity/sensitivity.csv",
        code=[f"{FIGURE_CODE}/sensitivity.py", f"{FIGURE_CODE}/style.py"],
    output:
        figure_report("sensitivity", "sensitivity"),
    params:
        out=figure_prefix,
        dpi=DPI,
    log:
        f"{RESULTS}/logs/figures/sensitivity.log",
    conda:
        FIGURE_ENV
    shell:
        "grokslt figure sensitivity --sensitivity {input.table:q} --dpi {params.dpi} --out {params.out:q} > {log:q} 2>&1"


rule theory_vs_measurement:
    input:
        summary=f"{RESULTS}/summary/runs.csv",
        ranks=f"{RESULTS}/theory/rank_checks.csv",
        code=[f"{FIGURE_CODE}/theory.py", f"{FIGURE_CODE}/style.py"],
    output:
        figure_report("theory_vs_measurement", "theory_vs_measurement"),
    params:
        experiments=FIGURE_CONFIG["theory_vs_measurement"]["experiments"],
        out=figure_prefix,
        dpi=DPI,
    log:
        f"{RESULTS}/logs/figures/theory_vs_measurement.log",
    conda:
        FIGURE_ENV
    shell:
        "grokslt figure theory_vs_measurement --summary {input.summary:q} --rank-checks {input.ranks:q} "
        "--experiments {params.experiments:q} --dpi {params.dpi} --out {params.out:q} > {log:q} 2>&1"


rule diagnostics:
    input:
        table=lambda wildcards: f"{run_dir(diagnostics_run())}/loss_data.csv",
        params=lambda wildcards: f"{run_dir(diagnostics_run())}/params.csv",
        traces=lambda wildcards: [path.replace(".csv", ".npz") for path in chunk_files(diagnostics_run(), "llc")],
        code=[f"{FIGURE_CODE}/diagnostics.py", f"{FIGURE_CODE}/style.py"],
    output:
        figure_report("diagnostics", "diagnostics"),
    params:
        checkpoints=FIGURE_CONFIG["diagnostics"]["checkpoints"],
        out=figure_prefix,
        dpi=DPI,
    log:
        f"{RESULTS}/logs/figures/diagnostics.log",
    conda:
        FIGURE_ENV
    shell:
        "grokslt figure diagnostics --loss-data {input.table:q} --traces {input.traces:q} "
        "--checkpoints {params.checkpoints} --dpi {params.dpi} --out {params.out:q} > {log:q} 2>&1"

# Analysis (grokslt.analysis): each run's tables (the Hessian trace and the closed forms at each checkpoint computed
# there), the summary, WAIC, and the tables read across runs (claims, scorecard).
rule theory_tables:
    output:
        formulas=f"{RESULTS}/theory/formulas.csv",
        ranks=f"{RESULTS}/theory/rank_checks.csv",
        single=f"{RESULTS}/theory/single_output.csv",
    log:
        log_file("theory", "tables"),
    benchmark:
        benchmark_file("theory", "tables")
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        sizes=",".join(sorted({f"{c.p}:{c.hidden}" for c in RUNS.values()})),
        grid_p=",".join(map(str, config["theory"]["grid_p"])),
        grid_K=",".join(map(str, config["theory"]["grid_K"])),
        single_d=",".join(map(str, config["theory"]["single_d"])),
        single_K=",".join(map(str, config["theory"]["single_K"])),
        out=lambda wildcards, output: os.path.dirname(output.formulas),
    shell:
        "grokslt theory --out {params.out:q} --sizes {params.sizes} --grid-p {params.grid_p} --grid-K {params.grid_K} "
        "--single-d {params.single_d} --single-K {params.single_K} --threads {threads} > {log:q} 2>&1"


rule run_tables:
    input:
        log=f"{RESULTS}/runs/{{run}}/train_log.csv",
        llc=lambda wildcards: llc_chunks(wildcards.run),
    output:
        params=f"{RESULTS}/runs/{{run}}/params.csv",
        loss=f"{RESULTS}/runs/{{run}}/loss_data.csv",
        summary=f"{RESULTS}/runs/{{run}}/summary.csv",
    log:
        log_file("tables", "{run}"),
    benchmark:
        benchmark_file("tables", "{run}")
    wildcard_constraints:
        run=STAGED_RUNS,
    conda:
        ENV
    threads: THREADS
    resources:
        mem_mb=4000,
        runtime=120,
    params:
        run=lambda wildcards: run_dir(wildcards.run),
        every=lambda wildcards: RUN_LLC[wildcards.run]["every"],
        computed=LAYOUT.tables_args(),
    shell:
        "grokslt tables --id {wildcards.run:q} --run {params.run:q} --llc {input.llc:q} --llc-every {params.every} "
        "{params.computed:q} --threads {threads} --params-out {output.params:q} --loss-out {output.loss:q} > {log:q} 2>&1"


# summary/runs.csv: every run's row (written with its tables) and the experiments it is in. A figure puts together
# the rows of its own runs itself, so that its target builds only what it shows, at no job of its own.
rule summary:
    input:
        rows=[f"{run_dir(run)}/summary.csv" for run in sorted(RUNS)],
    output:
        report(f"{RESULTS}/summary/runs.csv", caption="../report/runs.rst", category="Tables"),
    log:
        log_file("summary", "runs"),
    benchmark:
        benchmark_file("summary", "runs")
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        runs=[run_dir(run) for run in sorted(RUNS)],
        membership=membership_words(MEMBERSHIP),
    shell:
        "grokslt summary --runs {params.runs:q} --experiment {params.membership:q} --out {output:q} > {log:q} 2>&1"


rule waic:
    input:
        f"{RESULTS}/runs/{{run}}/traces",
    output:
        f"{RESULTS}/runs/{{run}}/waic.csv",
    log:
        log_file("waic", "{run}"),
    conda:
        ENV
    threads: 1
    shell:
        "grokslt waic --traces {input:q} --out {output:q} > {log:q} 2>&1"


rule claims:
    input:
        unpack(claims_inputs),
    output:
        report(f"{RESULTS}/claims/claims.csv", caption="../report/claims.rst", category="Tables"),
    log:
        log_file("claims", "claims"),
    benchmark:
        benchmark_file("claims", "claims")
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        sensitivity=lambda wildcards, input: ["--sensitivity", *input.sensitivity] if input.sensitivity else [],
        smoke=["--smoke-test"] if config["smoke_test"] else [],
        waic=lambda wildcards, input: ["--waic", *input.waic, "--traced", *input.traced] if input.waic else [],
    shell:
        "grokslt claims --summary {input.summary:q} --loss-data {input.loss:q} --certified {input.certified:q} "
        "--coefficient {input.coefficient:q} {params.sensitivity:q} {params.smoke:q} {params.waic:q} --out {output:q} "
        "> {log:q} 2>&1"


# `grokslt scorecard`'s table; the rule `scorecard` is the target of its figure
rule scorecard_table:
    input:
        summary=f"{RESULTS}/summary/runs.csv",
        loss=lambda wildcards: [f"{run_dir(run)}/loss_data.csv" for run in sorted(RUNS)],
        reference=[] if config["reference"] == "none" else [REFERENCE],
    output:
        f"{RESULTS}/scorecard/scorecard.csv",
    log:
        log_file("scorecard", "scorecard"),
    benchmark:
        benchmark_file("scorecard", "scorecard")
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        reference=lambda wildcards, input: input.reference[0] if input.reference else "none",
    shell:
        "grokslt scorecard --summary {input.summary:q} --loss-data {input.loss:q} --reference {params.reference:q} "
        "--out {output:q} > {log:q} 2>&1"

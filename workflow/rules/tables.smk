rule run_tables:
    input:
        log=f"{RESULTS}/runs/{{run}}/train_log.csv",
        llc=lambda wildcards: chunk_files(wildcards.run, "llc"),
        hessian=lambda wildcards: chunk_files(wildcards.run, "hessian"),
        theory=f"{RESULTS}/runs/{{run}}/theory.csv",
    output:
        params=f"{RESULTS}/runs/{{run}}/params.csv",
        loss=f"{RESULTS}/runs/{{run}}/loss_data.csv",
    log:
        log_file("tables", "{run}"),
    benchmark:
        benchmark_file("tables", "{run}")
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        run=lambda wildcards: run_dir(wildcards.run),
        every=lambda wildcards: RUN_LLC[wildcards.run]["every"],
    shell:
        "grokslt tables --id {wildcards.run:q} --run {params.run:q} --llc {input.llc:q} --llc-every {params.every} "
        "--hessian {input.hessian:q} --theory {input.theory:q} --params-out {output.params:q} "
        "--loss-out {output.loss:q} > {log:q} 2>&1"


# summary/runs.csv covers every run; summary/FIGURE.csv the runs of one figure's experiments.
rule summary:
    input:
        tables=lambda wildcards: [f"{run_dir(run)}/loss_data.csv" for run in summary_runs(wildcards)],
        params=lambda wildcards: [f"{run_dir(run)}/params.csv" for run in summary_runs(wildcards)],
    output:
        f"{RESULTS}/summary/{{selection}}.csv",
    log:
        log_file("summary", "{selection}"),
    benchmark:
        benchmark_file("summary", "{selection}")
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        runs=lambda wildcards: [run_dir(run) for run in summary_runs(wildcards)],
        membership=summary_membership,
    shell:
        "grokslt summary --runs {params.runs:q} --experiment {params.membership:q} --out {output:q} > {log:q} 2>&1"


rule certify:
    input:
        log=f"{RESULTS}/runs/{{run}}/train_log.csv",
        calibration=certify_calibration,
    output:
        f"{RESULTS}/runs/{{run}}/certified.csv",
    log:
        log_file("certified", "{run}"),
    benchmark:
        benchmark_file("certified", "{run}")
    conda:
        ENV
    threads: THREADS
    resources:
        mem_mb=4000,
        runtime=480,
        gpu=GPUS,
    params:
        run=lambda wildcards: run_dir(wildcards.run),
        args=certify_args(),
        device=DEVICE,
    shell:
        "grokslt llc --run {params.run:q} {params.args:q} --device {params.device} --threads {threads} "
        "--out {output:q} > {log:q} 2>&1"


rule claims:
    input:
        unpack(claims_inputs),
    output:
        f"{RESULTS}/claims/claims.csv",
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
        "{params.sensitivity:q} {params.smoke:q} {params.waic:q} --out {output:q} > {log:q} 2>&1"


rule accuracy:
    input:
        logs=lambda wildcards: [
            f"{run_dir(run)}/train_log.csv" for run in MEMBERSHIP[config["estimator_accuracy"]["experiment"]]
        ],
    output:
        f"{RESULTS}/accuracy/accuracy.csv",
    log:
        log_file("accuracy", "accuracy"),
    benchmark:
        benchmark_file("accuracy", "accuracy")
    conda:
        ENV
    threads: THREADS
    resources:
        mem_mb=4000,
        runtime=240,
    params:
        runs=lambda wildcards: [run_dir(run) for run in MEMBERSHIP[config["estimator_accuracy"]["experiment"]]],
        args=accuracy_args(),
    shell:
        "grokslt accuracy --runs {params.runs:q} {params.args:q} --threads {threads} --out {output:q} > {log:q} 2>&1"


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

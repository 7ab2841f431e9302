# Estimation (grokslt.estimation): LLC trajectories, the studies (the sampler-sensitivity grid, the calibration,
# the estimator accuracy, the data-rank coefficient), the certified estimates and the refined LLCs.
rule llc:
    input:
        log=f"{RESULTS}/runs/{{run}}/train_log.csv",
        calibration=lambda wildcards: LAYOUT.calibration_input(wildcards.run),
    output:
        table=f"{RESULTS}/runs/{{run}}/llc/chunk{{i}}of{{n}}.csv",
        traces=f"{RESULTS}/runs/{{run}}/llc/chunk{{i}}of{{n}}.npz",
    log:
        log_file("llc", "{run}/chunk{i}of{n}"),
    benchmark:
        benchmark_file("llc", "{run}/chunk{i}of{n}")
    wildcard_constraints:
        run=STAGED_RUNS,
    conda:
        ENV
    threads: THREADS
    resources:
        mem_mb=4000,
        runtime=240,
        gpu=GPUS,
    params:
        sampler=lambda wildcards: LAYOUT.llc_args(wildcards.run),
        run=lambda wildcards: run_dir(wildcards.run),
        device=DEVICE,
        stack=config["llc"]["stack"],
    shell:
        "grokslt llc --run {params.run:q} {params.sampler:q} --chunk {wildcards.i}/{wildcards.n} "
        "--device {params.device} --stack {params.stack} --threads {threads} "
        "--out {output.table:q} --traces {output.traces:q} > {log:q} 2>&1"


# The studies (grokslt.workflow.studies.STUDIES), one rule each: the runs it reads, its command's flags and its
# outputs come from its entry; `--out` is its table, or their directory where files lie beside it.
for study in STUDIES.values():

    rule:
        name:
            study.rule
        input:
            logs=study_inputs(study),
        output:
            **LAYOUT.study_outputs(study),
        log:
            study_log(study, log_file),
        benchmark:
            study_log(study, benchmark_file)
        conda:
            ENV
        threads: THREADS
        resources:
            mem_mb=4000,
            runtime=240,
        params:
            command=study.command,
            args=study_args(study),
            out=study_out(study),
        shell:  # (read at run time, when the loop variable names the last study: the command travels in params)
            "grokslt {params.command} {params.args:q} --threads {threads} --out {params.out:q} > {log:q} 2>&1"


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
        args=LAYOUT.certify_args(),
        device=DEVICE,
    shell:
        "grokslt llc --run {params.run:q} {params.args:q} --device {params.device} --threads {threads} "
        "--out {output:q} > {log:q} 2>&1"


# Refined LLCs (grokslt.estimation.refined): per run of refined.experiments, one LLC table per weight group
# or data subset at refined.preset, joined into refined.csv; per-pair traces at the decisive checkpoints
# (traces/step<STEP:06d>.nc); WAIC from them in analysis.smk.
rule refined_estimates:
    input:
        log=f"{RESULTS}/runs/{{run}}/train_log.csv",
    output:
        f"{RESULTS}/runs/{{run}}/refined/{{kind}}.csv",
    log:
        log_file("refined", "{run}/{kind}"),
    benchmark:
        benchmark_file("refined", "{run}/{kind}")
    conda:
        ENV
    threads: THREADS
    resources:
        mem_mb=4000,
        runtime=480,
        gpu=GPUS,
    params:
        run=lambda wildcards: run_dir(wildcards.run),
        args=lambda wildcards: LAYOUT.refined_args(wildcards.kind),
        device=DEVICE,
    shell:
        "grokslt llc --run {params.run:q} {params.args:q} --device {params.device} --threads {threads} "
        "--out {output:q} > {log:q} 2>&1"


# The decisive checkpoints include the LLC peak of the run's own trajectory (loss_data.csv).
rule pair_traces:
    input:
        log=f"{RESULTS}/runs/{{run}}/train_log.csv",
        loss=f"{RESULTS}/runs/{{run}}/loss_data.csv",
    output:
        table=f"{RESULTS}/runs/{{run}}/refined/traced.csv",
        traces=directory(f"{RESULTS}/runs/{{run}}/traces"),
    log:
        log_file("refined", "{run}/traced"),
    benchmark:
        benchmark_file("refined", "{run}/traced")
    conda:
        ENV
    threads: THREADS
    resources:
        mem_mb=4000,
        runtime=480,
        gpu=GPUS,
    params:
        run=lambda wildcards: run_dir(wildcards.run),
        args=LAYOUT.refined_args("traced"),
        device=DEVICE,
    shell:
        "grokslt llc --run {params.run:q} {params.args:q} --device {params.device} --threads {threads} "
        "--pair-traces {output.traces:q} --out {output.table:q} > {log:q} 2>&1"


rule refined_table:
    input:
        refined_parts,
    output:
        f"{RESULTS}/runs/{{run}}/refined.csv",
    log:
        log_file("refined", "{run}/table"),
    conda:
        ENV
    threads: 1
    shell:
        "grokslt refined-table --parts {input:q} --out {output:q} > {log:q} 2>&1"

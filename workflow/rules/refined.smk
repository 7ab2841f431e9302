# Refined LLCs (grokslt.estimation.refined): per run of refined.experiments, one LLC table per weight group
# or data subset at refined.preset, joined into refined.csv; per-pair traces at the decisive checkpoints
# (traces/step<STEP>.nc) and WAIC from them (waic.csv).
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
        args=lambda wildcards: refined_args(wildcards.kind),
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
        args=refined_args("traced"),
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

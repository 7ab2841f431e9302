# Training (grokslt.training): each run's dataset, then the run itself.
rule dataset:
    output:
        f"{RESULTS}/data/{{dataset}}.npz",
    log:
        log_file("dataset", "{dataset}"),
    benchmark:
        benchmark_file("dataset", "{dataset}")
    group:
        "datasets"
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        args=dataset_args,
    shell:
        "grokslt dataset {params.args:q} --out {output:q} > {log:q} 2>&1"


# Training is a checkpoint: how many checkpoints (hence LLC and Hessian jobs) a run has is known only
# after early stopping. Only the log and run.json are declared outputs, so that Snakemake never deletes
# the checkpoints or resume state of a killed job: restarted, it resumes from its last evaluation.
checkpoint train:
    input:
        dataset=lambda wildcards: f"{RESULTS}/data/{dataset_id(RUNS[wildcards.run])}.npz",
    output:
        log=f"{RESULTS}/runs/{{run}}/train_log.csv",
        meta=f"{RESULTS}/runs/{{run}}/run.json",
    log:
        log_file("train", "{run}"),
    benchmark:
        benchmark_file("train", "{run}")
    conda:
        ENV
    threads: THREADS
    resources:
        mem_mb=4000,
        runtime=240,
    params:
        args=train_args,
        out=lambda wildcards: run_dir(wildcards.run),
    shell:
        "grokslt train {params.args:q} --threads {threads} --dataset {input.dataset:q} --out {params.out:q} "
        "> {log:q} 2>&1"

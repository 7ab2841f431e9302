# Training (grokslt.training): each run, its dataset made from its settings (`grokslt train` draws the split
# itself, as every later stage does from run.json: no file of its own to keep in step).
# Training is a checkpoint: how many checkpoints (hence LLC and Hessian jobs) a run has is known only
# after early stopping. Only the log and run.json are declared outputs, so that Snakemake never deletes
# the checkpoints or resume state of a killed job: restarted, it resumes from its last evaluation.
checkpoint train:
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
        "grokslt train {params.args:q} --threads {threads} --out {params.out:q} " "> {log:q} 2>&1"

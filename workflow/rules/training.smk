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
    wildcard_constraints:
        run=STAGED_RUNS,
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


# A run whose checkpoints fit one LLC chunk (`run_jobs: whole`, grokslt.workflow.commands.Layout.whole_runs): the
# three stages' commands in one process (`--then`), the same flags and the same files as the three jobs. A killed
# job keeps what training wrote but its log and run.json, as a killed training job: rerun, it resumes.
rule whole_run:
    output:
        log=f"{RESULTS}/runs/{{run}}/train_log.csv",
        meta=f"{RESULTS}/runs/{{run}}/run.json",
        table=f"{RESULTS}/runs/{{run}}/llc/chunk0of1.csv",
        traces=f"{RESULTS}/runs/{{run}}/llc/chunk0of1.npz",
        params=f"{RESULTS}/runs/{{run}}/params.csv",
        loss=f"{RESULTS}/runs/{{run}}/loss_data.csv",
        summary=f"{RESULTS}/runs/{{run}}/summary.csv",
    log:
        log_file("whole_run", "{run}"),
    benchmark:
        benchmark_file("whole_run", "{run}")
    wildcard_constraints:
        run=WHOLE_RUNS,
    conda:
        ENV
    threads: THREADS
    resources:
        mem_mb=4000,
        runtime=600,
    params:
        train=train_args,
        run=lambda wildcards: run_dir(wildcards.run),
        sampler=lambda wildcards: LAYOUT.llc_args(wildcards.run),
        stack=config["llc"]["stack"],
        every=lambda wildcards: RUN_LLC[wildcards.run]["every"],
        computed=LAYOUT.tables_args(),
    shell:
        "grokslt train {params.train:q} --threads {threads} --out {params.run:q} "
        "--then llc --run {params.run:q} {params.sampler:q} --chunk 0/1 --device cpu --stack {params.stack} "
        "--threads {threads} --out {output.table:q} --traces {output.traces:q} "
        "--then tables --id {wildcards.run:q} --run {params.run:q} --llc {output.table:q} --llc-every {params.every} "
        "{params.computed:q} --threads {threads} --params-out {output.params:q} --loss-out {output.loss:q} "
        "> {log:q} 2>&1"

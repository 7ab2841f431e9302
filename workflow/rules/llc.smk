rule llc:
    input:
        log=f"{RESULTS}/runs/{{run}}/train_log.csv",
    output:
        table=f"{RESULTS}/runs/{{run}}/llc/chunk{{i}}of{{n}}.csv",
        traces=f"{RESULTS}/runs/{{run}}/llc/chunk{{i}}of{{n}}.npz",
    params:
        sampler=llc_args(),
        run=lambda wildcards: run_dir(wildcards.run),
        device=DEVICE,
        stack=config["llc"]["stack"],
    log:
        f"{RESULTS}/logs/llc/{{run}}/chunk{{i}}of{{n}}.log",
    threads: THREADS
    resources:
        mem_mb=4000,
        runtime=240,
        gpu=GPUS,
    conda:
        ENV
    shell:
        "grokslt llc --run {params.run:q} {params.sampler:q} --chunk {wildcards.i}/{wildcards.n} "
        "--device {params.device} --stack {params.stack} --threads {threads} "
        "--out {output.table:q} --traces {output.traces:q} > {log:q} 2>&1"


rule sampler_sensitivity:
    input:
        log=lambda wildcards: f"{run_dir(sensitivity_run())}/train_log.csv",
    output:
        f"{RESULTS}/sensitivity/sensitivity.csv",
    params:
        run=lambda wildcards: run_dir(sensitivity_run()),
        step=config["sampler_sensitivity"]["step"],
        step_sizes=",".join(map(str, config["sampler_sensitivity"]["step_sizes"])),
        localizations=",".join(map(str, config["sampler_sensitivity"]["localizations"])),
        sampler=llc_args(),
    log:
        f"{RESULTS}/logs/sensitivity.log",
    threads: THREADS
    resources:
        mem_mb=4000,
        runtime=240,
    conda:
        ENV
    shell:
        "grokslt sensitivity --run {params.run:q} --step {params.step:q} --step-sizes {params.step_sizes:q} "
        "--localizations {params.localizations:q} {params.sampler:q} --threads {threads} --out {output:q} > {log:q} 2>&1"

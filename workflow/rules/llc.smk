rule llc:
    input:
        log=f"{RESULTS}/runs/{{run}}/train_log.csv",
        calibration=lambda wildcards: calibration_input(wildcards.run),
    output:
        table=f"{RESULTS}/runs/{{run}}/llc/chunk{{i}}of{{n}}.csv",
        traces=f"{RESULTS}/runs/{{run}}/llc/chunk{{i}}of{{n}}.npz",
    log:
        log_file("llc", "{run}/chunk{i}of{n}"),
    benchmark:
        benchmark_file("llc", "{run}/chunk{i}of{n}")
    conda:
        ENV
    threads: THREADS
    resources:
        mem_mb=4000,
        runtime=240,
        gpu=GPUS,
    params:
        sampler=lambda wildcards: llc_args(wildcards.run),
        run=lambda wildcards: run_dir(wildcards.run),
        device=DEVICE,
        stack=config["llc"]["stack"],
    shell:
        "grokslt llc --run {params.run:q} {params.sampler:q} --chunk {wildcards.i}/{wildcards.n} "
        "--device {params.device} --stack {params.stack} --threads {threads} "
        "--out {output.table:q} --traces {output.traces:q} > {log:q} 2>&1"


rule sensitivity_grid:
    input:
        log=lambda wildcards: f"{run_dir(sensitivity_run())}/train_log.csv",
    output:
        f"{RESULTS}/sensitivity/sensitivity.csv",
    log:
        log_file("sensitivity", "sensitivity"),
    benchmark:
        benchmark_file("sensitivity", "sensitivity")
    conda:
        ENV
    threads: THREADS
    resources:
        mem_mb=4000,
        runtime=240,
    params:
        run=lambda wildcards: run_dir(sensitivity_run()),
        step=config["sampler_sensitivity"]["step"],
        step_sizes=",".join(map(repr, config["sampler_sensitivity"]["step_sizes"])),
        localizations=",".join(map(repr, config["sampler_sensitivity"]["localizations"])),
        sampler=lambda wildcards: llc_args(sensitivity_run()),
    shell:
        "grokslt sensitivity --run {params.run:q} --step {params.step:q} --step-sizes {params.step_sizes:q} "
        "--localizations {params.localizations:q} {params.sampler:q} --threads {threads} --out {output:q} "
        "> {log:q} 2>&1"


rule calibrate:
    input:
        log=lambda wildcards: f"{run_dir(calibration_run())}/train_log.csv",
    output:
        table=calibration_file("csv"),
        choice=calibration_file("json"),
    log:
        log_file("calibration", "calibration"),
    benchmark:
        benchmark_file("calibration", "calibration")
    conda:
        ENV
    threads: THREADS
    resources:
        mem_mb=4000,
        runtime=240,
    params:
        run=lambda wildcards: run_dir(calibration_run()),
        args=calibration_args(),
        out=lambda wildcards, output: os.path.dirname(output.table),
    shell:
        "grokslt calibrate --run {params.run:q} {params.args:q} --threads {threads} --out {params.out:q} > {log:q} 2>&1"

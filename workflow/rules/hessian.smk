rule hessian:
    input:
        log=f"{RESULTS}/runs/{{run}}/train_log.csv",
    output:
        f"{RESULTS}/runs/{{run}}/hessian/chunk{{i}}of{{n}}.csv",
    log:
        log_file("hessian", "{run}/chunk{i}of{n}"),
    benchmark:
        benchmark_file("hessian", "{run}/chunk{i}of{n}")
    conda:
        ENV
    threads: THREADS
    resources:
        mem_mb=4000,
        runtime=120,
    params:
        args=hessian_args(),
        run=lambda wildcards: run_dir(wildcards.run),
    shell:
        "grokslt hessian --run {params.run:q} {params.args:q} --chunk {wildcards.i}/{wildcards.n} "
        "--threads {threads} --out {output:q} > {log:q} 2>&1"

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

rule dataset:
    group:
        "datasets"
    output:
        f"{RESULTS}/data/{{dataset}}.npz",
    params:
        train=lambda wildcards: DATASETS[wildcards.dataset],
    log:
        f"{RESULTS}/logs/dataset/{{dataset}}.log",
    threads: 1
    resources:
        mem_mb=1000,
        runtime=5,
    conda:
        ENV
    shell:
        "grokslt dataset --p {params.train.p} --train-frac {params.train.train_frac} --seed {params.train.seed} "
        "--split {params.train.split:q} --out {output:q} > {log:q} 2>&1"

rule theory_tables:
    output:
        formulas=f"{RESULTS}/theory/formulas.csv",
        ranks=f"{RESULTS}/theory/rank_checks.csv",
        single=f"{RESULTS}/theory/single_output.csv",
    log:
        log_file("theory", "tables"),
    benchmark:
        benchmark_file("theory", "tables")
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        sizes=",".join(sorted({f"{c.p}:{c.hidden}" for c in RUNS.values()})),
        grid_p=",".join(map(str, config["theory"]["grid_p"])),
        grid_K=",".join(map(str, config["theory"]["grid_K"])),
        single_d=",".join(map(str, config["theory"]["single_d"])),
        single_K=",".join(map(str, config["theory"]["single_K"])),
        out=lambda wildcards, output: os.path.dirname(output.formulas),
    shell:
        "grokslt theory --out {params.out:q} --sizes {params.sizes} --grid-p {params.grid_p} --grid-K {params.grid_K} "
        "--single-d {params.single_d} --single-K {params.single_K} --threads {threads} > {log:q} 2>&1"


rule checkpoint_theory:
    input:
        log=f"{RESULTS}/runs/{{run}}/train_log.csv",
    output:
        f"{RESULTS}/runs/{{run}}/theory.csv",
    log:
        log_file("theory", "{run}"),
    benchmark:
        benchmark_file("theory", "{run}")
    conda:
        ENV
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        run=lambda wildcards: run_dir(wildcards.run),
        mass=config["theory"]["mass"],
        atom_rank_max=config["theory"]["atom_rank_max"],
    shell:
        "grokslt theory --run {params.run:q} --mass {params.mass} --atom-rank-max {params.atom_rank_max} "
        "--threads {threads} --out {output:q} > {log:q} 2>&1"

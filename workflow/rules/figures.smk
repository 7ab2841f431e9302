# One rule draws every figure of the registry (grokslt.figures.FIGURES). A figure reads tables only,
# plus its own module and the shared style and readers: restyling a figure reruns that figure alone.
rule figure:
    input:
        unpack(figure_inputs),
    output:
        png=report(
            f"{RESULTS}/figures/{{figure}}.png",
            caption="../report/figure.rst",
            category="Figures",
            subcategory=lambda wildcards: FIGURES[wildcards.figure][0].subcategory,
            labels=figure_labels,
        ),
        pdf=f"{RESULTS}/figures/{{figure}}.pdf",
    log:
        log_file("figures", "{figure}"),
    benchmark:
        benchmark_file("figures", "{figure}")
    conda:
        ENV
    params:
        args=figure_args,
        caption=figure_caption,
        out=figure_prefix,
        dpi=config["figures"]["dpi"],
    shell:
        "grokslt figure {params.args:q} --dpi {params.dpi} --out {params.out:q} > {log:q} 2>&1"


# One target per figure: `snakemake --cores 2 fig1a` builds that figure and only what it reads.
for name in FIGURES:

    rule:
        name:
            name
        input:
            figure_files(name),
        localrule: True

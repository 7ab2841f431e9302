# grokslt: reproduce "A Basin-Selection Perspective on Grokking via Singular Learning Theory".
#   snakemake --cores 2 --configfile config/quick.yaml   (minutes on a laptop)
#   snakemake --cores 16                                 (the paper's full experiment set)
#   snakemake --profile profiles/slurm                   (a SLURM cluster)
# The config file is set by the profile (config.yaml), so that --configfile replaces it rather than
# being merged into it.
from snakemake.utils import min_version

min_version("9.0")


report: "workflow/report/workflow.rst"


include: "workflow/rules/common.smk"
include: "workflow/rules/lock.smk"
include: "workflow/rules/training.smk"
include: "workflow/rules/estimation.smk"
include: "workflow/rules/analysis.smk"
include: "workflow/rules/figures.smk"


onstart:
    from grokslt.workflow.progress import show_progress_bar

    take_results_lock()
    show_progress_bar()


onsuccess:
    from grokslt.workflow.closing import closing_note

    release_results_lock()
    print(closing_note(RESULTS, " ".join(map(str, workflow.configfiles))), file=sys.stderr)


onerror:
    release_results_lock()


rule all:
    default_target: True
    input:
        all_targets,

"""The workflow's config: its schema, built from the settings classes and the figure registry, and its
check, which fills defaults and turns every mistake into one line naming the key.

Before the schema check, a config is read as a person writes it: a numeric string where a number is
expected (YAML 1.1, which Snakemake reads, takes `1e-3` for text) is that number, and a mapping left
empty (`llc:` with nothing under it) is its default. `duplicate_keys` finds a key given twice in one
mapping of a config file, which YAML readers otherwise resolve silently to the last value.

`workflow/schemas/config.schema.yaml` is `config_schema()` written out (`python -m
grokslt.workflow.config > workflow/schemas/config.schema.yaml`; a test keeps the two equal), so that
a user reads every key, its type, range, default and meaning in one file.
"""

from __future__ import annotations

import copy
import difflib
import math
import re
import sys
from dataclasses import dataclass, field

import jsonschema
import yaml

from grokslt.analysis.hessian import PRESETS as HESSIAN_PRESETS
from grokslt.analysis.hessian import HessianSettings
from grokslt.estimation.checkpoint_llc import BACKENDS
from grokslt.estimation.llc import PRESETS
from grokslt.estimation.samplers import WEIGHT_GROUPS, SamplerSettings
from grokslt.figures import FIGURES
from grokslt.settings import bound_text, field_schema, fields, json_schema
from grokslt.training.train import TrainConfig

RESULTS_PATTERN = "^[A-Za-z0-9_./+][A-Za-z0-9_./+ -]*$"
EXPERIMENT_PATTERN = "^[A-Za-z][A-Za-z0-9_]*$"
EARLY_STOP = ("early_stop", "early_stop_threshold", "early_stop_patience")

DEFAULT_METHODS = {
    "sgld_paper_code": {"preset": "paper_code"},
    "sgld_long": {"preset": "paper_code", "num_draws": 5000},
    "rmsprop_sgld": {"preset": "paper_code", "sampler": "rmsprop_sgld", "step_size": 5e-5},
    "sgnht": {"preset": "paper_code", "sampler": "sgnht", "step_size": 1e-4},
}


def training_properties() -> dict:
    """A run's settings as config keys: every TrainConfig setting, the early-stop three as one key."""
    properties = json_schema(TrainConfig, skip=EARLY_STOP)
    by_name = {f.name: f for f in fields(TrainConfig)}
    properties["early_stop"] = {
        "description": "stop once `patience` regular evaluations (every eval_every steps) in a row reach "
        "validation accuracy `threshold`; false: never",
        "oneOf": [
            {"const": False},
            {
                "type": "object",
                "additionalProperties": False,
                "properties": {
                    "threshold": field_schema(by_name["early_stop_threshold"], TrainConfig),
                    "patience": field_schema(by_name["early_stop_patience"], TrainConfig),
                },
            },
        ],
    }
    return properties


def sweep_schema() -> dict:
    return {
        "type": "object",
        "additionalProperties": False,
        "description": "lists of values; the experiment runs their Cartesian product",
        "properties": {
            key: {"type": "array", "minItems": 1, "items": schema, "description": f"values of {key}"}
            for key, schema in training_properties().items()
            if key != "early_stop"
        },
    }


def llc_properties(job_keys: bool) -> dict:
    """The sampler keys: a preset, the backend, the seed and overrides of every sampler setting; with
    `job_keys`, also how checkpoints are split into jobs (the global `llc:` section only)."""
    properties = {
        "preset": {
            "enum": [*sorted(PRESETS), "calibrated"],
            "default": "paper_code",
            "description": "named sampler settings; calibrated: those the calibration chose",
        },  # fmt: skip
        "backend": {"enum": list(BACKENDS), "default": "native", "description": "native | devinterp (the reference)"},
        "seed": {"type": "integer", "minimum": 0, "default": 0, "description": "chains at step s: seed (seed, s)"},
        "every": {
            "type": "integer",
            "minimum": 1,
            "default": 1,
            "description": "estimate every k-th checkpoint, the last and those beside the transitions (1: all)",
        },
        **json_schema(SamplerSettings),
    }
    if job_keys:
        properties["chunk_size"] = {
            "type": "integer",
            "minimum": 1,
            "default": 50,
            "description": "checkpoints per job",
        }
        properties["stack"] = {
            "type": "integer",
            "minimum": 1,
            "default": 1,
            "description": "checkpoints per GPU batch",
        }
    else:
        for key in ("preset", "backend", "seed", "every"):
            properties[key] = {k: v for k, v in properties[key].items() if k != "default"}
    return properties


def section(properties: dict, description: str, required: list[str] = ()) -> dict:
    """An object of the config with these keys, all optional unless `required`, defaulting to {}."""
    schema = {"type": "object", "additionalProperties": False, "description": description, "properties": properties}
    if required:
        schema["required"] = list(required)
    else:
        schema["default"] = {}
    return schema


def experiment_list(description: str) -> dict:
    return {"type": "array", "minItems": 1, "items": {"type": "string"}, "description": description}


def figure_schema(figure) -> dict:
    properties = {}
    for key, default in figure.settings.items():
        if key.endswith("experiments") and not default:  # drawn only for the experiments a config lists
            properties[key] = experiment_list("experiments (none by default)") | {"minItems": 0, "default": []}
        elif key.endswith("experiments"):
            properties[key] = experiment_list("experiments") | {"default": list(default)}
        elif key == "experiment":
            properties[key] = {"type": "string", "default": default, "description": "an experiment of this config"}
        elif key.endswith("experiment"):  # a second experiment (fig2's band) is optional
            description = "an experiment of this config; null: drawn without it"
            properties[key] = {"type": ["string", "null"], "default": default, "description": description}
        else:
            properties[key] = {"type": "integer", "minimum": 1, "default": default}
    return {
        "description": f"settings of {figure.name} (all optional); false: do not draw it",
        "default": {},
        "oneOf": [{"const": False}, section(properties, f"{figure.name}")],
    }


def numbers(description: str, default: list, minimum_exclusive: float | None = 0) -> dict:
    items = {"type": "number"} if minimum_exclusive is None else {"type": "number", "exclusiveMinimum": 0}
    return {"type": "array", "minItems": 1, "items": items, "default": default, "description": description}


def one_checkpoint() -> dict:
    """The `experiment` and `step` keys of a study of one trained checkpoint."""
    return {
        "experiment": {
            "type": ["string", "null"],
            "default": "baseline",
            "description": "the experiment whose first run it studies; null: not run",
        },
        "step": {
            "oneOf": [{"const": "final"}, {"type": "integer", "minimum": 1}],
            "default": "final",
            "description": "checkpoint step, or final",
        },
    }


def thinned_estimates(what: str) -> dict:
    """The keys of a study of LLC estimates at a subset of checkpoints of some experiments' runs."""
    return {
        "experiments": {"type": "array", "items": {"type": "string"}, "default": [],
                        "description": f"experiments whose runs get {what}"},
        "every": {"type": "integer", "minimum": 1, "default": 10,
                  "description": "every k-th checkpoint, plus the last and those at the transitions"},
        "seed": {"type": "integer", "minimum": 0, "default": 0, "description": "chains' seed"},
        "num_draws": {"type": "integer", "minimum": 1, "description": "draws (default: the preset's)"},
    }  # fmt: skip


def integers(description: str, default: list, minimum: int) -> dict:
    items = {"type": "integer", "minimum": minimum}
    return {"type": "array", "minItems": 1, "items": items, "default": default, "description": description}


def config_schema() -> dict:
    experiment = section(
        training_properties()
        | {"sweep": sweep_schema(), "llc": section(llc_properties(False), "this experiment's sampler settings")},
        "an experiment: the defaults, these keys, times the product of the sweep lists",
    )
    figures = {"dpi": {"type": "integer", "minimum": 50, "default": 200, "description": "PNG resolution"}}
    figures |= {name: figure_schema(figure) for name, figure in FIGURES.items()}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "description": "grokslt workflow configuration (config.yaml, config/quick.yaml); generated by "
        "`python -m grokslt.workflow.config` from the settings classes and the figure registry",
        "type": "object",
        "additionalProperties": False,
        "required": ["experiments"],
        "properties": {
            "results": {
                "type": "string",
                "default": "results",
                "pattern": RESULTS_PATTERN,
                "description": "output directory: letters, digits, spaces and _ . / + - (not first: space, -)",
            },
            "smoke_test": {
                "type": "boolean",
                "default": False,
                "description": "true: a configuration shrunk to test the pipeline; claims.csv marks its verdicts",
            },
            "threads": {"type": "integer", "minimum": 1, "default": 1, "description": "torch threads per job"},
            "reference": {
                "enum": ["authors", "none"],
                "default": "authors",
                "description": "the authors' logs (reference/) for the scorecard and overlays, or none",
            },  # fmt: skip
            "gpu": {
                "type": "boolean",
                "default": False,
                "description": "LLC jobs on one cuda GPU each (training and Hessian traces run on the CPU)",
            },
            "defaults": section(training_properties(), "training settings every experiment starts from"),
            "experiments": {
                "type": "object",
                "minProperties": 1,
                "description": "named experiments; a name is a letter, then letters, digits and _",
                "propertyNames": {"pattern": EXPERIMENT_PATTERN},
                "additionalProperties": experiment,
            },
            "llc": section(llc_properties(True), "sampler settings of every LLC estimate"),
            "hessian": section(
                {
                    "preset": {"enum": sorted(HESSIAN_PRESETS), "default": "paper_code", "description": "probes"},
                    "seed": {"type": "integer", "minimum": 0, "default": 0, "description": "probe seed"},
                    **json_schema(HessianSettings),
                },
                "Hutchinson trace of the Hessian (computed at each checkpoint by the run's tables job)",
            ),
            "theory": section(
                {
                    "mass": {
                        "type": "number",
                        "exclusiveMinimum": 0,
                        "maximum": 1,
                        "default": 0.99,
                        "description": "atom-norm mass that defines K_eff",
                    },  # fmt: skip
                    "atom_rank_max": {
                        "type": "integer",
                        "minimum": 0,
                        "default": 0,
                        "description": "rank Phi_p's Jacobian when K_eff <= this",
                    },  # fmt: skip
                    "grid_p": integers("p of the numerical rank checks", [3, 5, 7], 2),
                    "grid_K": integers("K of the numerical rank checks", [1, 2, 3, 5, 8, 12, 20, 40, 80], 1),
                    "single_d": integers("d of the single-output checks", [2, 3, 4, 6], 1),
                    "single_K": integers("K of the single-output checks", [1, 2, 3, 4, 6, 8], 1),
                },
                "closed forms and their numerical checks",
            ),
            "sampler_sensitivity": section(
                {
                    **one_checkpoint(),
                    "step_sizes": numbers("SGLD step sizes", [1e-4, 5e-4, 1e-3]),
                    "localizations": numbers("localizations gamma", [1, 2, 5, 10, 20, 50, 100]),
                },
                "appendix B.2: one checkpoint's LLC over step size x localization",
            ),
            "calibration": section(
                {
                    **one_checkpoint(),
                    "step": {
                        "oneOf": [{"enum": ["transitions", "final"]}, {"type": "integer", "minimum": 1}],
                        "default": "transitions",
                        "description": "transitions (memorisation, val 50%, val 95%, last), final or a step",
                    },
                    "preset": {"enum": sorted(PRESETS), "default": "paper_code", "description": "the other settings"},
                    "seed": {"type": "integer", "minimum": 0, "default": 0, "description": "chains' seed"},
                    "step_sizes": numbers("step sizes (include halvings)", [1e-6, 2e-6, 1e-5, 2e-5, 1e-4, 2e-4]),
                    "nbetas": numbers("inverse temperatures nbeta", [160.0, 1e3, 1e4, 1e5]),
                    "localizations": numbers("localizations gamma", [5.0, 100.0, 1e3, 1e4]),
                    "num_draws": {"type": "integer", "minimum": 1, "default": 3000, "description": "draws per chain"},
                    "num_chains": {"type": "integer", "minimum": 2, "default": 4, "description": "chains"},
                    "num_burnin": {"type": "integer", "minimum": 0, "default": 500, "description": "burn-in steps"},
                    "sampler": json_schema(SamplerSettings)["sampler"] | {"default": "sgld"},
                },
                "sampler calibration at one checkpoint (grokslt.estimation.calibration);"
                " llc.preset: calibrated uses its choice",
            ),
            "certified": section(
                {
                    **thinned_estimates("certified estimates"),
                    "retry_draws": {
                        "type": "integer",
                        "minimum": 2,
                        "description": "draws per chain of a second try at each estimate that did not converge "
                        "(more than num_draws; absent: no second try)",
                    },
                    "preset": {
                        "enum": ["calibrated", *sorted(PRESETS)],
                        "default": "calibrated",
                        "description": "calibrated: the calibration's choice; or a named preset (no calibration)",
                    },  # fmt: skip
                },
                "certified LLCs: certified.preset's sampler at a subset of checkpoints, for claims.csv and Figure 9",
            ),
            "refined": section(
                {
                    **thinned_estimates("refined estimates (weight groups, data subsets)"),
                    "preset": {
                        "enum": sorted(PRESETS),
                        "default": "local",
                        "description": "the sampler of every refined estimate (a named preset)",
                    },  # fmt: skip
                    "weights": {
                        "type": "array",
                        "items": {"enum": [g for g in WEIGHT_GROUPS if g != "all"]},
                        "default": ["W", "V"],
                        "description": "weight groups, each sampled alone on the training loss (beside all weights)",
                    },  # fmt: skip
                    "data": {
                        "type": "array",
                        "items": {"type": "string", "pattern": "^(train|val|all|residue:[0-9]+)$"},
                        "default": ["val"],
                        "description": "data subsets (val, all, residue:c), each the posterior's loss for all weights",
                    },  # fmt: skip
                    "traces": {
                        "type": "boolean",
                        "default": True,
                        "description": "per-pair traces (NetCDF), WAIC and influence at the decisive checkpoints",
                    },  # fmt: skip
                },
                "refined LLCs (grokslt.estimation.refined) and per-pair traces: refined.csv, traces/, waic.csv",
            ),
            "estimator_accuracy": section(
                {
                    "experiment": {
                        "type": ["string", "null"],
                        "default": "accuracy_nets",
                        "description": "small networks: their final and initial points; null: not run",
                    },  # fmt: skip
                    "nbetas": numbers("inverse temperatures nbeta", [10.0, 30.0, 100.0, 300.0]),
                    "localization": {"type": "number", "minimum": 0, "default": 5.0, "description": "gamma"},
                    "repeats": {"type": "integer", "minimum": 2, "default": 3, "description": "seeds per method"},
                    "reference": section(
                        {
                            "chains": {"type": "integer", "minimum": 2, "default": 16, "description": "MALA chains"},
                            "burnin": {"type": "integer", "minimum": 0, "default": 2000, "description": "burn-in"},
                            "draws": {"type": "integer", "minimum": 100, "default": 20000, "description": "draws"},
                        },
                        "the exact reference: long float64 MALA chains",
                    ),
                    "methods": {
                        "type": "object",
                        "minProperties": 1,
                        "description": "named methods: a preset and sampler settings (nbeta, localization set above)",
                        "additionalProperties": section(
                            {k: v for k, v in llc_properties(False).items() if k not in ("backend", "seed", "every")},
                            "a method",
                        ),
                        "default": DEFAULT_METHODS,
                    },
                },
                "each LLC method against an exact reference on small networks (grokslt.analysis.accuracy)",
            ),
            "figures": section(figures, "each figure's settings; every key optional"),
        },
    }


# -- reading a config as a person writes it ------------------------------------------------------------

NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")
INTEGER = re.compile(r"[-+]?\d+")


def _branches(schema: dict):
    """The schema and the alternatives it allows (oneOf, anyOf, allOf), flattened."""
    yield schema
    for key in ("oneOf", "anyOf", "allOf"):
        for branch in schema.get(key, []):
            yield from _branches(branch)


def _types(schema: dict) -> set[str]:
    kinds = set()
    for branch in _branches(schema):
        kind = branch.get("type", [])
        kinds.update([kind] if isinstance(kind, str) else kind)
    return kinds


def _takes_text(schema: dict, text: str) -> bool:
    """Whether the schema allows this text as it is: a string, or a word of an enum or a const."""
    return any(
        "string" in _types(branch) or text in branch.get("enum", ()) or branch.get("const") == text
        for branch in _branches(schema)
    )


def _child(schema: dict, key: str) -> dict | None:
    """The schema of a mapping's key: a property of the schema or of an alternative, else its extra keys'."""
    for branch in _branches(schema):
        if key in branch.get("properties", {}):
            return branch["properties"][key]
    for branch in _branches(schema):
        if isinstance(branch.get("additionalProperties"), dict):
            return branch["additionalProperties"]
    return None


def _items(schema: dict) -> dict | None:
    return next((branch["items"] for branch in _branches(schema) if isinstance(branch.get("items"), dict)), None)


def as_number(text: str, kinds: set[str]):
    """`1e-3` -> 0.001, `1e4` -> 10000 where an integer is expected; text that is no finite number stays text
    (for the schema to name)."""
    stripped = text.strip()
    if not NUMBER.fullmatch(stripped):
        return text
    value = int(stripped) if INTEGER.fullmatch(stripped) else float(stripped)
    if not math.isfinite(value):
        return text
    if "number" not in kinds and isinstance(value, float) and value.is_integer():
        value = int(value)
    return value


def readable(value, schema: dict):
    """The config as the schema reads it: a numeric string where only a number is allowed becomes that
    number, in every section, experiment and sweep list; a section left empty (null) becomes its default,
    an experiment left empty has no settings of its own. Everything else is left for the schema to check."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            sub = _child(schema, key)
            if sub is None:
                out[key] = item
                continue
            kinds = _types(sub)
            if item is None and "object" in kinds and "null" not in kinds:
                if not any(key in branch.get("properties", {}) for branch in _branches(schema)):
                    item = {}  # a named entry (an experiment, a method) without settings of its own
                elif "default" in sub:
                    continue  # a section: filled with its default
            out[key] = readable(item, sub)
        return out
    if isinstance(value, list):
        sub = _items(schema)
        return [readable(item, sub) if sub is not None else item for item in value]
    if isinstance(value, str):
        kinds = _types(schema)
        if kinds & {"integer", "number"} and not _takes_text(schema, value):
            return as_number(value, kinds)
    return value


def duplicate_keys(path) -> list[str]:
    """One line per key given twice in one mapping of the YAML (or JSON) file at `path`, which YAML
    readers (Snakemake's too) otherwise resolve to the last value without a word."""
    try:
        with open(path, encoding="utf-8") as handle:
            root = yaml.compose(handle, Loader=yaml.SafeLoader)
    except (OSError, yaml.YAMLError):
        return []  # Snakemake reports a file it cannot read
    lines, visited = [], set()

    def walk(node, where: list) -> None:
        if id(node) in visited:  # (an alias of a node already walked)
            return
        visited.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                walk(item, [*where, i])
        if not isinstance(node, yaml.MappingNode):
            return
        first_line = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key, line = key_node.value, key_node.start_mark.line + 1
            if key in first_line:
                lines.append(
                    f"{path}: {key_path([*where, key])} given twice in one mapping (lines {first_line[key]} "
                    f"and {line}); keep one"
                )
            else:
                first_line[key] = line
            walk(value_node, [*where, key])

    walk(root, [])
    return lines


# -- checking a config ---------------------------------------------------------------------------------


def yaml_mistake(error: yaml.YAMLError) -> str:
    """A YAML syntax error in one line: what is wrong and where (line and column, from 1)."""
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    what = getattr(error, "problem", None) or str(error).splitlines()[0]
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
    return f"not valid YAML: {what}{where}"


def _fill_defaults(validator_class):
    """A validator that also writes each property's default into the instance where it is absent."""
    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for key, subschema in properties.items():
                if "default" in subschema and key not in instance:
                    instance[key] = copy.deepcopy(subschema["default"])
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": set_defaults})


FILLING_VALIDATOR = _fill_defaults(jsonschema.Draft202012Validator)


class ConfigError(ValueError):
    """Config mistakes, one line each naming the key; `detail` holds the schema's own report."""

    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        self.detail = detail


def check_config(config: dict) -> dict:
    """The config as the schema reads it (`readable`) with every default filled in, or a ConfigError
    with one line per mistake."""
    schema = config_schema()
    checked = copy.deepcopy(readable(config, schema))
    errors = list(FILLING_VALIDATOR(schema).iter_errors(checked))
    if errors:
        errors.sort(key=lambda error: [str(part) for part in error.absolute_path])
        lines = [line for error in errors for line in describe_lines(jsonschema.exceptions.best_match([error]))]
        raise ConfigError("\n".join(dict.fromkeys(lines)), "\n\n".join(map(str, errors)))
    return checked


@dataclass
class CheckedConfig:
    """A config checked as a whole: its keys with defaults, its runs ({run id: TrainConfig}), the runs of
    each experiment, each run's sampler keys, and a line for each figure or study left out because
    the experiment it names by default is not in the config."""

    config: dict
    runs: dict
    membership: dict[str, list[str]]
    run_llc: dict[str, dict]
    skipped: list[str] = field(default_factory=list)


def check_workflow(config: dict, files=()) -> CheckedConfig:
    """Everything the workflow checks before any job, every mistake in one ConfigError, a line each: keys
    given twice in the config `files`, then the schema, then each experiment's runs, then the
    experiments that figures and studies name and the sampler settings."""
    from grokslt.workflow.experiments import check_references, expand_experiments, run_llc

    lines = [line for path in files for line in duplicate_keys(path)]
    try:
        checked = check_config(config)
    except ConfigError as error:
        raise ConfigError("\n".join([*lines, str(error)]), error.detail) from None
    if lines:
        raise ConfigError("\n".join(lines))
    try:
        runs, membership = expand_experiments(checked)
    except ValueError as error:
        raise ConfigError(str(error)) from None
    lines, skipped, blocks = [], [], {}
    try:
        skipped = check_references(checked, membership, given=config)
    except ValueError as error:
        lines.append(str(error))
    try:
        blocks = run_llc(checked, membership)
    except ValueError as error:
        lines.append(str(error))
    lines += refined_errors(checked, runs, membership) + paper_model_errors(checked, runs, membership)
    lines += certified_errors(checked) + thinning_errors(runs, blocks)
    if lines:
        raise ConfigError("\n".join(lines))
    return CheckedConfig(checked, runs, membership, blocks, skipped)


def refined_errors(config: dict, runs: dict, membership: dict) -> list[str]:
    """A `refined.data` residue must be an answer (0..p-1) of every run it is estimated on; the figures that
    read per-pair traces need them."""
    section = config["refined"]
    sizes = {runs[run].p for name in section["experiments"] for run in membership.get(name, []) if run in runs}
    lines = []
    for i, subset in enumerate(section["data"]):
        kind, _, value = subset.partition(":")
        if kind == "residue" and sizes and int(value) >= min(sizes):
            lines.append(f"refined.data[{i}] = {subset!r}: residue outside 0..p-1 for the runs with p = {min(sizes)}")
    off_paper = sorted({runs[run].model + "/" + runs[run].loss for name in section["experiments"]
                        for run in membership.get(name, []) if run in runs
                        if (runs[run].model, runs[run].loss) != ("quadratic", "centred_mse")})  # fmt: skip
    groups = [group for group in section["weights"] if group != "all"]
    if off_paper and groups:
        lines.append(f"refined.weights = {groups}: weight groups are the quadratic network's with the centred MSE; "
                     f"refined.experiments include {', '.join(off_paper)} runs")  # fmt: skip
    for name in ("refined", "influence"):
        figure = config["figures"].get(name)
        if figure and figure.get("experiments") and not section["traces"]:
            lines.append(f"figures.{name}: reads per-pair traces, but refined.traces is false; set it true, "
                         f"or figures.{name}: false")  # fmt: skip
    return lines


def thinning_errors(runs: dict, blocks: dict[str, dict]) -> list[str]:
    """Each run's LLC estimates leave enough full-batch observations per chain (`checked_thinning`, with the run's
    training set and batch), which every LLC job would otherwise find only after training."""
    from grokslt.estimation.llc import sampler_settings
    from grokslt.estimation.observables import checked_thinning
    from grokslt.estimation.samplers import SAMPLERS
    from grokslt.workflow.experiments import LLC_CHOICE_KEYS

    lines = []
    for run, block in blocks.items():
        if block["preset"] == "calibrated":  # its draws are known once the calibration has run
            continue
        settings = sampler_settings(block["preset"], **{k: v for k, v in block.items() if k not in LLC_CHOICE_KEYS})
        n = int(runs[run].train_frac * runs[run].p ** 2)
        batch = n if SAMPLERS[settings.sampler].full_batch else min(runs[run].batch_size, n)
        try:
            checked_thinning(settings.observe_every, n, batch, settings.num_draws)
        except ValueError as error:
            lines.append(f"llc: {error}")
    return list(dict.fromkeys(lines))


def certified_errors(config: dict) -> list[str]:
    """A second try at an unconverged certified estimate draws more than the first."""
    section = config["certified"]
    if "retry_draws" not in section:
        return []
    first = section.get("num_draws") or (config["calibration"]["num_draws"] if section["preset"] == "calibrated"
                                         else PRESETS[section["preset"]].num_draws)  # fmt: skip
    if section["retry_draws"] > first:
        return []
    return [f"certified.retry_draws = {section['retry_draws']}: expected more than the first try's {first} draws "
            "per chain"]  # fmt: skip


def paper_model_errors(config: dict, runs: dict, membership: dict) -> list[str]:
    """The estimator accuracy study's exact references are the quadratic network's centred loss: its experiment
    names only such runs."""
    experiment = (config.get("estimator_accuracy") or {}).get("experiment")
    others = sorted({f"{runs[run].model}/{runs[run].loss}" for run in membership.get(experiment, []) if run in runs
                     and (runs[run].model, runs[run].loss) != ("quadratic", "centred_mse")})  # fmt: skip
    if not others:
        return []
    return [f"estimator_accuracy.experiment = {experiment!r}: its runs are {', '.join(others)}; the study needs the "
            "quadratic network with the centred MSE"]  # fmt: skip


def key_path(path) -> str:
    return ".".join(str(part) if not isinstance(part, int) else f"[{part}]" for part in path).replace(".[", "[")


def describe_lines(error: jsonschema.ValidationError) -> list[str]:
    """A line for each mistake of a schema error: the key's path, what is wrong, and what is allowed."""
    where = key_path(error.absolute_path)
    value, schema, kind = error.instance, error.schema, error.validator
    if kind == "additionalProperties":
        allowed = sorted(schema.get("properties", {}))
        lines = []
        for key in sorted(set(value) - set(allowed), key=str):
            close = difflib.get_close_matches(str(key), allowed, n=3, cutoff=0.4)
            hint = f"did you mean {' or '.join(close)}? " if close else ""
            prefix = f"{where}.{key}" if where else str(key)
            lines.append(f"{prefix}: unknown key; {hint}allowed: {', '.join(allowed)}")
        return lines
    if kind == "required":
        lines = []
        for missing in [key for key in schema["required"] if key not in value]:
            prefix = f"{where}.{missing}" if where else missing
            description = schema["properties"][missing].get("description", "")
            lines.append(f"{prefix}: required key missing ({description})")
        return lines
    if kind == "minProperties":
        return [f"{where} = {value!r}: expected at least one entry ({schema.get('description', 'a key')})"]
    if kind == "propertyNames":
        return [f"{where}: name {value!r} not allowed; expected {schema.get('description', schema)}"]
    return [f"{where or 'config'} = {value!r}: expected {expectation(schema, kind)}"]


def expectation(schema: dict, kind: str) -> str:
    if "enum" in schema:
        return f"one of {schema['enum']}"
    if kind == "pattern":
        return f"{schema.get('description', 'text matching ' + schema['pattern'])}"
    if kind == "minItems":
        return "a non-empty list"
    if kind in ("oneOf", "anyOf", "const"):
        return schema.get("description", "another value")
    kinds = schema.get("type", "value")
    words = {"integer": "an integer", "number": "a number", "string": "a string", "boolean": "true or false",
             "array": "a list", "object": "a mapping of keys", "null": "nothing"}  # fmt: skip
    text = " or ".join(words[k] for k in (kinds if isinstance(kinds, list) else [kinds]))
    bounds = [(">=", "minimum"), (">", "exclusiveMinimum"), ("<=", "maximum"), ("<", "exclusiveMaximum")]
    limits = [f"{sign} {bound_text(schema[key])}" for sign, key in bounds if key in schema]
    return f"{text} {' and '.join(limits)}".strip()


def main() -> None:
    yaml.safe_dump(config_schema(), sys.stdout, sort_keys=False, width=120)


if __name__ == "__main__":
    main()

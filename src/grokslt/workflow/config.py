"""The workflow's config: its schema, built from the settings classes and the figure registry, and its
check, which fills defaults and turns the first mistake into a few lines naming the key.

`workflow/schemas/config.schema.yaml` is `config_schema()` written out (`python -m
grokslt.workflow.config > workflow/schemas/config.schema.yaml`; a test keeps the two equal), so that
a user reads every key, its type, range, default and meaning in one file.
"""

from __future__ import annotations

import copy
import difflib
import sys

import jsonschema
import yaml

from grokslt.analysis.hessian import PRESETS as HESSIAN_PRESETS
from grokslt.analysis.hessian import HessianSettings
from grokslt.estimation.llc import PRESETS
from grokslt.estimation.samplers import SamplerSettings
from grokslt.figures import FIGURES
from grokslt.settings import field_schema, fields, json_schema
from grokslt.training.train import TrainConfig

RESULTS_PATTERN = "^[A-Za-z0-9_./+][A-Za-z0-9_./+ -]*$"
EXPERIMENT_PATTERN = "^[A-Za-z][A-Za-z0-9_]*$"
EARLY_STOP = ("early_stop", "early_stop_threshold", "early_stop_patience")
BACKENDS = ["native", "devinterp"]
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
        "backend": {"enum": BACKENDS, "default": "native", "description": "native | devinterp (the reference)"},
        "seed": {"type": "integer", "minimum": 0, "default": 0, "description": "chains at step s: seed (seed, s)"},
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
        for key in ("preset", "backend", "seed"):
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
        if key.endswith("experiments"):
            properties[key] = experiment_list("experiments") | {"default": list(default)}
        elif key.endswith("experiment"):
            kind = {"type": "string"} if default is not None else {"type": ["string", "null"]}
            properties[key] = kind | {"default": default, "description": "an experiment of this config"}
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
        "experiment": {"type": "string", "default": "baseline", "description": "its first run"},
        "step": {
            "oneOf": [{"const": "final"}, {"type": "integer", "minimum": 1}],
            "default": "final",
            "description": "checkpoint step, or final",
        },
    }


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
            "threads": {"type": "integer", "minimum": 1, "default": 1, "description": "torch threads per job"},
            "reference": {
                "enum": ["authors", "none"],
                "default": "authors",
                "description": "the authors' logs (reference/) for the scorecard and overlays, or none",
            },  # fmt: skip
            "gpu": {"type": "boolean", "default": False, "description": "GPU jobs: train/llc/hessian on cuda"},
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
                    "chunk_size": {"type": "integer", "minimum": 1, "default": 200, "description": "per job"},
                    **json_schema(HessianSettings),
                },
                "Hutchinson trace of the Hessian",
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
                    "preset": {"enum": sorted(PRESETS), "default": "paper_code", "description": "the other settings"},
                    "seed": {"type": "integer", "minimum": 0, "default": 0, "description": "chains' seed"},
                    "step_sizes": numbers("step sizes (include halvings)", [2e-4, 4e-4, 8e-4, 1.6e-3]),
                    "nbetas": numbers("inverse temperatures nbeta", [26.38, 160.0]),
                    "localizations": numbers("localizations gamma", [5.0, 50.0]),
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
                    "experiments": {
                        "type": "array",
                        "items": {"type": "string"},
                        "default": [],
                        "description": "experiments whose runs get certified estimates",
                    },  # fmt: skip
                    "every": {
                        "type": "integer",
                        "minimum": 1,
                        "default": 10,
                        "description": "every k-th checkpoint, plus the last and those at the transitions",
                    },  # fmt: skip
                    "seed": {"type": "integer", "minimum": 0, "default": 0, "description": "chains' seed"},
                    "num_draws": {"type": "integer", "minimum": 1, "description": "draws (default: the calibration's)"},
                },
                "certified LLCs: the calibrated sampler at a subset of checkpoints, for claims.csv",
            ),
            "estimator_accuracy": section(
                {
                    "experiment": {
                        "type": "string",
                        "default": "accuracy_nets",
                        "description": "small networks: their final and initial points",
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
                            {k: v for k, v in llc_properties(False).items() if k not in ("backend", "seed")}, "a method"
                        ),
                        "default": DEFAULT_METHODS,
                    },
                },
                "each LLC method against an exact reference on small networks (grokslt.analysis.accuracy)",
            ),
            "figures": section(figures, "each figure's settings; every key optional"),
        },
    }


# -- checking a config ---------------------------------------------------------------------------------


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
    """A config mistake, in a few lines that name the key; `detail` holds the schema's own report."""

    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        self.detail = detail


def check_config(config: dict) -> dict:
    """The config with every default filled in, or a ConfigError naming the first mistake's key."""
    checked = copy.deepcopy(config)
    errors = list(FILLING_VALIDATOR(config_schema()).iter_errors(checked))
    if errors:
        error = jsonschema.exceptions.best_match(errors)
        raise ConfigError(describe(error), str(error))
    return checked


def key_path(path) -> str:
    return ".".join(str(part) if not isinstance(part, int) else f"[{part}]" for part in path).replace(".[", "[")


def describe(error: jsonschema.ValidationError) -> str:
    """One line for a schema error: the key's path, what is wrong, and what is allowed."""
    where = key_path(error.absolute_path)
    value, schema, kind = error.instance, error.schema, error.validator
    if kind == "additionalProperties":
        allowed = sorted(schema.get("properties", {}))
        unknown = sorted(set(value) - set(allowed))
        key = unknown[0]
        close = difflib.get_close_matches(str(key), allowed, n=3, cutoff=0.4)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        prefix = f"{where}.{key}" if where else str(key)
        return f"{prefix}: unknown key; {hint}allowed: {', '.join(allowed)}"
    if kind == "required":
        missing = [key for key in schema["required"] if key not in value][0]
        prefix = f"{where}.{missing}" if where else missing
        description = schema["properties"][missing].get("description", "")
        return f"{prefix}: required key missing ({description})"
    if kind == "propertyNames":
        return f"{where}: name {value!r} not allowed; expected {schema.get('description', schema)}"
    return f"{where or 'config'} = {value!r}: expected {expectation(schema, kind)}"


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
    limits = [f"{sign} {schema[key]:g}" for sign, key in bounds if key in schema]
    return f"{text} {' and '.join(limits)}".strip()


def main() -> None:
    yaml.safe_dump(config_schema(), sys.stdout, sort_keys=False, width=120)


if __name__ == "__main__":
    main()

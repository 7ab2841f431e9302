"""The building blocks of the config's schema: a section of optional keys, lists of numbers and experiments,
the sampler keys, the keys of a study of one checkpoint or of thinned estimates. `workflow.config` assembles the
schema from them and the study registry (`workflow.studies`) writes its sections with them.
"""

from __future__ import annotations

from grokslt.estimation.checkpoint_llc import BACKENDS
from grokslt.estimation.llc import PRESETS
from grokslt.estimation.samplers import SamplerSettings
from grokslt.settings import json_schema


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

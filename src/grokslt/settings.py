"""Settings defined once: a dataclass field per setting, with its type, default, help and valid range.

Everything else is derived from the dataclass: the command-line flags (`add_arguments`,
`from_arguments`), the flags a workflow rule passes (`to_arguments`), the config schema's entries
(`json_schema`), the checks (`check_fields`) and the table columns (`as_columns`). A class adds its
cross-field rules in a `check` method.

    @dataclass(frozen=True)
    class Example:
        width: int = setting(8, "hidden width", minimum=1)
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import math
import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, field

from grokslt.errors import BadInput


def setting(
    default,
    help: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    exclusive_minimum: float | None = None,
    exclusive_maximum: float | None = None,
    choices: Iterable | None = None,
    flag: str | None = None,
):
    """A dataclass field that carries what the command line, the schema and the checks need."""
    metadata = {
        "help": help,
        "minimum": minimum,
        "maximum": maximum,
        "exclusive_minimum": exclusive_minimum,
        "exclusive_maximum": exclusive_maximum,
        "choices": tuple(choices) if choices is not None else None,
        "flag": flag,
    }
    return field(default=default, metadata=metadata)


def fields(cls) -> list[dataclasses.Field]:
    """The settings of a settings class (every field declared with `setting`)."""
    return [f for f in dataclasses.fields(cls) if "help" in f.metadata]


@functools.cache
def type_hints(cls) -> dict[str, object]:
    """The class's annotations as types, resolved once: they are text here (`from __future__ import annotations`),
    and resolving them for every field checked made checking config.yaml's 265 runs take 10-60 s."""
    return typing.get_type_hints(cls)


def base_type(f: dataclasses.Field, cls) -> type:
    """bool, int, float or str: the field's type without `| None`."""
    hint = type_hints(cls)[f.name]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        [hint] = [arg for arg in typing.get_args(hint) if arg is not type(None)]
    return hint


def optional(f: dataclasses.Field, cls) -> bool:
    hint = type_hints(cls)[f.name]
    return typing.get_origin(hint) in (typing.Union, types.UnionType) and type(None) in typing.get_args(hint)


def flag_name(f: dataclasses.Field) -> str:
    return f.metadata["flag"] or "--" + f.name.replace("_", "-")


# -- checks ------------------------------------------------------------------------------------------------


def expectation(f: dataclasses.Field, cls) -> str:
    """What a valid value of the field is, in words: 'a positive integer', 'a number in (0, 1)', ..."""
    kind, meta = base_type(f, cls), f.metadata
    if meta["choices"] is not None:
        text = f"one of {list(meta['choices'])}"
    elif kind is bool:
        text = "true or false"
    else:
        noun = "integer" if kind is int else "number" if kind is float else "string"
        low, high = (
            meta["exclusive_minimum"],
            meta["maximum"] if meta["maximum"] is not None else meta["exclusive_maximum"],
        )
        if meta["minimum"] == 1 and kind is int and high is None:
            text = "a positive integer"
        elif meta["exclusive_minimum"] == 0 and high is None:
            text = f"a positive {noun}"
        elif meta["minimum"] == 0 and high is None:
            text = f"a non-negative {noun}"
        elif high is not None:
            left = "[" if meta["minimum"] is not None else "("
            right = "]" if meta["maximum"] is not None else ")"
            low = meta["minimum"] if meta["minimum"] is not None else low
            article = "an" if noun == "integer" else "a"
            text = f"{article} {noun} in {left}{bound_text(low)}, {bound_text(high)}{right}"
        elif meta["minimum"] is not None:
            text = f"an {noun} >= {meta['minimum']:g}" if kind is int else f"a {noun} >= {meta['minimum']:g}"
        else:
            text = f"an {noun}" if kind is int else f"a {noun}"
    return f"{text} or none" if optional(f, cls) else text


def bound_text(value: float) -> str:
    """A range's bound as a person reads it: an integer in full (2^63 - 1 is not 9.22337e+18), a float short."""
    return str(value) if isinstance(value, int) else f"{value:g}"


def valid_value(f: dataclasses.Field, cls, value) -> bool:
    kind, meta = base_type(f, cls), f.metadata
    if value is None:
        return optional(f, cls)
    if kind is bool:
        return isinstance(value, bool)
    if kind is str:
        return isinstance(value, str) and (meta["choices"] is None or value in meta["choices"])
    if isinstance(value, bool) or not isinstance(value, int if kind is int else (int, float)):
        return False
    if kind is float and not math.isfinite(value):
        return False
    bounds = [
        (meta["minimum"], lambda low: value >= low),
        (meta["maximum"], lambda high: value <= high),
        (meta["exclusive_minimum"], lambda low: value > low),
        (meta["exclusive_maximum"], lambda high: value < high),
    ]
    return all(bound is None or holds(bound) for bound, holds in bounds) and (
        meta["choices"] is None or value in meta["choices"]
    )


def check_fields(instance) -> None:
    """Every setting's type and range, then the class's own `check` (cross-field rules)."""
    cls = type(instance)
    for f in fields(cls):
        value = getattr(instance, f.name)
        if not valid_value(f, cls, value):
            raise BadInput(f"{f.name} = {value!r}: expected {expectation(f, cls)}")
    if hasattr(instance, "check"):
        instance.check()


# -- command line ------------------------------------------------------------------------------------------


def add_arguments(parser, cls, defaults: bool = True, skip: Iterable[str] = ()) -> None:
    """A flag per setting. `defaults=False`: flags that default to None (overrides of a preset)."""
    for f in fields(cls):
        if f.name in skip:
            continue
        kind = base_type(f, cls)
        default = f.default if defaults and f.default is not MISSING else None
        text = f.metadata["help"] + (f" (default {f.default!r})" if defaults and f.default is not MISSING else "")
        text = text.replace("%", "%%")  # argparse formats help strings
        if kind is bool:
            parser.add_argument(flag_name(f), action=argparse.BooleanOptionalAction, default=default, help=text)
            continue
        choices = f.metadata["choices"] if kind is str else None
        parser.add_argument(flag_name(f), type=_parser_type(kind), default=default, choices=choices, help=text)


def _parser_type(kind: type):
    if kind is float:
        return float
    if kind is int:
        return int
    return str


def from_arguments(cls, args: argparse.Namespace, **extra):
    """The settings object from parsed flags (added by `add_arguments` with defaults)."""
    values = {f.name: getattr(args, f.name) for f in fields(cls)}
    return cls(**values, **extra)


def overrides_from_arguments(cls, args: argparse.Namespace) -> dict:
    """The settings given on the command line (flags added with `defaults=False`)."""
    return {f.name: getattr(args, f.name) for f in fields(cls) if getattr(args, f.name, None) is not None}


def format_value(value) -> str:
    """A value as a command-line word that parses back to the same value (floats by repr)."""
    return repr(value) if isinstance(value, float) else str(value)


def to_arguments(instance, only: Iterable[str] | None = None) -> list[str]:
    """The flags that give every setting of `instance` (or those named in `only`), as separate words."""
    cls, words = type(instance), []
    for f in fields(cls):
        if only is not None and f.name not in only:
            continue
        value = getattr(instance, f.name)
        if value is None:
            continue
        if base_type(f, cls) is bool:
            words.append(flag_name(f) if value else "--no-" + flag_name(f)[2:])
        else:
            words += [flag_name(f), format_value(value)]
    return words


def mapping_to_arguments(cls, values: Mapping) -> list[str]:
    """The flags of some settings of `cls` given as a mapping (a preset's overrides)."""
    unknown = sorted(set(values) - {f.name for f in fields(cls)})
    if unknown:
        raise BadInput(f"unknown settings {unknown}; expected some of {[f.name for f in fields(cls)]}")
    words = []
    for f in fields(cls):
        if f.name in values and values[f.name] is not None:
            value = values[f.name]
            words += [flag_name(f), format_value(value)] if base_type(f, cls) is not bool else [flag_name(f)]
    return words


# -- schema and tables -------------------------------------------------------------------------------------


def field_schema(f: dataclasses.Field, cls) -> dict:
    """The JSON-schema entry of one setting."""
    kind, meta = base_type(f, cls), f.metadata
    schema: dict = {"description": meta["help"]}
    if meta["choices"] is not None:
        schema["enum"] = list(meta["choices"])
    else:
        schema["type"] = {bool: "boolean", int: "integer", float: "number", str: "string"}[kind]
        for key, name in [
            ("minimum", "minimum"),
            ("maximum", "maximum"),
            ("exclusive_minimum", "exclusiveMinimum"),
            ("exclusive_maximum", "exclusiveMaximum"),
        ]:
            if meta[key] is not None:
                schema[name] = meta[key]
    if optional(f, cls):
        schema = {"anyOf": [schema, {"type": "null"}], "description": meta["help"]}
    return schema


def json_schema(cls, skip: Iterable[str] = ()) -> dict[str, dict]:
    """{setting: JSON-schema entry} for every setting of `cls` not in `skip`."""
    return {f.name: field_schema(f, cls) for f in fields(cls) if f.name not in skip}


def as_columns(instance, prefix: str = "") -> dict:
    """{prefix + setting: value}: the settings as table columns."""
    return {prefix + f.name: getattr(instance, f.name) for f in fields(type(instance))}

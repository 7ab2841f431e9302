"""A training run on disk: its settings, dataset and checkpoints, and the selection of checkpoints
that one job of a later stage works on."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import logging
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from grokslt.artefacts import LOSS_DATA, config_digest, read_table, record_digest
from grokslt.errors import BadInput
from grokslt.io import checkpoint_path, file_sha256, list_checkpoints, load_checkpoint
from grokslt.training.data import ModularArithmetic
from grokslt.training.families import Network
from grokslt.training.train import INIT_FILE, TrainConfig

log = logging.getLogger(__name__)


@dataclass
class Run:
    path: Path
    config: TrainConfig
    data: ModularArithmetic
    checkpoints: dict[int, Path]
    outcome: dict
    record: dict

    @property
    def diverged_step(self) -> int | None:
        return self.outcome["step"] if self.outcome["status"] == "diverged" else None

    def load(self, step: int) -> dict[str, torch.Tensor]:
        """The parameters at `step`, checked to be the bytes training wrote (run.json's checksum) and this
        run's model."""
        fix = f"; delete {self.path} and train the run again: a checkpoint cannot be restored alone"
        params = load_checkpoint(self.checkpoints[step], self.checksums[str(step)], fix)
        expected = self.network.shapes()
        found = {name: tuple(params[name].shape) if name in params else None for name in expected}
        if found != expected:
            p, hidden, model = self.config.p, self.config.hidden, self.config.model
            raise BadInput(
                f"{self.checkpoints[step]}: holds {found}, but the run ({model}, p = {p}, K = {hidden}) has "
                f"{expected}: the checkpoint belongs to another run"
            )
        return params

    def load_init(self) -> dict[str, torch.Tensor]:
        """The network before training (init.safetensors), checked against run.json's checksum."""
        fix = f"; delete {self.path} and train the run again"
        return load_checkpoint(self.path / INIT_FILE, self.record["init_sha256"], fix)

    @property
    def checksums(self) -> dict[str, str]:
        return self.record["checkpoints_sha256"]

    @property
    def identity(self) -> str:
        """The run's `config_digest`, which the tables computed from it carry in their seals."""
        return config_digest(self.record["config"])

    @property
    def network(self) -> Network:
        return Network.of(self.config)

    @property
    def batch_size(self) -> int:
        """The training batch, at most the training set (a full-batch run may name any larger size)."""
        return min(self.config.batch_size, self.data.n_train)


def load_run(path: str | Path) -> Run:
    """A finished run written by `grokslt train`, checked whole (`verified_record`); a run that
    diverged may have no checkpoints."""
    path = Path(path)
    record = verified_record(path)
    config, outcome = TrainConfig(**record["config"]), record["outcome"]
    checkpoints = list_checkpoints(path / "checkpoints")
    if not checkpoints and outcome["status"] != "diverged":
        raise BadInput(f"--run {path}: no checkpoints in {path / 'checkpoints'}")
    unrecorded = sorted(set(checkpoints) - {int(step) for step in record["checkpoints_sha256"]})
    if unrecorded:
        raise BadInput(f"{checkpoint_path(path / 'checkpoints', unrecorded[0])}: not written by the run's training "
                       f"(no checksum in run.json); delete it")  # fmt: skip
    data = config.dataset()
    return Run(path, config, data, checkpoints, outcome, record)


RETRAIN = "rerun its training (`snakemake --forcerun train whole_run`, or `grokslt train` with the run's settings)"


def run_record(path: Path) -> dict:
    """run.json as training wrote it (its own checksum, `record_digest`, holds), in training or finished."""
    meta = path / "run.json"
    if not meta.exists():
        raise BadInput(f"--run {path}: no run.json there; expected a directory written by `grokslt train`")
    try:
        record = json.loads(meta.read_text())
        TrainConfig(**record["config"])
        missing = {"status", "step"} - set(record["outcome"])
        if missing:
            raise KeyError(f"outcome.{min(missing)}")
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise BadInput(f"{meta}: not a run record of `grokslt train` ({error}); train the run again") from None
    if not {"record_sha256", "checkpoints_sha256", "init_sha256"} <= set(record):
        raise BadInput(f"{meta}: written by an older grokslt, without checksums; {RETRAIN}: it records them")
    if record["record_sha256"] != record_digest(record):
        raise BadInput(
            f"{meta}: edited since training wrote it (its checksum differs), and its settings define the run's data; "
            f"restore it, or to train other settings put them in the config and delete {path} (or use another --out)"
        )
    return record


def verified_record(path: Path) -> dict:
    """run.json (`run_record`) of a run whose training finished, whose log is the one training wrote (its
    checksum in the record) and whose every logged checkpoint is on disk; anything else is refused, naming
    the file and what to run, so that no later stage reads a half-trained or edited run."""
    meta, record = path / "run.json", run_record(path)
    config, status, step = TrainConfig(**record["config"]), record["outcome"]["status"], record["outcome"]["step"]
    if status == "training":
        raise BadInput(
            f"{meta}: training stopped at step {step} of {config.max_steps} without finishing (killed?); "
            f"{RETRAIN}: it resumes from resume.pt"
        )
    log_file = path / "train_log.csv"
    if not log_file.exists():
        raise BadInput(f"{log_file}: missing; {RETRAIN}: it rewrites the log from resume.pt")
    if record.get("log_sha256") != file_sha256(log_file):
        reason = "differs from the log training wrote" if record.get("log_sha256") else "has no checksum in run.json"
        raise BadInput(f"{log_file}: {reason}; {RETRAIN}: it rewrites the log and record from resume.pt")
    for logged in logged_checkpoints(log_file):
        if not checkpoint_path(path / "checkpoints", logged).exists():
            raise BadInput(
                f"{checkpoint_path(path / 'checkpoints', logged)}: logged at step {logged} but missing; "
                f"it cannot be restored: delete {path} and train the run again"
            )
    return record


def logged_checkpoints(log_file: Path) -> list[int]:
    """The steps of the log whose evaluation wrote a checkpoint (every one but a diverged one)."""
    with open(log_file, newline="") as handle:
        return [int(row["step"]) for row in csv.DictReader(handle) if row["diverged"] != "True"]


def thin_steps(log, available: list[int], every: int, dense_until: int = 0) -> list[int]:
    """Of the `available` checkpoints: every one of the dense early schedule (steps <= dense_until, there to
    resolve an early LLC peak), every `every`-th after it, the last, and those at and beside the transitions of
    the training `log` (memorisation, val 50% and 95%, saturation): dense where the LLC moves, sparse elsewhere."""
    from grokslt.training.metrics import transition_steps

    if every < 1:
        raise BadInput(f"--every {every}: expected a positive integer")
    if not available:
        return []
    log = log[log["step"].isin(available)]
    regular = [step for step in available if step > dense_until]
    chosen = {step for step in available if step <= dense_until} | set(regular[::every]) | {available[-1]}
    for step in transition_steps(log["step"], log["train_acc"], log["val_acc"]).values():
        if step is not None:
            i = available.index(step)
            chosen |= set(available[max(0, i - 1) : i + 2])
    return sorted(chosen)


def estimated_steps(log_file: Path, every: int = 1) -> list[int]:
    """The checkpoints of a finished run whose LLC an LLC trajectory with `every` estimates (`thin_steps`;
    every one for 1), read from its training log and record alone, as the workflow plans its jobs."""
    import pandas as pd

    available = logged_checkpoints(log_file)
    if every == 1:
        return available
    dense_until = run_record(Path(log_file).parent)["config"].get("dense_until", 0)
    return thin_steps(pd.read_csv(log_file), available, every, dense_until)


def decisive_steps(run: Run, llc_peak: bool = True) -> dict[str, int]:
    """The checkpoints where the story turns, by name: memorisation, val 50%, val 95% (where reached), the
    last, and (with `llc_peak`, where the run's loss_data.csv has LLCs) the LLC's largest estimate."""
    import pandas as pd

    from grokslt.training.metrics import transition_steps

    available = list(run.checkpoints)
    if not available:
        raise BadInput(f"--run {run.path}: no checkpoints")
    log = pd.read_csv(run.path / "train_log.csv")
    marks = transition_steps(log["step"], log["train_acc"], log["val_acc"])
    names = {"memorisation_step": "memorisation", "grok_step_50": "val_50", "grok_step_95": "val_95"}
    chosen = {name: marks[key] for key, name in names.items() if marks[key] in run.checkpoints}
    table = run.path / "loss_data.csv"
    if llc_peak and table.exists():
        llc = read_table(table, LOSS_DATA, run.identity, available).dropna(subset=["llc"])
        llc = llc[llc["step"].isin(available)]
        if len(llc):
            chosen["llc_peak"] = int(llc.loc[llc["llc"].idxmax(), "step"])
    return chosen | {"stop": available[-1]}


def select_run_steps(run: Run, steps: str | None, chunk: str | None, every: int | None = None) -> list[int]:
    """The checkpoints one job works on (`select_steps`, `decisive_steps` for steps 'transitions', the last for
    'final', or a chunk of `estimated_steps` with `every`); a step at which the run diverged is refused."""
    if every is not None:
        if steps is not None:
            raise BadInput("--every: give it without --steps")
        return select_steps(estimated_steps(run.path / "train_log.csv", every), None, chunk)
    if steps == "final":
        if chunk is not None:
            raise BadInput("--steps final: give it without --chunk")
        return [max(run.checkpoints)] if run.checkpoints else []
    if steps == "transitions":
        if chunk is not None:
            raise BadInput("--steps transitions: give it without --chunk")
        return sorted(set(decisive_steps(run).values()))
    wanted = parse_steps(steps)
    if wanted is not None and run.diverged_step in wanted:
        raise BadInput(f"--steps {run.diverged_step}: training diverged there ({run.outcome['reason']}); no checkpoint")
    selected = select_steps(list(run.checkpoints), wanted, chunk)
    if run.diverged_step is not None:
        log.warning(
            "%s: training diverged at step %d; %d checkpoints before it", run.path, run.diverged_step, len(selected)
        )
    return selected


def parse_chunk(text: str) -> tuple[int, int]:
    """'i/n' -> (i, n) with 0 <= i < n."""
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise ValueError(f"--chunk {text!r}: expected i/n with integers 0 <= i < n") from None
    if not 0 <= index < count:
        raise ValueError(f"--chunk {text!r}: expected i/n with integers 0 <= i < n")
    return index, count


def select_steps(available: list[int], steps: list[int] | None = None, chunk: str | None = None) -> list[int]:
    """The requested steps (all must exist), or chunk i of n contiguous blocks of the sorted steps."""
    if steps is not None and chunk is not None:
        raise ValueError("--steps and --chunk: give one or the other")
    if steps is not None:
        missing = sorted(set(steps) - set(available))
        if missing:
            have = f"have {available[0]}..{available[-1]}" if available else "the run has none"
            raise BadInput(f"--steps {missing}: no such checkpoints ({have})")
        return sorted(steps)
    if chunk is None:
        return list(available)
    index, count = parse_chunk(chunk)
    size = len(available)
    if size and count > size:
        raise BadInput(f"--chunk {chunk}: {count} chunks of the run's {size} checkpoints; expected at most {size}")
    return available[index * size // count : (index + 1) * size // count]


def chunk_names(checkpoints: int, chunk_size: int) -> list[str]:
    """The jobs `chunk{i}of{n}` (`--chunk i/n`) that split `checkpoints` into blocks of at most `chunk_size`."""
    n = max(1, math.ceil(checkpoints / chunk_size))
    return [f"chunk{i}of{n}" for i in range(n)]


def parse_steps(text: str | None) -> list[int] | None:
    """'100,200' -> [100, 200]; empty lists and repeated steps are refused."""
    if text is None:
        return None
    try:
        steps = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise BadInput(f"--steps {text!r}: expected comma-separated integers") from None
    if not steps:
        raise BadInput(f"--steps {text!r}: expected at least one step (leave --steps out for all checkpoints)")
    repeated = sorted({step for step in steps if steps.count(step) > 1})
    if repeated:
        raise BadInput(f"--steps {text!r}: step(s) {repeated} given more than once")
    return steps


def run_seed(seed: int, config) -> int:
    """A job's seed made the run's own: a 63-bit seed from `seed` and every training setting of the run, so that runs a
    claim compares (seeds, widths, learning rates) draw independent sampler noise, while one run estimated twice
    draws the same."""
    settings = json.dumps(dataclasses.asdict(config), sort_keys=True).encode()
    words = np.frombuffer(hashlib.sha256(settings).digest(), dtype=np.uint32).tolist()
    return int(np.random.SeedSequence([seed, *words]).generate_state(1, dtype=np.uint64)[0] >> 1)


def step_seed(seed: int, step: int, attempt: int = 0) -> int:
    """A 63-bit seed for the random draws made at one checkpoint, from a job's seed and the step, so
    that a checkpoint's result does not depend on which other checkpoints share its job; a later `attempt` at the
    same checkpoint (a retried estimate) draws noise of its own."""
    entropy = [seed, step, attempt] if attempt else [seed, step]
    return int(np.random.SeedSequence(entropy).generate_state(1, dtype=np.uint64)[0] >> 1)

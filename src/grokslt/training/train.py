"""Training with periodic evaluation, atomic checkpoints and exact resume.

One "epoch" of the paper is one optimizer step on one fresh random batch (the authors' loop calls
`next(iter(DataLoader(train, shuffle=True)))` every step). Every `eval_every` steps the run evaluates
the full train and validation sets, writes a checkpoint, its resume state and the training log. A
run killed at any point and started again with the same settings continues from its last resume
state and writes a byte-identical log.

A run started again with other stopping settings (a larger `max_steps`, another early-stop rule)
continues too, where its log is what the new settings would have written so far; any other change
is refused. A run whose training loss is not finite or exceeds DIVERGENCE_FACTOR times the loss of
the zero function stops there: the evaluation is logged with `diverged` set, no checkpoint is
written for it, and `run.json` records the outcome.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import platform
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from grokslt import __version__
from grokslt.artefacts import record_digest
from grokslt.errors import BadInput
from grokslt.io import (
    checkpoint_path,
    file_sha256,
    list_checkpoints,
    load_torch,
    save_checkpoint,
    save_params,
    save_torch,
    write_csv,
    write_json,
)
from grokslt.settings import check_fields, setting
from grokslt.training.data import DatasetSettings, ModularArithmetic
from grokslt.training.families import ACTIVATIONS, FAMILY_SETTINGS, MODELS, Network, NetworkModule
from grokslt.training.loss import LOSSES, authors_logged_loss, sample_loss, zero_output_loss
from grokslt.training.metrics import accuracy, offset_corrected_accuracy
from grokslt.training.model import QuadraticNet, centred_loss_and_grad
from grokslt.training.optimizers import KINDS as OPTIMIZERS
from grokslt.training.optimizers import FusedOptimizer

log = logging.getLogger(__name__)

LOG_COLUMNS = [
    "step",
    "samples_seen",
    "train_loss",
    "val_loss",
    "train_acc",
    "val_acc",
    "train_acc_offset",
    "val_acc_offset",
    "train_loss_authors",
    "val_loss_authors",
    "diverged",
]
RESUME_FILE = "resume.pt"
INIT_FILE = "init.safetensors"  # the network before training
# Training has diverged when its loss exceeds this multiple of the zero function's loss (about
# 0.5 (1 - 1/p)): a network that fits nothing has loss 1x, and no run that recovers was seen above 10x.
DIVERGENCE_FACTOR = 1e3
STOPPING_SETTINGS = ("max_steps", "early_stop", "early_stop_threshold", "early_stop_patience")


@dataclass(frozen=True)
class TrainConfig(DatasetSettings):
    """Every setting of a training run (appendix H.1's baseline by default), beside the dataset's."""

    model: str = setting("quadratic", "network family (grokslt.training.families): quadratic | mlp | transformer",
                         choices=MODELS)  # fmt: skip
    loss: str = setting("centred_mse", "training loss: centred_mse (the paper's) | cross_entropy", choices=LOSSES)
    hidden: int = setting(1024, "hidden width K (the transformer's MLP width)", minimum=1)
    embed: int | None = setting(None, "embedding width (mlp: 12, transformer's d_model: 64 when not given)", minimum=1)
    activation: str | None = setting(None, "the mlp's activation (gelu when not given)", choices=ACTIVATIONS)
    heads: int | None = setting(None, "the transformer's attention heads (4 when not given)", minimum=1)
    optimizer: str = setting("adam", "adam | adamw | sgd, with their own weight decay", choices=OPTIMIZERS)
    lr: float = setting(1e-4, "learning rate", exclusive_minimum=0)
    weight_decay: float = setting(1e-5, "weight decay of the optimizer", minimum=0)
    momentum: float = setting(0.0, "momentum (sgd only)", minimum=0)
    batch_size: int = setting(128, "samples per training step", minimum=1)
    max_steps: int = setting(100_000, "training steps at most", minimum=1)
    eval_every: int = setting(100, "steps between evaluations (each writes a checkpoint)", minimum=1)
    dense_until: int = setting(0, "also evaluate every dense_every steps up to this step (0: never)", minimum=0)
    dense_every: int = setting(10, "steps between the dense early evaluations", minimum=1)
    early_stop: bool = setting(True, "stop once early_stop_patience regular evaluations have val acc >= threshold")
    early_stop_threshold: float = setting(
        0.99, "validation accuracy that counts toward early stop", exclusive_minimum=0, maximum=1
    )
    early_stop_patience: int = setting(10, "evaluations in a row at the threshold that stop training", minimum=1)

    def check(self) -> None:
        super().check()
        family = MODELS[self.model]
        for key in FAMILY_SETTINGS:
            if getattr(self, key) is not None and key not in family.defaults:
                owners = [name for name, other in MODELS.items() if key in other.defaults]
                raise BadInput(f"{key} = {getattr(self, key)!r}: a setting of model {' and '.join(owners)}, "
                               f"not of model {self.model}")  # fmt: skip
        settings = dict(Network.of(self).settings)
        if self.model == "transformer" and settings["embed"] % settings["heads"]:
            raise BadInput(f"embed = {settings['embed']}: the transformer's width must be divisible by its heads "
                           f"({settings['heads']})")  # fmt: skip
        if self.momentum and self.optimizer != "sgd":
            raise BadInput(f"momentum = {self.momentum!r}: only the sgd optimizer takes momentum")
        if self.eval_every > self.max_steps:
            raise BadInput(
                f"eval_every = {self.eval_every} > max_steps = {self.max_steps}: training would end before its "
                "first evaluation; expected eval_every <= max_steps"
            )

    @property
    def most_checkpoints(self) -> int:
        """The checkpoints the run writes if it trains to max_steps (early stopping writes fewer): the regular and
        the dense evaluations, and the last step where it is neither."""
        regular = range(self.eval_every, self.max_steps + 1, self.eval_every)
        dense = range(self.dense_every, min(self.dense_until, self.max_steps) + 1, self.dense_every)
        return len({*regular, *dense, self.max_steps})

    def evaluates_at(self, step: int) -> bool:
        """Whether the run evaluates (and writes a checkpoint) after `step` steps."""
        return step % self.eval_every == 0 or (step <= self.dense_until and step % self.dense_every == 0)


class AuthorsBatchSampler:
    """The batch of `next(iter(DataLoader(train, batch_size, shuffle=True)))`, drawn from `generator`.

    A new DataLoader iterator draws two int64 values from the RNG (the iterator's base seed, then the
    RandomSampler's seed), seeds a fresh generator with the second and takes the head of a random
    permutation. Reproducing that keeps our batches identical to the authors' loop.
    """

    def __init__(self, n: int, batch_size: int, generator: torch.Generator):
        self.n, self.batch_size, self.generator = n, batch_size, generator

    def _draw_int64(self) -> int:
        return int(torch.empty((), dtype=torch.int64).random_(generator=self.generator))

    def __call__(self) -> torch.Tensor:
        self._draw_int64()  # the iterator's base seed, unused without workers
        permutation_rng = torch.Generator().manual_seed(self._draw_int64())
        return torch.randperm(self.n, generator=permutation_rng)[: self.batch_size]


def build_optimizer(config: TrainConfig, params) -> FusedOptimizer:
    """The optimizer with its own (coupled, for Adam and SGD) weight decay.

    The fused kernels compute the same update as the default ones in fewer passes over memory
    (Adam: 0.15 ms instead of 0.38 ms per step for the baseline model on one CPU thread).
    """
    return FusedOptimizer(params, config.optimizer, config.lr, config.weight_decay, config.momentum)


@torch.no_grad()
def evaluate(model, data: ModularArithmetic, network: Network) -> dict[str, float]:
    """Losses (the run's own, and the authors' logged form of the centred loss) and accuracies on the full
    train and validation sets."""
    params = model.params()
    outputs = {}
    for which in ("train", "val"):
        a, b, c = data.subset(which)
        outputs[which] = (network.forward(params, a, b), c)
    offset = outputs["train"][0].mean(dim=0)
    row = {}
    for which, (pred, c) in outputs.items():
        target = torch.nn.functional.one_hot(c, data.p).to(pred.dtype)
        row[f"{which}_loss"] = sample_loss(network.loss, pred, c).item()
        row[f"{which}_acc"] = accuracy(pred, c)
        row[f"{which}_acc_offset"] = offset_corrected_accuracy(pred, c, offset)
        row[f"{which}_loss_authors"] = authors_logged_loss(pred, target).item()
    return row


def should_stop(rows: list[dict], config: TrainConfig) -> bool:
    """The authors' rule over the regular evaluations: a dense early schedule adds LLC resolution, not
    evaluations that count toward patience (their logs, every eval_every steps, stop where this does)."""
    regular = [r for r in rows if r["step"] % config.eval_every == 0]
    recent = regular[-config.early_stop_patience :]
    return (
        config.early_stop
        and len(recent) == config.early_stop_patience
        and all(r["val_acc"] >= config.early_stop_threshold for r in recent)
    )


def zero_function_loss(data: ModularArithmetic, loss: str = "centred_mse") -> float:
    """The training loss of the network that outputs zero everywhere (every family's with every weight zero): the
    scale of divergence, and of locality for every LLC estimate, whatever weight group or data subset it samples."""
    return zero_output_loss(loss, data.subset("train")[2], data.p)


def has_diverged(train_loss: float, zero_loss: float) -> bool:
    return not math.isfinite(train_loss) or train_loss > DIVERGENCE_FACTOR * zero_loss


def run_metadata(config: TrainConfig, data: ModularArithmetic, outcome: dict) -> dict:
    from grokslt.runtime import subnormal_mode

    return {
        "config": dataclasses.asdict(config),
        "dataset": {"p": data.p, "task": data.task, "n_train": data.n_train, "n_val": len(data.val_idx)},
        "n_params": Network.of(config).n_params(),
        "outcome": outcome,
        "runtime": {"subnormals": subnormal_mode()},
        "versions": versions(),
    }


def write_record(trainer: Trainer) -> dict:
    """run.json: settings, outcome, the checksums of the log and of every checkpoint as written, by which
    later stages know that they read what this training wrote, and the checksum of the record itself
    (`record_digest`, its settings included). Returns the outcome."""
    outcome = trainer.outcome()
    record = run_metadata(trainer.config, trainer.data, outcome)
    log_file = trainer.out / "train_log.csv"
    record["log_sha256"] = file_sha256(log_file) if log_file.exists() else None
    record["checkpoints_sha256"] = {str(step): digest for step, digest in sorted(trainer.checksums.items())}
    record["init_sha256"] = trainer.init_checksum
    record["record_sha256"] = record_digest(record)
    write_json(trainer.out / "run.json", record)
    return outcome


def versions() -> dict[str, str]:
    return {
        "grokslt": __version__,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": np.__version__,
    }


class Trainer:
    """The state of one run: model, optimizer, batch RNG, step and log rows."""

    def __init__(self, config: TrainConfig, out_dir: str | Path, data: ModularArithmetic | None = None):
        check_fields(config)
        self.config = config
        self.out = Path(out_dir)
        self.data = config.dataset()
        if data is not None and not data.same_split(self.data):
            raise BadInput(
                f"dataset with p = {data.p} and {data.n_train} training pairs is not the split of the run's "
                f"settings (p = {config.p}, train_frac = {config.train_frac}, seed = {config.seed}, "
                f"split = {config.split}, task = {config.task})"
            )
        torch.manual_seed(config.seed)
        self.network = Network.of(config)
        if config.model == "quadratic":
            self.model = QuadraticNet(config.p, config.hidden)
        else:
            self.model = NetworkModule(self.network, self.network.init())
        batch_rng = torch.Generator()
        batch_rng.set_state(torch.get_rng_state())  # the authors draw batches from the global RNG
        self.sampler = AuthorsBatchSampler(self.data.n_train, config.batch_size, batch_rng)
        self.optimizer = build_optimizer(config, self.model.parameters())
        self.step = 0
        self.checksums: dict[int, str] = {}  # {step: SHA-256 of its checkpoint, as written}
        self.init_checksum: str | None = None  # of init.safetensors
        self.rows: list[dict] = []
        self.finished = False
        self.train_a, self.train_b, self.train_c = self.data.subset("train")
        self.zero_loss = zero_function_loss(self.data, config.loss)

    # -- persistence -------------------------------------------------------------------------------
    def state(self) -> dict:
        return {
            "config": dataclasses.asdict(self.config),
            "step": self.step,
            "params": self.model.params(),
            "optimizer": self.optimizer.state_dict(),
            "batch_rng": self.sampler.generator.get_state(),
            "rows": self.rows,
            "finished": self.finished,
            "checksums": self.checksums,
            "init_checksum": self.init_checksum,
        }

    def restore(self, state: dict) -> None:
        """Continue from a saved state, under this trainer's settings where they differ only in when
        to stop and the saved log is what they would have written (`extension_problem`)."""
        problem = extension_problem(TrainConfig(**state["config"]), self.config, state["rows"], state["step"])
        if problem:
            raise BadInput(f"{self.out / RESUME_FILE}: {problem}; use another --out directory or the run's settings")
        self.step = state["step"]
        self.model.load_params(state["params"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.sampler.generator.set_state(state["batch_rng"])
        self.rows = state["rows"]
        self.finished = state["finished"]
        self.checksums = state.get("checksums") or self.legacy_checksums()
        self.init_checksum = state.get("init_checksum") or file_sha256(self.out / INIT_FILE)
        if self.finished and not self.diverged and not should_stop(self.rows, self.config):
            self.finished = self.step >= self.config.max_steps
        if not self.finished and self.rows and not self.config.evaluates_at(self.rows[-1]["step"]):
            # the closing evaluation of a run that reached its old max_steps between evaluations
            step = self.rows.pop()["step"]
            checkpoint_path(self.out / "checkpoints", step).unlink(missing_ok=True)
            self.checksums.pop(step, None)

    def legacy_checksums(self) -> dict[int, str]:
        """The checksums of a run saved before they were recorded, taken from its checkpoints on disk."""
        log.warning("%s: no checkpoint checksums in %s (an older grokslt); recording those on disk", self.out,
                    RESUME_FILE)  # fmt: skip
        return {step: file_sha256(path) for step, path in list_checkpoints(self.out / "checkpoints").items()}

    @property
    def diverged(self) -> bool:
        return bool(self.rows) and self.rows[-1]["diverged"]

    def outcome(self) -> dict:
        if not self.finished:
            return {"status": "training", "step": self.step}
        if self.diverged:
            loss = self.rows[-1]["train_loss"]
            reason = f"train loss {loss:.3g} > {DIVERGENCE_FACTOR:g} x the zero function's {self.zero_loss:.3g}"
            return {"status": "diverged", "step": self.step, "reason": reason}
        return {"status": "early_stop" if should_stop(self.rows, self.config) else "max_steps", "step": self.step}

    def save(self) -> None:
        if self.rows and self.rows[-1]["step"] == self.step and not self.diverged:
            self.checksums[self.step] = save_checkpoint(self.out / "checkpoints", self.step, self.model.params())
        save_torch(self.out / RESUME_FILE, self.state())
        write_csv(self.out / "train_log.csv", self.rows, LOG_COLUMNS)
        write_record(self)  # a run killed later says how far it got

    # -- training ----------------------------------------------------------------------------------
    def train_step(self) -> None:
        batch = self.sampler()
        if not self.network.paper_model:
            a, b, c = self.train_a[batch], self.train_b[batch], self.train_c[batch]
            self.optimizer.zero_grad(set_to_none=True)
            sample_loss(self.config.loss, self.model(a, b), c).backward()
            self.optimizer.step()
            self.step += 1
            return
        W, V = self.model.W, self.model.V
        _, grad_W, grad_V = centred_loss_and_grad(
            W.detach(),
            V.detach(),
            self.train_a[batch],
            self.train_b[batch],
            self.train_c[batch],
        )
        W.grad, V.grad = grad_W, grad_V
        self.optimizer.step()
        self.step += 1

    def log_evaluation(self) -> dict:
        row = {
            "step": self.step,
            "samples_seen": self.step * min(self.config.batch_size, self.data.n_train),
            **evaluate(self.model, self.data, self.network),
        }
        row["diverged"] = has_diverged(row["train_loss"], self.zero_loss)
        self.rows.append(row)
        return row


def extension_problem(saved: TrainConfig, wanted: TrainConfig, rows: list[dict], step: int) -> str | None:
    """Why a run saved with settings `saved` (log `rows`, at `step`) cannot continue under `wanted`, or
    None: only the stopping settings may differ, and the saved log must be what `wanted` would have
    written so far (no earlier stop under its rule, not past its max_steps)."""
    changed = [
        f"{f.name} {getattr(saved, f.name)!r} -> {getattr(wanted, f.name)!r}"
        for f in dataclasses.fields(TrainConfig)
        if f.name not in STOPPING_SETTINGS and getattr(saved, f.name) != getattr(wanted, f.name)
    ]
    if changed:
        return f"was written with other settings ({', '.join(changed)})"
    if step > wanted.max_steps:
        return f"has trained {step} steps, past max_steps = {wanted.max_steps}"
    for end in range(1, len(rows)):
        if should_stop(rows[:end], wanted):
            return f"would have stopped early at step {rows[end - 1]['step']} under the new early-stop rule"
    return None


def train(
    config: TrainConfig, out_dir: str | Path, progress: bool | None = None, data: ModularArithmetic | None = None
) -> Trainer:
    """Train (or resume) the run in `out_dir` until early stop or `max_steps`; `data` defaults to the
    split that the config describes."""
    trainer = Trainer(config, out_dir, data)
    resume = trainer.out / RESUME_FILE
    if resume.exists():
        trainer.restore(load_torch(resume))
        log.info("resuming %s at step %d", trainer.out, trainer.step)
    else:
        trainer.out.mkdir(parents=True, exist_ok=True)
        trainer.init_checksum = save_params(trainer.out / INIT_FILE, trainer.model.params())
    if trainer.finished:
        # A finished run trained again (a forced rerun deletes the log and record first): its log and
        # record are rewritten from the saved state, the same bytes as when it finished.
        save_torch(resume, trainer.state())  # it now records the new stopping settings
        write_csv(trainer.out / "train_log.csv", trainer.rows, LOG_COLUMNS)
        write_record(trainer)
        return trainer
    write_record(trainer)
    show_bar = sys.stderr.isatty() if progress is None else progress
    bar = _progress_bar(config.max_steps, trainer.step, show_bar)
    while trainer.step < config.max_steps:
        trainer.train_step()
        bar.update(1)
        if config.evaluates_at(trainer.step):
            row = trainer.log_evaluation()
            trainer.finished = row["diverged"] or should_stop(trainer.rows, config)
            trainer.save()
            if not show_bar:
                log.info(_describe(row))
            if trainer.finished:
                break
    bar.close()
    if not trainer.finished:
        if not trainer.rows or trainer.rows[-1]["step"] != trainer.step:
            trainer.log_evaluation()
        trainer.finished = True
        trainer.save()
    outcome = write_record(trainer)
    if outcome["status"] == "diverged":
        log.warning("%s: training diverged at step %d (%s)", trainer.out, trainer.step, outcome["reason"])
    else:
        log.info("%s: %s at step %d", trainer.out, outcome["status"].replace("_", " "), trainer.step)
    return trainer


def _describe(row: dict) -> str:
    return (
        f"step {row['step']}: train loss {row['train_loss']:.4g} acc {row['train_acc']:.3f} | "
        f"val loss {row['val_loss']:.4g} acc {row['val_acc']:.3f}"
    )


def _progress_bar(total: int, initial: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, disable=not enabled, desc="train", unit="step")

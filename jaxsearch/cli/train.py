"""``jaxsearch train``: AlphaZero-style training by self-play with the batched search."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Sequence

from jaxsearch.app import registry
from jaxsearch.enums import SearchPolicy
from jaxsearch.enums import TrainPreset
from jaxsearch.cli.common import (CommandError, check_plot_file, check_writable, game_name,
                                  positive_float, positive_int, prng_seed)


def add_parser(commands) -> None:
  """The ``train`` verb's arguments, on the subparsers ``commands``."""
  train = commands.add_parser(
      "train", help="AlphaZero-style training: self-play with the batched search",
      description="Trains a Flax network by self-play with the batched search (one search "
                  "per move for a batch of games), evaluates it against exact oracles, and "
                  "checkpoints it (orbax) so that --resume continues exactly.")
  trainable = registry.names("training")
  train.add_argument("game", type=game_name(trainable),
                     help=f"{', '.join(trainable)}, or pgx:ENV_ID (any pgx environment, e.g. "
                          "pgx:othello; needs pgx)")
  train.add_argument("--minutes", type=positive_float, default=None,
                     help="wall-clock budget, imports and compilation included; stops at a "
                          "step boundary, then checkpoints and evaluates (default: 4.5 "
                          "tictactoe, 30 connect_four, unless --steps; --steps alone: no "
                          "time limit)")
  train.add_argument("--steps", type=positive_int, default=None,
                     help="stop after this many steps in total (deterministic)")
  train.add_argument("--policy", choices=[p.value for p in SearchPolicy], default=None,
                     help="self-play search (default: the game's preset, alphazero = PUCT + "
                          "root noise for tictactoe, gumbel for connect_four)")
  train.add_argument("--preset", choices=[p.value for p in TrainPreset], default=None,
                     help="the game's preset: cpu (a few cores) or accelerator (a GPU or TPU: "
                          "thousands of games a step, a bigger network, one device loop); "
                          "default: the one for the backend JAX runs on, or with --resume "
                          "the one the run used")
  train.add_argument("--out", default=None,
                     help="output directory: metrics.jsonl, checkpoints/, config.json, "
                          "training.png (default ./train_GAME)")
  train.add_argument("--resume", action="store_true",
                     help="continue the run in --out from its newest checkpoint")
  train.add_argument("--plot", action="store_true", help="write training.png in --out")
  train.add_argument("--json", action="store_true",
                     help="end with one JSON line: the final evaluation and the run's size")
  train.add_argument("--seed", type=prng_seed, default=None,
                     help="PRNG seed, 0 to 2**32 - 1 (default 0)")
  train.add_argument("--devices", type=int, default=None,
                     help="split self-play and updates over this many devices (default: one)")
  train.add_argument("--set", action="append", metavar="KEY=VALUE",
                     help="override a TrainConfig field (repeatable), e.g. --set "
                          "simulations=64 --set hidden=[128,128]")
  train.add_argument("--quiet", action="store_true", help="no progress bar")


def parse_overrides(pairs: Sequence[str], config_cls) -> dict:
  """``KEY=VALUE`` strings -> TrainConfig overrides, each value parsed as JSON when it can be
  (``hidden=[32,32]``, ``c=null``), else kept as a string."""
  names = {f.name for f in dataclasses.fields(config_cls)}
  out = {}
  for pair in pairs:
    key, sep, text = pair.partition("=")
    key = key.strip().replace("-", "_")
    if not sep or key not in names:
      raise ValueError(f"--set {pair!r}: expected KEY=VALUE with KEY one of "
                       f"{', '.join(sorted(names))}")
    try:
      value = json.loads(text)
    except json.JSONDecodeError:
      value = text
    out[key] = tuple(value) if isinstance(value, list) else value
  return out


def run(args: argparse.Namespace) -> int:
  """``jaxsearch train``; returns the exit status."""
  started = time.perf_counter()  # --minutes counts from here: imports and compiles included
  out = Path(args.out or f"train_{args.game.replace(':', '_')}")
  # Before the imports and the compilation: a run whose folder cannot be written would lose
  # everything it trained, and a plot that cannot be drawn would end it with an error.
  check_writable(out, "--out", folder=True)
  if args.plot:
    check_plot_file(None, "--plot", "jaxsearch train")
  from rich.console import Console

  from jaxsearch.app import training
  from jaxsearch.train import checkpoint as checkpoint_lib

  config = run_config(args, training, out)
  minutes = args.minutes
  if minutes is None and args.steps is None:
    minutes = training.default_minutes(args.game)
  if not args.resume and (out / "checkpoints").is_dir() and any((out / "checkpoints").iterdir()):
    raise CommandError(f"jaxsearch train: {out} already holds checkpoints; pass --resume to "
                       f"continue that run, or choose another --out")
  console = Console(stderr=True)
  try:
    trainer = training.trainer(config, out_dir=out)
    summary = trainer.run(steps=args.steps or 0, minutes=minutes or 0.0, resume=args.resume,
                          progress=not args.quiet, plot=args.plot, console=console,
                          started=started)
  except checkpoint_lib.CheckpointLocked as error:  # a fresh run is refused too, not a resume
    raise CommandError(f"jaxsearch train: {error}") from None
  except checkpoint_lib.CheckpointError as error:
    raise CommandError(f"jaxsearch train: cannot resume: {error}") from None
  except KeyboardInterrupt:
    print(f"\nInterrupted; the last completed step is checkpointed in {out}: add --resume "
          f"to continue.", file=sys.stderr)
    return 130
  shown = {k: v for k, v in summary.items() if k not in ("out_dir",)}
  resumed = (f" (resumed from step {summary['resumed_from']}: corrupt checkpoints skipped: "
             f"{', '.join(map(str, summary['skipped_checkpoints']))})"
             if summary.get("skipped_checkpoints") else "")
  preset = f" ({summary['preset']} preset)" if summary.get("preset") else ""
  rate = (f" ({summary['positions_per_s']:.0f} positions/s after the first "
          f"{summary['first_interval_s']:.1f} s)" if summary.get("positions_per_s") else "")
  print(f"{config.game}{preset}: {summary['steps']} steps{resumed}, {summary['positions']} "
        f"self-play positions{rate}, {summary['updates']} updates in "
        f"{summary['minutes']:.2f} min; final evaluation: "
        + ", ".join(f"{k}={v}" for k, v in shown.items()
                    if k not in ("steps", "positions", "updates", "minutes", "games", "plot",
                                 "skipped_checkpoints", "resumed_from", "preset",
                                 "positions_per_s", "updates_per_s", "first_interval_s",
                                 "device_peak_bytes"))
        + f". Metrics: {out / 'metrics.jsonl'}"
        + (f", plot: {summary['plot']}" if summary.get("plot") else ""))
  if args.json:
    print(json.dumps(summary))
  return 0


def run_config(args: argparse.Namespace, training, out: Path):
  """The run's ``TrainConfig``: the game's preset (:mod:`jaxsearch.app.training`; ``--preset``,
  else with ``--resume`` the one ``out`` recorded, else the backend's) with the command line's
  overrides."""
  from jaxsearch import sharding
  from jaxsearch.train.config import ConfigError, TrainConfig
  try:
    overrides = parse_overrides(args.set or [], TrainConfig)
    preset = args.preset or (recorded_preset(out) if args.resume else None)
    if preset and "preset" not in overrides:
      overrides["preset"] = preset
    if args.seed is not None:  # else the preset's, or --set seed=S
      overrides["seed"] = args.seed
    if args.policy:
      overrides["policy"] = args.policy
    if args.devices is not None:
      overrides["devices"] = args.devices
    config = training.preset(args.game, **overrides)
    sharding.resolve_devices(config.devices or None)  # a clear error before building
  except ConfigError as error:  # checked before anything is built: name the flag that set it
    flag = setting_flags(args).get(error.field)
    raise CommandError(f"jaxsearch train: {flag + ': ' if flag else ''}{error}") from None
  except (TypeError, ValueError, ImportError) as error:
    raise CommandError(f"jaxsearch train: {error}") from None
  return config


def recorded_preset(out: Path):
  """The preset a run in ``out`` recorded in its ``config.json`` (``"cpu"`` for a run from
  before presets were recorded: every such run had the CPU sizes); ``None`` without a
  readable one."""
  try:
    fields = json.loads((out / "config.json").read_text())
  except (OSError, ValueError):
    return None
  if not isinstance(fields, dict):
    return None
  return fields.get("preset") or TrainPreset.CPU.value


def setting_flags(args: argparse.Namespace) -> dict:
  """Each configuration field the command line set -> the flag as typed (``--set
  learning_rate=nan``, ``--devices 3``); the last ``--set`` of a field wins, as in
  :func:`parse_overrides`."""
  flags = {}
  for pair in args.set or []:
    flags[pair.partition("=")[0].strip().replace("-", "_")] = f"--set {pair}"
  if args.seed is not None:
    flags["seed"] = f"--seed {args.seed}"
  if args.preset:
    flags["preset"] = f"--preset {args.preset}"
  if args.policy:
    flags["policy"] = f"--policy {args.policy}"
  if args.devices is not None:
    flags["devices"] = f"--devices {args.devices}"
  return flags

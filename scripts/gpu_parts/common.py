"""What every part of ``scripts/gpu_check.py`` shares: the checkout, the records, the
environment of the processes a part starts, and the command line run as a child."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def emit(record: dict) -> None:
  print(json.dumps(record), flush=True)


def child_env() -> dict:
  env = dict(os.environ)
  env["PYTHONPATH"] = os.pathsep.join(
      p for p in (env.get("PYTHONPATH"), str(ROOT)) if p)
  env["PYTHONUNBUFFERED"] = "1"
  return env


def run_cli(argv: list[str], cap: float, xla_flags: str = "",
            cache_dir: str | None = None) -> tuple[int, str, float]:
  """Runs ``python -m jaxsearch.cli ARGV`` under ``cap`` seconds (``xla_flags`` added to
  ``XLA_FLAGS``; ``cache_dir``: the CLI's compilation cache, else its default):
  ``(status, stdout, seconds)``; status 124 when the cap ended it."""
  env = child_env()
  if cache_dir is not None:
    env["JAXSEARCH_CACHE_DIR"] = cache_dir
  if xla_flags:
    env["XLA_FLAGS"] = f"{env.get('XLA_FLAGS', '')} {xla_flags}".strip()
  start = time.perf_counter()
  try:
    done = subprocess.run([sys.executable, "-m", "jaxsearch.cli", *argv], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=cap)
    status, stdout = done.returncode, done.stdout
    if status:
      sys.stderr.write(done.stderr[-4000:])
  except subprocess.TimeoutExpired as expired:
    status, stdout, stderr = 124, expired.stdout or "", expired.stderr or ""
    if isinstance(stdout, bytes):
      stdout = stdout.decode(errors="replace")
    if isinstance(stderr, bytes):
      stderr = stderr.decode(errors="replace")
    sys.stderr.write(f"cut at {cap:.0f} s; its last output:\n{stderr[-4000:]}")
  return status, stdout, time.perf_counter() - start


def last_json(stdout: str):
  for line in reversed(stdout.strip().splitlines()):
    try:
      return json.loads(line)
    except json.JSONDecodeError:
      continue
  return None


def run_script(name: str, argv: list[str], cap: float) -> dict:
  """Runs ``python scripts/NAME ARGV`` under ``cap`` seconds and returns the last JSON line
  it printed; a failure ends the part with the script's status (its stderr kept)."""
  done = subprocess.run([sys.executable, str(ROOT / "scripts" / name), *argv], cwd=ROOT,
                        env=child_env(), capture_output=True, text=True, timeout=cap)
  if done.returncode:
    sys.stderr.write(done.stderr[-4000:])
    raise SystemExit(done.returncode)
  return last_json(done.stdout) or {}

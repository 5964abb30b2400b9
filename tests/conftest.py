"""Shared fixtures: data paths and jitted searches reused across tests (compiles are costly)."""

import os
from pathlib import Path

import pytest

# Tests run on the CPU; keep XLA from grabbing both cores' worth of threads per process.
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false")

SHARED_DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


@pytest.fixture(scope="session")
def connect4_data() -> Path:
  path = SHARED_DATA / "connect4"
  if not path.is_dir():
    pytest.skip(f"Connect Four test positions not found at {path}")
  return path

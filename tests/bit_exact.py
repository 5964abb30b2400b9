"""``jit`` for tests that compare two different compiled programs bit for bit.

The suite runs on XLA's older CPU code generator, which compiles faster
(``tests/conftest.py``). That generator rounds some floats (``exp``, fused multiply-adds)
differently depending on how an expression was fused, so two programs that compute the same
value may differ in its last bit. The engine's bit-for-bit claims are about the code
generator users get, XLA's default: these tests compile with it.
"""

from __future__ import annotations

import os

import jax

# Empty where the suite already runs on the default generator.
DEFAULT_CODEGEN: dict = ({"xla_cpu_use_fusion_emitters": True}
                         if "xla_cpu_use_fusion_emitters=false" in os.environ.get("XLA_FLAGS", "")
                         else {})


def jit(fun, **kwargs):
  """``jax.jit(fun, **kwargs)`` compiled with XLA's default CPU code generator."""
  return jax.jit(fun, compiler_options=DEFAULT_CODEGEN or None, **kwargs)

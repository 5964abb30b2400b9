"""Side-by-side search throughput against mctx: the same as ``jaxsearch bench``.

    python scripts/bench_search.py [--quick] [--repeats N] [--only connect_four|hashed]

The benchmark itself lives in the package (:mod:`jaxsearch.app.bench`), so that it runs from an
installed wheel too.
"""

import sys

from jaxsearch.app import bench

if __name__ == "__main__":
  sys.exit(bench.main())

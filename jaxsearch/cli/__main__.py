"""``python -m jaxsearch.cli``: the ``jaxsearch`` command."""

import sys

from jaxsearch.cli import main

sys.exit(main())

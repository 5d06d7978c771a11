"""`python -m app …` is the `lats` command."""

import sys

from app.cli import main

sys.exit(main())

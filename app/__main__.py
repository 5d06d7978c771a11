"""`python -m app …` is the `lats` command."""

import sys

from app.cli.main import main

sys.exit(main())

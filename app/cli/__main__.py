"""`python -m app.cli` runs the `sizer` command."""

import sys

from app.cli import main

sys.exit(main())

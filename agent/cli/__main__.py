"""`python -m agent.cli`: the same as the `endstate` command."""

import sys

from agent.cli.main import main

sys.exit(main())

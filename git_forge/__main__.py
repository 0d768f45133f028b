"""``python -m git_forge`` is the same program as ``git-forge``."""

import sys

from git_forge.cli.main import main

sys.exit(main())

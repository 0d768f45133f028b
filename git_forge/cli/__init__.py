"""The command line: argparse wiring only.

One module per command group; each has ``register(subparsers)`` and handlers
that parse → call the core → render. Building the parser must stay cheap (it
runs on every invocation, the pre-launch hook and completion included), so CLI
modules import core modules inside their handlers, not at the top. A command
that only reads says so in its parser's defaults (``read_only=True``, or a function
of the parsed arguments when an option decides it, as ``recover --plan`` does): run
from a launcher, its success ends the process at once (``cli.main``).
"""

"""The command line: argparse wiring only.

One module per command group; each has ``register(subparsers)`` and handlers
that parse → call the core → render. Building the parser must stay cheap (it
runs on every invocation, the pre-launch hook and completion included), so CLI
modules import core modules inside their handlers, not at the top.
"""

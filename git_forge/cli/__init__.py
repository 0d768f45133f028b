"""The command line: parse, call the core, render.

One module per command group; each has ``register(subparsers)``, its part of the
parser, and handlers that take what the parser read (an ``argparse.Namespace``),
call the core and render what it returns (``output`` is the one terminal
boundary). Only the named command's parser is built (``cli.parser``), and CLI
modules import core modules inside their handlers: a command pays for its own
parser and code, not every command's (one of the measured boundaries, see
ARCHITECTURE.md).
"""

"""The command line: parse, call the core, render.

One module per command group; each has ``register(subparsers)``, its part of the
parser, and handlers that take what the parser read (an ``argparse.Namespace``),
call the core and render what it returns (``output`` is the one terminal
boundary). Only the named command's module is loaded and its parser built
(``cli.parser``): a command pays for its own parser and code, not every command's
(the parser-tree boundary, ARCHITECTURE.md). ``stop`` is the pre-launch check's
verdict on a tree that is not clean, apart from its clean answer (``preflight``).
"""

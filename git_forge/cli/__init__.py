"""The command line: parse, call the core, render.

One module per command group; each has ``register(parser)``, which builds its
command's parser (the line the overview gives it is in ``parser.COMMANDS``), and
handlers that take what the command line says (``args.Args``), call the core and
render what it returns (``output`` is the one terminal boundary). Only the named
command's module is loaded and its parser built (``cli.parser``): a command pays
for its own parser and code, not every command's, and the overview lists the
commands without loading any (the parser-tree boundary, ARCHITECTURE.md). A plain
command line is read without building a parser at all, from a table generated
from the parser (``args.read_plain``, ``command_lines``). ``stop``
is the pre-launch check's verdict on a tree that is not clean, apart from its clean
answer (``preflight``).
"""

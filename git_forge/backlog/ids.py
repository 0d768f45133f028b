"""What an item id may be: the one rule, for every reader of ids (the backlog's
checks in ``model``, and a TAB's candidates in ``completion_values``, which must
not load the backlog's rules to offer ids)."""

from __future__ import annotations

import re

#: Item ids are strings of 3 to 64 digits ("001"); they are never renumbered. The
#: bound is there because an id names files and refs (the item's worktree, its
#: ``forge/<id>`` branch, its prompt file): an unbounded one would be refused by the
#: file system (``file name too long``) in the middle of a run, not here.
#: ``\Z``, not ``$``: ``$`` also matches before a final newline, and "001\n" is no id.
MIN_ID_WIDTH = 3
MAX_ID_WIDTH = 64
ID_PATTERN = re.compile(rf"^[0-9]{{{MIN_ID_WIDTH},{MAX_ID_WIDTH}}}\Z")

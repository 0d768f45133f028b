"""git-forge: run autonomous coding-agent loops safely and recover them.

The version follows the runner contract level git-forge serves: feature-forge
treats a runner at or above 0.14.0 as able to thread an answer into the next
prompt (``backlog answer``), which git-forge can.
"""

__version__ = "0.14.0"

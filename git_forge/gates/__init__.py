"""Verification gates: the project's own checks, run after an agent says it is done.

What a gate's run means is decided here, apart from how it is run (the loop runs
each command under the supervisor): the failing tests a JUnit XML report names
(``junit``), and whether a result holds failures of the item's own or only those
the loop's starting tip already had (``verdict``).
"""

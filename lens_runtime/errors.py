"""User-facing errors: each one says what went wrong and how to fix it.

The CLI prints these without a stack trace; anything else is a bug and keeps its trace.
"""


class LensError(Exception):
    """A problem the user can fix; the message names it and the fix."""

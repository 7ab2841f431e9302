"""The failures a user can meet and fix, as opposed to bugs.

`BadInput` (exit status 2) is a bad argument, setting or input file; `ComputationFailed` (exit status
1) is a computation that ran and failed, such as SGLD chains that all diverged. The command line turns
these, and the operating system's errors about files (missing, unreadable, read-only, disk full), into
one line on stderr that names the file or key and what to do; anything else is a bug and keeps its
traceback.
"""

from __future__ import annotations

import errno
import os


class BadInput(ValueError):
    """An argument, setting or input file that cannot be used as given."""

    exit_status = 2


class ComputationFailed(RuntimeError):
    """A computation that ran on valid input and failed (it may succeed with other settings)."""

    exit_status = 1


# errno -> (exit status, what to do); anything else keeps the system's own message and status 1
_FILE_ERRORS = {
    errno.ENOSPC: (1, "no space left on the device: free some space and run again"),
    errno.EDQUOT: (1, "disk quota exceeded: free some space and run again"),
    errno.EROFS: (2, "read-only file system: choose an output path on a writable file system"),
    errno.EACCES: (2, "permission denied: choose another path or fix its permissions"),
    errno.EPERM: (2, "operation not permitted: choose another path or fix its permissions"),
    errno.ENOENT: (2, "no such file or directory"),
    errno.ENOTDIR: (2, "a parent of this path is a file, not a directory"),
    errno.EISDIR: (2, "is a directory, expected a file"),
    errno.EEXIST: (2, "a file is in the way, where a directory is expected: choose another path or move it"),
}


def describe_os_error(error: OSError) -> tuple[int, str]:
    """(exit status, one line) for an operating-system error about a file."""
    status, advice = _FILE_ERRORS.get(error.errno, (1, error.strerror or str(error)))
    name = error.filename
    if name is None:
        return status, advice
    if error.filename2 is not None:
        name = f"{name} -> {error.filename2}"
    return status, f"{os.fspath(name)}: {advice}"

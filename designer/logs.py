"""The log file: where Fabric Designer writes down what it did and what went wrong.

Every run (the GUI and each command) appends to ``fabric-designer.log`` in the user log
folder, ``platformdirs.user_log_dir("fabric-designer")`` (Linux:
``~/.local/state/fabric-designer/log``), or ``$FABRIC_DESIGNER_LOG_DIR`` when that is set
(tests, portable installs).  The file rotates at 1 MB and five old files are kept, so it
never grows without bound.

Modules log through ``logging.getLogger(__name__)``: everything under ``designer`` ends
up here.  INFO is for events a bug report needs (a file opened or saved, a solve and
its time, an autosave), DEBUG for detail that only ``--verbose`` shows.

No Qt here: the command line uses this too.
"""

from __future__ import annotations

import logging
import os
import platform
import sys
from logging.handlers import RotatingFileHandler
from pathlib import Path

import platformdirs

from designer import __version__

__all__ = [
    "FILE_ONLY",
    "LOG_DIR_ENV",
    "LOG_NAME",
    "log_dir",
    "log_file",
    "setup_logging",
    "teardown_logging",
]

APP = "fabric-designer"
LOG_DIR_ENV = "FABRIC_DESIGNER_LOG_DIR"
LOG_NAME = "fabric-designer.log"
MAX_BYTES = 1_000_000
BACKUPS = 5

FILE_FORMAT = "%(asctime)s %(process)d %(threadName)s %(levelname)s %(name)s: %(message)s"
STDERR_FORMAT = f"{APP}: %(levelname)s: %(name)s: %(message)s"

#: ``extra=`` for a record meant for the log file only, e.g. a traceback the terminal
#: shows anyway: ``log.error("...", exc_info=True, extra=FILE_ONLY)``.
FILE_ONLY = {"file_only": True}

#: Marks the handlers `setup_logging` added, so a second call replaces them.
_OURS = "_fabric_designer_handler"
#: Log files this process already said it cannot write (said once, not per call).
_reported: set[Path] = set()

log = logging.getLogger(__name__)


def log_dir() -> Path:
    """The folder of the log file: ``$FABRIC_DESIGNER_LOG_DIR`` or the platform's user log
    folder for ``fabric-designer`` (it may not exist yet).

    Examples
    --------
    >>> import os
    >>> os.environ["FABRIC_DESIGNER_LOG_DIR"] = "/tmp/fd-logs"
    >>> str(log_dir())
    '/tmp/fd-logs'
    >>> del os.environ["FABRIC_DESIGNER_LOG_DIR"]
    """
    folder = os.environ.get(LOG_DIR_ENV)
    if folder:
        return Path(folder)
    return Path(platformdirs.user_log_dir(APP, appauthor=False))


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is *now* (pytest and IDEs swap it), not the
    stream that was current when logging was set up."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)
        self.addFilter(lambda record: not getattr(record, "file_only", False))

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


class _LogFileHandler(RotatingFileHandler):
    """A rotating file that, when writing fails later (disk full, folder removed), says
    so once on stderr and then stays quiet instead of printing a traceback per record."""

    failed = False

    def handleError(self, record: logging.LogRecord) -> None:
        if self.failed:
            return
        self.failed = True
        err = sys.exc_info()[1]
        reason = getattr(err, "strerror", None) or err
        print(f"{APP}: warning: cannot write the log file {self.baseFilename}: {reason}; "
              "further log records are dropped", file=sys.stderr)


def _ours(logger: logging.Logger) -> list[logging.Handler]:
    return [h for h in logger.handlers if getattr(h, _OURS, False)]


def teardown_logging() -> None:
    """Remove and close the handlers `setup_logging` installed (tests, clean exit)."""
    logger = logging.getLogger("designer")
    for handler in _ours(logger):
        logger.removeHandler(handler)
        handler.close()


def log_file() -> Path | None:
    """The file being logged to, or None (logging not set up, or no writable folder)."""
    for handler in _ours(logging.getLogger("designer")):
        if isinstance(handler, RotatingFileHandler):
            return Path(handler.baseFilename)
    return None


def _open_file_handler(path: Path) -> _LogFileHandler:
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = _LogFileHandler(path, maxBytes=MAX_BYTES, backupCount=BACKUPS,
                              encoding="utf-8")
    handler.setFormatter(logging.Formatter(FILE_FORMAT))
    return handler


def setup_logging(verbose: bool = False, gui: bool = False) -> Path | None:
    """Send the ``designer`` loggers to the rotating log file (and to stderr as asked).

    Parameters
    ----------
    verbose : bool
        Log DEBUG too, to the file and to stderr (``--verbose``).
    gui : bool
        The desktop app: warnings and errors also go to stderr (a terminal that started
        it sees them); a command keeps stderr for its own one-line messages.

    Returns
    -------
    Path or None
        The log file, or None when no log folder is writable: then records go to stderr
        (warnings and up unless ``verbose``) and one line on stderr says why.  Starting
        never fails because of logging.

    Calling it again replaces the handlers of the previous call (none is duplicated) and
    keeps the same log file open.

    Examples
    --------
    >>> import os, tempfile
    >>> os.environ["FABRIC_DESIGNER_LOG_DIR"] = tempfile.mkdtemp()
    >>> path = setup_logging()
    >>> logging.getLogger("designer.example").info("hello")
    >>> "hello" in path.read_text()
    True
    >>> teardown_logging(); del os.environ["FABRIC_DESIGNER_LOG_DIR"]
    """
    logger = logging.getLogger("designer")
    previous = {Path(h.baseFilename): h for h in _ours(logger)
                if isinstance(h, RotatingFileHandler)}
    for handler in _ours(logger):
        logger.removeHandler(handler)
    level = logging.DEBUG if verbose else logging.INFO
    logger.setLevel(level)

    path = log_dir() / LOG_NAME
    file_handler = previous.pop(path, None)  # the same file: keep it open
    new_file = file_handler is None
    for handler in previous.values():
        handler.close()
    problem = None
    if file_handler is None:
        try:
            file_handler = _open_file_handler(path)
        except OSError as exc:
            problem = f"cannot write the log file {path}: {exc.strerror or exc}"
    if file_handler is not None:
        file_handler.setLevel(level)
        setattr(file_handler, _OURS, True)
        logger.addHandler(file_handler)

    stderr_level = None
    if verbose:
        stderr_level = logging.DEBUG
    elif gui or file_handler is None:
        stderr_level = logging.WARNING
    if stderr_level is not None:
        stderr = _StderrHandler()
        stderr.setLevel(stderr_level)
        stderr.setFormatter(logging.Formatter(STDERR_FORMAT))
        setattr(stderr, _OURS, True)
        logger.addHandler(stderr)

    if problem:
        if path not in _reported:
            _reported.add(path)
            print(f"{APP}: warning: {problem}; logging to the terminal only", file=sys.stderr)
        return None
    if new_file:  # once per file, not per call: the versions a bug report needs
        log.info("%s %s (%s), Python %s on %s", APP, __version__, "GUI" if gui else "command",
                 platform.python_version(), platform.platform(terse=True))
    return path

"""The log file (`designer.logs`) and the command line's use of it: rotation, no duplicate
handlers, ``--verbose`` on stderr, an unwritable log folder, and the "internal error"
line that names the log file."""

from __future__ import annotations

import errno
import logging
from pathlib import Path

import platformdirs
import pytest

from designer import cli, logs
from designer.cli import main
from designer.logs import LOG_DIR_ENV, LOG_NAME, log_dir, log_file, setup_logging


@pytest.fixture(autouse=True)
def folder(monkeypatch, tmp_path) -> Path:
    """A log folder of this test's own; handlers are removed afterwards."""
    path = tmp_path / "logs"
    monkeypatch.setenv(LOG_DIR_ENV, str(path))
    monkeypatch.setattr(logs, "_reported", set())
    yield path
    logs.teardown_logging()


def ours() -> list[logging.Handler]:
    return [h for h in logging.getLogger("designer").handlers if getattr(h, logs._OURS, False)]


def test_log_dir_is_the_override_else_the_platform_user_log_dir(monkeypatch, folder):
    assert log_dir() == folder
    monkeypatch.delenv(LOG_DIR_ENV)
    expected = Path(platformdirs.user_log_dir("fabric-designer", appauthor=False))
    assert log_dir() == expected
    assert "fabric-designer" in expected.parts


def test_info_goes_to_the_file_and_debug_only_when_verbose(folder, capsys):
    path = setup_logging()
    assert path == folder / LOG_NAME == log_file()
    logging.getLogger("designer.model").info("opened one.fabric.json")
    logging.getLogger("designer.model").debug("detail nobody asked for")
    logging.getLogger("elsewhere").warning("not ours")
    text = path.read_text()
    assert "INFO designer.model: opened one.fabric.json" in text
    assert "detail nobody asked for" not in text and "not ours" not in text
    assert "fabric-designer" in text.splitlines()[0]  # the version line a bug report needs
    assert capsys.readouterr().err == ""  # a command keeps stderr for its own messages

    setup_logging(verbose=True)
    logging.getLogger("designer.solver").debug("route took 3 ms")
    assert "DEBUG designer.solver: route took 3 ms" in path.read_text()
    err = capsys.readouterr().err
    assert "fabric-designer: DEBUG: designer.solver: route took 3 ms" in err


def test_a_second_call_replaces_the_handlers_instead_of_adding_more(folder):
    setup_logging(verbose=True)
    setup_logging(verbose=True)
    setup_logging(verbose=True, gui=True)
    kinds = sorted(type(h).__name__ for h in ours())
    assert kinds == ["_LogFileHandler", "_StderrHandler"]
    logging.getLogger("designer.x").info("exactly once")
    assert (folder / LOG_NAME).read_text().count("exactly once") == 1
    setup_logging()  # back to quiet: the stderr handler goes
    assert [type(h).__name__ for h in ours()] == ["_LogFileHandler"]


def test_the_gui_shows_warnings_on_stderr_but_not_info(capsys):
    setup_logging(gui=True)
    logging.getLogger("designer.gui").info("window open")
    logging.getLogger("designer.gui").warning("autosave failed")
    err = capsys.readouterr().err
    assert "autosave failed" in err and "window open" not in err


def test_the_file_rotates_and_keeps_five_old_files(monkeypatch, folder):
    monkeypatch.setattr(logs, "MAX_BYTES", 2_000)
    path = setup_logging()
    for i in range(400):
        logging.getLogger("designer.soak").info("record %04d %s", i, "x" * 40)
    names = sorted(p.name for p in folder.iterdir())
    assert names == [LOG_NAME] + [f"{LOG_NAME}.{i}" for i in range(1, logs.BACKUPS + 1)]
    assert all(p.stat().st_size <= 2_000 for p in folder.iterdir())
    assert "record 0399" in path.read_text()  # the newest is in the live file


def test_an_unwritable_log_folder_falls_back_to_stderr_and_says_so_once(monkeypatch, tmp_path,
                                                                        capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")  # even root cannot make a folder under a file
    monkeypatch.setenv(LOG_DIR_ENV, str(blocker / "logs"))
    assert setup_logging() is None
    assert setup_logging() is None
    assert log_file() is None
    err = capsys.readouterr().err
    assert err.count("cannot write the log file") == 1
    assert "logging to the terminal only" in err and err.count("\n") == 1
    logging.getLogger("designer.x").info("only in a file, so nowhere")
    logging.getLogger("designer.x").warning("still visible")
    err = capsys.readouterr().err
    assert "still visible" in err and "nowhere" not in err


def test_a_log_file_that_stops_working_says_so_once(folder, capsys):
    setup_logging()
    (handler,) = ours()

    def full(_text):
        raise OSError(errno.ENOSPC, "No space left on device")

    handler.stream.write = full
    for _ in range(3):
        logging.getLogger("designer.x").info("lost")
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "cannot write the log file" in err and "No space left on device" in err


# --------------------------------------------------------------------------- the command line


def test_every_command_logs_to_the_file_and_keeps_stderr_clean(folder, tmp_path, capsys):
    out = tmp_path / "h.fabric.json"
    assert main(["new", "hgx", "-o", str(out)]) == 0
    assert main(["info", str(out)]) == 0
    assert capsys.readouterr().err == ""
    text = (folder / LOG_NAME).read_text()
    assert f"run: fabric-designer new hgx -o {out}" in text
    assert f"saved {out} (template hgx)" in text
    assert f"opened {out}: 21 nodes" in text
    assert text.count("exit 0 after") == 2


def test_verbose_prints_the_log_on_stderr(folder, tmp_path, capsys):
    out = tmp_path / "h.fabric.json"
    assert main(["--verbose", "new", "hgx", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"INFO: designer.cli: saved {out}" in err
    assert logging.getLogger("designer").getEffectiveLevel() == logging.DEBUG


def _broken(_args):
    raise ZeroDivisionError("a bug for the test")


def test_an_internal_error_is_one_line_naming_the_log_file_with_the_traceback(
        folder, tmp_path, capsys, monkeypatch):
    hgx = tmp_path / "h.fabric.json"
    assert main(["new", "hgx", "-o", str(hgx)]) == 0
    capsys.readouterr()
    monkeypatch.setattr(cli, "cmd_info", _broken)
    assert main(["info", str(hgx)]) == 1
    err = capsys.readouterr().err
    log_path = folder / LOG_NAME
    assert err == (f"fabric-designer: internal error: ZeroDivisionError: a bug for the test "
                   f"(the traceback is in {log_path})\n")
    text = log_path.read_text()
    assert "ERROR designer.cli: internal error\nTraceback (most recent call last):" in text
    assert 'in _broken\n    raise ZeroDivisionError("a bug for the test")' in text


def test_verbose_raises_the_bug_and_still_logs_its_traceback_once(folder, tmp_path, capsys,
                                                                  monkeypatch):
    hgx = tmp_path / "h.fabric.json"
    assert main(["new", "hgx", "-o", str(hgx)]) == 0
    monkeypatch.setattr(cli, "cmd_info", _broken)
    with pytest.raises(ZeroDivisionError):
        main(["-v", "info", str(hgx)])
    # The terminal gets the traceback from the exception itself, not a second copy
    # from the log.
    assert "Traceback" not in capsys.readouterr().err
    assert (folder / LOG_NAME).read_text().count("Traceback (most recent call last)") == 1


def test_a_failed_save_is_logged_with_its_reason(folder, tmp_path, capsys):
    target = tmp_path / "missing" / "x.fabric.json"
    assert main(["new", "hgx", "-o", str(target)]) == 1
    message = f"cannot save {target}: the folder does not exist"
    assert message in capsys.readouterr().err
    assert message in (folder / LOG_NAME).read_text()


@pytest.mark.parametrize(("argv", "file"), [
    (["-v"], None),
    (["--verbose", "d.fabric.json"], "d.fabric.json"),
    (["d.fabric.json", "-v"], "d.fabric.json"),
])
def test_verbose_reaches_the_gui(monkeypatch, argv, file):
    calls = []
    monkeypatch.setattr(cli, "cmd_gui", lambda f, verbose=False: calls.append((f, verbose)) or 0)
    assert main(argv) == 0
    assert calls == [(file, True)]


def test_a_gui_that_fails_to_start_says_so_in_one_line_and_logs_it(folder, monkeypatch,
                                                                  capsys):
    def broken_start(_file, verbose=False):
        raise RuntimeError("no icons")

    monkeypatch.setattr(cli, "cmd_gui", broken_start)
    assert main([]) == 1
    log_path = folder / LOG_NAME
    assert capsys.readouterr().err == (
        f"fabric-designer: internal error: RuntimeError: no icons (the traceback is in "
        f"{log_path})\n")
    text = log_path.read_text()
    assert "(GUI)" in text.splitlines()[0] and 'raise RuntimeError("no icons")' in text

"""The console entry point works from day one and fails politely."""
from __future__ import annotations

import socket
import subprocess
import sys

from lens_cli.main import main


def test_help_lists_the_subcommands(capsys):
    try:
        main(["--help"])
    except SystemExit as exit_:
        assert exit_.code == 0
    out = capsys.readouterr().out
    for command in ("setup", "kafka", "demo"):
        assert command in out


def test_console_script_is_installed():
    result = subprocess.run([sys.executable, "-c", "from importlib.metadata import entry_points; "
                             "print([e.value for e in entry_points(group='console_scripts', name='rebalance-lens')])"],
                            capture_output=True, text=True, check=True)
    assert "lens_cli.main:main" in result.stdout


def test_user_errors_print_one_line_without_a_trace(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("REBALANCE_LENS_HOME", str(tmp_path))
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        port = holder.getsockname()[1]
        code = main(["kafka", "up", "--port", str(port)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith(f"rebalance-lens: error: Port {port} ")
    assert "Traceback" not in err

"""The console entry point works from day one and fails politely."""
from __future__ import annotations

import os
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


def test_mistakes_found_without_spark_are_said_before_it_starts(capsys, tmp_path, monkeypatch):
    """A missing broker or lake is one line and exit 2, before the seconds a JVM takes."""
    import lens_cli.live_spark

    def no_spark(*_args, **_kwargs):
        raise AssertionError("Spark was started before the cheap check")

    monkeypatch.setattr(lens_cli.live_spark, "build_spark", no_spark)
    monkeypatch.setenv("REBALANCE_LENS_HOME", str(tmp_path))  # no local broker recorded here
    monkeypatch.delenv("LENS_KAFKA_BOOTSTRAP", raising=False)
    lake = str(tmp_path / "empty-lake")
    for argv, said in ((["pipeline", "run", "--lake", lake], "no Kafka bootstrap servers"),
                       (["sql", "build", "--lake", lake], "no pipeline output"),
                       (["recommend", "--lake", lake], "has no gold/recommendations yet"),
                       (["recommend", "--verify", "crash", "--reruns", "0"], "pass --reruns 1 or more")):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("rebalance-lens: error: ") and said in err and err.count("\n") == 1, err
        assert "Traceback" not in err


def test_scenario_list_reads_in_80_columns():
    result = subprocess.run([sys.executable, "-m", "lens_cli.main", "scenario", "list"], capture_output=True,
                            text=True, check=True, env={**os.environ, "COLUMNS": "80"})
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) <= 80
    assert "rolling-restart  3 members, 6 partitions" in result.stdout and "…" not in result.stdout

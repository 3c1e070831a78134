"""Every command sequence the README (and the documents under docs/) shows works as shown.

The sequences are read from the ``bash`` blocks of README.md and docs/*.md that use ``./lens`` or
``rebalance-lens``, so this test follows the documents as they change. Each block is played in
child processes on a fresh machine (an empty REBALANCE_LENS_HOME, no LENS_* setting, an empty
working folder), each ``./lens CMD`` as ``python -m lens_cli.main CMD``; every command must exit 0.

Not played here, each for a reason:
- ``./lens demo``: the slow suite plays it (``./lens test -m slow tests/e2e/test_cli_output.py``);
- ``./lens test``: it is this suite;
- a block with other commands than the CLI's (the Airflow recipe: ``airflow standalone``, its
  ``export`` and ``airflow ...`` lines) is an operator's session the slow suite plays as one
  (``./lens test -m slow tests/airflow/test_real_airflow.py``); ``OTHER_COMMANDS`` names the
  programs such a block may use, so a block of any other kind fails here until someone decides.

Default suite: every CLI command shown parses (its subcommand and flags exist). Slow suite
(``./lens test -m slow tests/foundation/test_readme_recipes.py``, a few minutes per block that
runs a scenario or the pipeline): each block played as written, and a block with ``kafka up`` in
it also with ``kafka up`` first, since the README leaves its place to the reader.
"""
from __future__ import annotations

import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from lens_cli.main import build_parser
from tests.support.fresh_home import fresh_home_env, stop_local_broker

ROOT = Path(__file__).resolve().parents[2]
CLI = ("./lens", "rebalance-lens")
NOT_PLAYED = {"demo", "test"}  # the slow suite's demo test; this suite
OTHER_COMMANDS = {"export", "airflow", ".venv/bin/airflow"}  # the Airflow recipe (test_real_airflow.py)
LONG = {"scenario run", "pipeline run", "recommend", "sql build", "demo"}  # subcommands that take minutes


@dataclass(frozen=True)
class Block:
    """One ``bash`` block: where it is and its commands, each a list of words."""

    where: str
    commands: tuple[tuple[str, ...], ...]

    def cli(self) -> list[list[str]]:
        """Its CLI commands' arguments (``./lens kafka up`` -> ``["kafka", "up"]``), in order."""
        return [list(c[1:]) for c in self.commands if c[0] in CLI]

    def others(self) -> set[str]:
        return {c[0] for c in self.commands if c[0] not in CLI}

    def played(self) -> list[list[str]]:
        return [args for args in self.cli() if args[0] not in NOT_PLAYED]


def _commands(text: str) -> tuple[tuple[str, ...], ...]:
    """A block's commands: continuation lines joined, comments dropped, ``a && b`` split."""
    commands = []
    for line in text.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        while words:
            cut = words.index("&&") if "&&" in words else len(words)
            if words[:cut]:
                commands.append(tuple(words[:cut]))
            words = words[cut + 1:]
    return tuple(commands)


def blocks() -> list[Block]:
    """The ``bash`` blocks that use the CLI, from README.md and docs/*.md (a block shown twice once)."""
    found: dict[tuple, Block] = {}
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = path.read_text()
        for match in re.finditer(r"^```bash\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL):
            commands = _commands(match[1])
            line = text.count("\n", 0, match.start()) + 1
            if any(c[0] in CLI for c in commands):
                found.setdefault(commands, Block(f"{path.relative_to(ROOT)}:{line}", commands))
    return list(found.values())


BLOCKS = blocks()


def _long(args: list[str]) -> bool:
    return args[0] in LONG or " ".join(args[:2]) in LONG


def _sequences() -> list:
    """(block, its commands in the order played) per play: as written, and with ``kafka up`` first."""
    plays = []
    for block in BLOCKS:
        if block.others() or not block.played():
            continue
        marks = [pytest.mark.slow] if any(_long(a) for a in block.played()) else []
        plays.append(pytest.param(block, block.played(), id=f"{block.where} as written", marks=marks))
        up = [a for a in block.played() if a[:2] == ["kafka", "up"]]
        if up and block.played()[0] != up[0]:
            first = up + [a for a in block.played() if a[:2] != ["kafka", "up"]]
            plays.append(pytest.param(block, first, id=f"{block.where} kafka up first", marks=marks))
    return plays


def test_the_documents_show_the_recipes_and_each_block_is_played_or_its_player_named():
    assert any(["scenario", "run"] == a[:2] for b in BLOCKS for a in b.played()), [b.where for b in BLOCKS]
    assert any(["pipeline", "run"] == a[:2] for b in BLOCKS for a in b.played())
    for block in BLOCKS:
        assert block.others() <= OTHER_COMMANDS, (block.where, block.others() - OTHER_COMMANDS)


@pytest.mark.parametrize("args", [pytest.param(list(a), id=" ".join(a)) for a in
                                  dict.fromkeys(tuple(a) for b in BLOCKS for a in b.cli() if a[0] != "test")])
def test_every_command_shown_parses(args):
    parsed = build_parser().parse_args(args)
    assert callable(parsed.func), args


@pytest.mark.timeout(3600)
@pytest.mark.parametrize(("block", "sequence"), _sequences())
def test_each_sequence_works_on_a_fresh_machine(block, sequence, tmp_path):
    env = fresh_home_env(tmp_path / "home")
    work = tmp_path / "work"
    work.mkdir()
    said = []
    try:
        for args in sequence:
            done = subprocess.run([sys.executable, "-m", "lens_cli.main", *args], cwd=work, env=env,
                                  capture_output=True, text=True, timeout=1800)
            said.append(f"$ rebalance-lens {' '.join(args)}\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
            assert done.returncode == 0, f"{block.where}:\n" + "\n".join(said)
            ingest = re.search(r"\[ingest\] done in [\d.]+ s: rows ([\d,]+)", done.stdout)
            if ingest and any(a[:2] == ["scenario", "run"] for a in sequence[:sequence.index(args)]):
                # the scenario's telemetry is what the pipeline read: same broker, same topic
                assert int(ingest[1].replace(",", "")) > 0, "\n".join(said)
    finally:
        stop_local_broker(env)

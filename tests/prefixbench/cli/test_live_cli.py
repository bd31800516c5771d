"""The live commands (``sessions``, ``replay``, ``isolation``) as parsers: one set of server flags for all three
(``cli.live.add_live_parser``), each command's own flags beside them. No server is started."""

from __future__ import annotations

import argparse

import pytest

from tools.prefixbench.cli import isolation, live, replay, sessions

OWN = {"sessions": (sessions.add_sessions, {"--kind", "--users", "--turns", "--system-prompt-len", "--user-len",
                                            "--tool-output-len", "--output-len", "--think-time-s", "--concurrency",
                                            "--seed", "--baseline"}),
       "replay": (replay.add_replay, {"--trace", "--num-requests", "--speed", "--block-tokens", "--max-output-len",
                                      "--concurrency"}),
       "isolation": (isolation.add_isolation, {"--prompt-len", "--tenants", "--requests-per-tenant", "--shared-len",
                                               "--suffix-len", "--seed"})}


def _parser(add) -> argparse.ArgumentParser:
    sub = argparse.ArgumentParser().add_subparsers()
    add(sub)
    return next(iter(sub.choices.values()))


def _flags(parser: argparse.ArgumentParser) -> dict[str, str]:
    return {a.option_strings[-1]: a.help for a in parser._actions if a.option_strings and a.dest != "help"}


@pytest.mark.parametrize("command", sorted(OWN))
def test_each_live_command_has_the_shared_server_flags_and_its_own(command):
    shared = argparse.ArgumentParser()
    live.add_server_flags(shared, "DEFAULT")
    server = {flag: text.replace("DEFAULT", f"{command}_results.json") for flag, text in _flags(shared).items()}
    add, own = OWN[command]
    flags = _flags(_parser(add))
    assert {f: flags.get(f) for f in server} == server  # the same flags with the same help, default output aside
    assert set(flags) == set(server) | own

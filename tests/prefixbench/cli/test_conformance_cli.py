"""``prefixbench conformance``: against the installed vLLM's scheduler, its record, and its refusals."""

from __future__ import annotations

import json

import pytest

from backend_fixtures import requires_vllm

from tools.prefixbench.cli import main


def _strict(text: str):
    def refuse(name):
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


@requires_vllm
def test_a_small_run_agrees_and_leaves_a_strict_record(tmp_path, capsys):
    out = tmp_path / "conformance.json"
    assert main(["conformance", "--seeds", "1", "--cases", "3", "--modes", "concurrent,reset",
                 "--output", str(out)]) == 0
    rec = _strict(out.read_text(encoding="utf-8"))
    assert rec["schema"] == "prefixbench.conformance/1" and rec["vllm_version"] == "0.32.0"
    assert [m["mode"] for m in rec["modes"]] == ["concurrent", "reset"]
    assert all(m["agreeing_requests"] == m["requests"] == 36 for m in rec["modes"])
    assert rec["rules"]["rules_version"] == "0.32.0" and rec["rules"]["note"] is None
    assert "concurrent" in capsys.readouterr().out


@requires_vllm
def test_a_divergence_is_exit_2_with_a_pasteable_reproduction(tmp_path, capsys, monkeypatch):
    import tools.prefixbench.twin.conformance as conformance

    def off_by_a_block(case):
        return [h + case.block_size for h in real(case)]

    real = conformance.model_hits
    monkeypatch.setattr(conformance, "model_hits", off_by_a_block)
    assert main(["conformance", "--seeds", "1", "--cases", "1", "--modes", "reset", "--json"]) == 2
    rec = _strict(capsys.readouterr().out)
    assert rec["exact_modes_agree"] is False
    first = rec["modes"][0]["first_divergence"]
    assert first["model_hit_tokens"] - first["vllm_hit_tokens"] in (16, 128)
    namespace: dict = {}
    exec(compile(rec["reproduction"], "<reproduction>", "exec"), namespace)
    test = next(v for k, v in namespace.items() if k.startswith("test_conformance_reset"))
    with pytest.raises(AssertionError):
        test()


@pytest.mark.parametrize("args, field", [
    (["--modes", "fast"], "--modes"),
    (["--modes", ","], "--modes"),
    (["--seeds", "0"], "--seeds"),
    (["--requests", "1e9"], "--requests"),
])
def test_bad_flags_are_one_line(args, field, capsys):
    assert main(["conformance", *args]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and field in err[0] and "Traceback" not in err[0]


def test_an_output_folder_is_refused_before_anything_runs(tmp_path, capsys, monkeypatch):
    import tools.prefixbench.cli.conformance as command

    monkeypatch.setattr(command, "run_suite", lambda *a, **k: pytest.fail("ran with a bad --output"))
    assert main(["conformance", "--output", str(tmp_path)]) == 1
    assert "--output" in capsys.readouterr().err


def test_without_vllm_it_says_so_in_one_line(capsys, monkeypatch):
    import tools.prefixbench.twin.vllm_core as vllm_core

    monkeypatch.setattr(vllm_core, "vllm_version", lambda: None)
    assert main(["conformance"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not installed" in err[0]

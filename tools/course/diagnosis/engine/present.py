"""Findings as bilingual text: the notebook's self-check output and the graded feedback section."""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from .catalogue import DEFAULT_CALL_TIMEOUT_S, EXERCISES
from .findings import Finding, diagnose


LANGUAGES = ("zh", "en")
"""zh: the Chinese edition, which shows both languages; en: the English edition, English only."""


def _finding_lines(finding: Finding, lang: str = "zh") -> list[str]:
    n = finding.hidden_probes
    if lang == "en":
        lines = [f"✗ {finding.exercise}  [{finding.code}]", f"  {finding.message_en}"]
        lines.extend(f"  e.g. {detail}" for detail in finding.details)
        if n and finding.probes:
            lines.append(f"  ({n} hidden check(s) point the same way)")
        elif n:
            lines.append(f"  (found by {n} hidden check(s); inputs not shown)")
        return lines
    lines = [f"✗ {finding.exercise}  [{finding.code}]",
             f"  中文：{finding.message_zh}",
             f"  EN:   {finding.message_en}"]
    for detail in finding.details:
        lines.append(f"  例 | e.g. {detail}")
    if n and finding.probes:
        lines.append(f"  （另有 {n} 个隐藏检查得出同样结论 | {n} hidden check(s) point the same way）")
    elif n:
        lines.append(f"  （来自 {n} 个隐藏检查，不显示其输入 | found by {n} hidden check(s); inputs not shown）")
    return lines


def _edition(namespace_or_functions: Any, lang: str | None) -> str:
    """The notebook's language: ``lang`` if given, else its EDITION global (the setup cell sets it)."""
    if lang is None and isinstance(namespace_or_functions, Mapping):
        lang = namespace_or_functions.get("EDITION")
    return lang if lang in LANGUAGES else "zh"


def feedback_text(findings: Iterable[Finding]) -> str:
    """The findings as bilingual text for graded feedback. Safe to hand back: a Finding carries no hidden
    probe's id, inputs or expected values (details come from visible probes only)."""
    findings = list(findings)
    if not findings:
        return "未发现已知的典型错误。 | No known mistake detected."
    lines = ["诊断（最可能的错误与该看的地方） | Diagnosis (most likely mistake and where to look)"]
    for finding in findings:
        lines.extend(_finding_lines(finding))
    return "\n".join(lines)


def self_check(namespace_or_functions: Any, *, exercises: Iterable[str] | None = None,
               call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S, lang: str | None = None) -> list[Finding]:
    """What the notebook calls (``self_check(globals())``): visible probes only; prints and returns findings,
    in the notebook's language (``lang``, else its ``EDITION``: "en" prints English only)."""
    lang = _edition(namespace_or_functions, lang)
    findings = diagnose(namespace_or_functions, ("visible",), exercises=exercises, call_timeout_s=call_timeout_s)
    wanted = {exercises} if isinstance(exercises, str) else set(exercises or EXERCISES)
    checked = [e for e in EXERCISES if e in wanted]
    failing = {f.exercise for f in findings}
    title = "Diagnosis (visible probes only)" if lang == "en" else "诊断（只用可见探针） | Diagnosis (visible probes only)"
    print(f"{title}: {', '.join(checked)}")
    for exercise in checked:
        if exercise not in failing:
            print(f"✓ {exercise}")
        for finding in findings:
            if finding.exercise == exercise:
                print("\n".join(_finding_lines(finding, lang)))
    if not findings:
        print("All visible probes pass; grading also runs hidden checks." if lang == "en" else
              "所有可见探针都通过；评分时还会运行隐藏检查。 | All visible probes pass; grading also runs hidden checks.")
    return findings

"""Every exit code of ``prefixbench``, in one place.

0 done; 1 bad input (one line on stderr that names the field, nothing sent or started); 2 the run failed or
measured nothing (the results say why); 3 interrupted (Ctrl-C, or SIGTERM where the command wrote its partial
result); 128 + N killed by signal N after the command cleaned up (``cli.signals``).
"""

from ..core.usage import BAD_INPUT as BAD_INPUT  # re-exported: every exit code in one place

OK = 0
FAILED = 2
INTERRUPTED = 3

RUN_STATUS = {"ok": OK, "partial": OK, "failed": FAILED, "interrupted": INTERRUPTED}
"""A result's ``status`` to the exit code: ``partial`` (some requests failed) is a finished run whose verdict
says so; ``failed`` measured nothing; ``interrupted`` wrote what it had."""


def for_signal(signum: int) -> int:
    return 128 + signum

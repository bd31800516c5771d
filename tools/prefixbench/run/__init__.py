"""Layer 8, orchestration as short steps: one G0 / G1 group (``group``), the G0 / G1 experiment (``g0g1``) and
the hit-rate mode against any running server (``hitrate``). Each returns a result record; the CLI writes it."""

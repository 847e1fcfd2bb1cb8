"""Benchmarks that print figures: one module per question (P1-P8), run together by `make bench`.

Each module prints JSON lines (one per measurement, and one `"kind": "summary"` line with the figure,
its goal and whether it is met) and a short table. `python -m bench.run_all` runs them all in fresh
processes and writes bench/RESULTS.md. Figures are ratios measured side by side in one process (or
interleaved fresh processes), because these machines are shared and noisy. No test asserts a timing:
`make test` runs each benchmark once at its smallest size (`python -m bench.run_all --smallest`, BENCH_SMALLEST=1)
so that one that breaks fails CI, and judges no figure.
"""

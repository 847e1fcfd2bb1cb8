"""Operator tools for a deployed stack: `python -m ops.smoke` (one resident turn to its reply) and
`python -m ops.teardown` (empty the GPU group and the pages bucket, then delete the stack)."""

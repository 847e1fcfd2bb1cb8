"""The Tracer is built where Powertools traces, and nowhere else: there the handlers get a decorator that
does nothing, and no process imports the X-Ray SDK. Each case runs in a fresh process, since the module
decides once, at import."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

PROBE = """
import json, sys
from aws_lambda_powertools import Tracer
from dialogue.aws import observability as o

def handler(event, context):
    return "answered"

decorated = o.tracer.capture_lambda_handler(capture_response=False, capture_error=False)(handler)
found = {
    "tracer": type(o.tracer).__name__,
    "tracing_on": o.tracing_on(),
    "xray_imported": "aws_xray_sdk" in sys.modules,
    "botocore_patched": "aws_xray_sdk.ext.botocore.patch" in sys.modules,
    "unchanged": decorated is handler,
}
# Powertools' own verdict, which imports the SDK: read last.
found["powertools_disabled"] = bool(Tracer(auto_patch=False).disabled)
print(json.dumps(found))
"""

LAMBDA = {"LAMBDA_TASK_ROOT": "/var/task", "AWS_LAMBDA_FUNCTION_NAME": "TurnApiFunction"}


def probe(extra: dict[str, str]) -> dict[str, object]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AWS_LAMBDA_", "LAMBDA_", "POWERTOOLS_TRACE", "AWS_SAM_LOCAL", "AWS_CHALICE"))
    }
    env.update({"AWS_DEFAULT_REGION": "us-east-1", **extra})
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    found: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def test_in_lambda_the_handlers_are_traced_and_botocore_patched() -> None:
    found = probe(LAMBDA)
    assert found["tracer"] == "Tracer" and found["tracing_on"] is True
    assert found["xray_imported"] and found["botocore_patched"]
    assert found["unchanged"] is False  # the handler is wrapped in its segment
    assert found["powertools_disabled"] is False


@pytest.mark.parametrize(
    "extra",
    [
        {},  # tests, devstack: outside Lambda
        {**LAMBDA, "POWERTOOLS_TRACE_DISABLED": "true"},
        {**LAMBDA, "POWERTOOLS_TRACE_DISABLED": "1"},
        {**LAMBDA, "AWS_SAM_LOCAL": "true"},  # sam local invoke
    ],
    ids=["outside-lambda", "switched-off", "switched-off-1", "sam-local"],
)
def test_where_powertools_would_not_trace_nothing_imports_the_xray_sdk(extra: dict[str, str]) -> None:
    found = probe(extra)
    assert found["tracer"] == "TracingOff" and found["tracing_on"] is False
    assert not found["xray_imported"] and not found["botocore_patched"]
    assert found["unchanged"] is True
    assert found["powertools_disabled"] is True  # the same verdict as Powertools' own Tracer

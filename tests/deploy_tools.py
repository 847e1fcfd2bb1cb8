"""Run a short script in the deploy tools' venv (.venv-deploy: SAM CLI, cfn-lint's serverless rules),
which `make template-checks` installs: how the deploy tests read what SAM CLI itself makes of the template."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEPLOY_PYTHON = ROOT / ".venv-deploy" / "bin" / "python"


def run_in_deploy_tools(script: str, *arguments: str, timeout: float = 300) -> Any:
    """The JSON the script prints on its last line. Without the deploy tools the test is skipped, and
    fails under CI, where `make test` installs them first."""
    if not DEPLOY_PYTHON.exists():
        if os.environ.get("CI"):
            pytest.fail("the deploy tools are not installed: `make template-checks` installs them into .venv-deploy")
        pytest.skip("the deploy tools are not installed (make template-checks installs them)")
    result = subprocess.run(
        [str(DEPLOY_PYTHON), "-c", script, *arguments],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, "AWS_DEFAULT_REGION": "us-east-1"},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])

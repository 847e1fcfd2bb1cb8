"""docs/DEPLOY.md followed word for word: its table of `sam deploy --guided` prompts is the list SAM
CLI's own code asks for this template, in order, with the defaults it offers.

SAM CLI lives in the deploy tools' venv (`make template-checks` installs it), so the prompts are read
there, by a short script that calls the functions `sam deploy --guided` calls.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from cfnlint.decode import decode

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "DEPLOY.md"
DEPLOY_PYTHON = ROOT / ".venv-deploy" / "bin" / "python"

# What samcli.commands.deploy.guided_context asks around the parameters, in order (read from the
# installed SAM CLI below, so a new SAM CLI prompt fails this test).
SCRIPT = r"""
import json, re, sys, inspect
from samcli.commands.deploy import guided_context
from samcli.commands.deploy.auth_utils import auth_per_resource
from samcli.commands._utils.template import get_template_parameters
from samcli.lib.providers.sam_stack_provider import SamLocalStackProvider

template = sys.argv[1]
parameters = get_template_parameters(template)
stacks, _ = SamLocalStackProvider.get_stacks(
    template,
    parameter_overrides={"StaffSignInDomainPrefix": "x", "VpcId": "vpc-1", "VpcSubnetIds": "subnet-1"},
    global_parameter_overrides={"AWS::Region": "us-east-1"},
)
source = inspect.getsource(guided_context.GuidedContext.guided_prompts)
asked = re.findall(r'\{self\.start_bold\}([^{]+)\{self\.end_bold\}', source)
print(json.dumps({
    "parameters": list(parameters),
    "asked": asked,
    "unauthenticated": [name for name, ok in auth_per_resource(stacks) if not ok],
}))
"""


@pytest.fixture(scope="module")
def sam_prompts() -> dict[str, list[str]]:
    if not DEPLOY_PYTHON.exists():
        if os.environ.get("CI"):
            pytest.fail("the deploy tools are not installed: `make template-checks` installs them into .venv-deploy")
        pytest.skip("the deploy tools are not installed (make template-checks installs them)")
    result = subprocess.run(
        [str(DEPLOY_PYTHON), "-c", SCRIPT, str(ROOT / "template.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def guide_prompts() -> list[tuple[str, str]]:
    """The first deploy's table: (prompt, answer) rows, in order."""
    text = GUIDE.read_text()
    section = text[text.index("## 1. The first deploy") : text.index("## 2. ")]
    table = section[section.index("| Prompt | Answer |") :]
    rows = re.findall(r"^\| `([^`]+)` \| (.+) \|$", table.split("\n\n")[0], flags=re.MULTILINE)
    assert rows
    return rows


def test_the_guide_lists_every_prompt_sam_asks_in_order(sam_prompts: dict[str, list[str]]) -> None:
    asked = [prompt.strip() for prompt in sam_prompts["asked"]]
    # Stack name and region, each parameter, the questions after them (no function is without
    # authorization: the HTTP API's JWT authorizer counts), then the change set.
    assert asked[:2] == ["Stack Name", "AWS Region"]
    assert not sam_prompts["unauthenticated"]
    after = [prompt for prompt in asked[2:] if prompt != "Capabilities"]  # asked only if IAM creation is refused
    expected = [
        "Stack Name",
        "AWS Region",
        *(f"Parameter {name}" for name in sam_prompts["parameters"]),
        *after,
        "Deploy this changeset?",
    ]
    listed = [re.sub(r" \[[^\]]*\]$", "", prompt) for prompt, _answer in guide_prompts()]
    assert listed == expected


def test_the_defaults_the_guide_shows_are_the_templates() -> None:
    template, _ = decode(str(ROOT / "template.yaml"))
    for prompt, answer in guide_prompts():
        match = re.fullmatch(r"Parameter (\w+) \[(.*)\]", prompt)
        if match:
            name, shown = match.groups()
            assert shown == str(template["Parameters"][name].get("Default", "")), name
            assert answer.strip(), name


def test_the_first_deploy_answers_leave_the_realizer_out() -> None:
    answers = {prompt.split(" [")[0]: answer for prompt, answer in guide_prompts()}
    assert answers["Parameter RealizerImageDigest"].startswith("Enter: empty")
    assert "`0`" in answers["Parameter RealizerMinTasks"]
    assert answers["Allow SAM CLI IAM role creation"].startswith("`Y`")


# Shell variables a reader's shell has without the guide defining them.
ENVIRONMENT_VARIABLES = {"HOME", "PATH", "PWD", "USER"}


def test_every_shell_variable_the_guide_uses_is_defined_before_its_use() -> None:
    """Each `$NAME` in the guide's sh blocks (outside single quotes, which jq filters use) is set by an
    earlier `NAME=...`, `read NAME` or `for NAME in` in the guide: a reader copying the commands in order
    never sends a request to an empty `$API`."""
    text = GUIDE.read_text()
    defined: set[str] = set(ENVIRONMENT_VARIABLES)
    undefined = []
    for block in re.findall(r"^```sh\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL):
        code = re.sub(r"'[^']*'", "''", block)
        for line in code.splitlines():
            line = line.split("#", 1)[0] if not line.lstrip().startswith("#") else ""
            # A loop's variable is set before the loop's body on the same line uses it.
            defined |= set(re.findall(r"\b(?:read(?:\s+-\w+)*|for)\s+([A-Za-z_]\w*)", line))
            undefined += sorted(set(re.findall(r"\$\{?([A-Za-z_]\w*)", line)) - defined)
            defined |= set(re.findall(r"(?:^|[\s;(])([A-Za-z_]\w*)=", line))
    assert not undefined, undefined

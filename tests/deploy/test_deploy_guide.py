"""docs/DEPLOY.md followed word for word: its table of `sam deploy --guided` prompts is the list SAM
CLI's own code asks for this template, in order, with the defaults it offers.

SAM CLI lives in the deploy tools' venv (`make template-checks` installs it), so the prompts are read
there, by a short script that calls the functions `sam deploy --guided` calls.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cfnlint.decode import decode

from tests.deploy_tools import run_in_deploy_tools

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "DEPLOY.md"

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
    prompts: dict[str, list[str]] = run_in_deploy_tools(SCRIPT, str(ROOT / "template.yaml"), timeout=120)
    return prompts


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


# --- Every name the guide gives exists ------------------------------------------------------------
# A reader copies the guide's commands and names: a make target, a make variable, a parameter, an
# output, an environment variable or a module that is not there fails at their desk. Each is read from
# the guide and looked up where it is defined.

MAKEFILE = ROOT / "Makefile"
# Words the guide puts in backticks that look like environment variables but are not: placeholders
# and values.
NOT_ENVIRONMENT = {"MON-FRI"}


def _guide() -> str:
    return GUIDE.read_text()


def _make_targets() -> set[str]:
    return set(re.findall(r"^([a-z][a-z0-9-]*):", MAKEFILE.read_text(), flags=re.MULTILINE))


def _make_recipe(target: str) -> str:
    """The target's rule and recipe lines (up to the next blank line or rule)."""
    text = MAKEFILE.read_text()
    match = re.search(rf"^{re.escape(target)}:.*?(?=^\S|\Z)", text, flags=re.MULTILINE | re.DOTALL)
    assert match, target
    return match.group(0)


def _template() -> dict:
    template, _ = decode(str(ROOT / "template.yaml"))
    return template


def test_every_make_command_in_the_guide_is_a_target_with_those_variables() -> None:
    text = _guide()
    code = re.findall(r"^```sh\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL) + re.findall(r"`([^`\n]+)`", text)
    commands = re.findall(r"(?:^|\s)make ([a-z][a-z0-9-]*)((?: [A-Z_0-9]+=[^\s`]*)*)", "\n".join(code), re.MULTILINE)
    assert len(commands) >= 10
    targets = _make_targets()
    for target, arguments in commands:
        assert target in targets, f"make {target}"
        recipe = _make_recipe(target)
        for variable in re.findall(r"([A-Z_0-9]+)=", arguments):
            assert f"$({variable})" in recipe, f"make {target} does not read {variable}"


def test_the_parameter_table_is_the_templates_parameters() -> None:
    text = _guide()
    table = text[text.index("| Parameter | Default | What it sets |") :].split("\n\n")[0]
    listed = re.findall(r"^\| `(\w+)` \|", table, flags=re.MULTILINE)
    assert len(listed) == len(set(listed))
    assert set(listed) == set(_template()["Parameters"])


def test_every_output_the_guide_names_is_an_output_and_every_output_is_named() -> None:
    text = _guide()
    outputs = set(_template()["Outputs"])
    waf_outputs = set(decode(str(ROOT / "ops" / "pages-waf.yaml"))[0]["Outputs"])
    asked = set(re.findall(r"OutputKey=='(\w+)'", text)) | set(
        re.findall(r"<output:(\w+)>", (ROOT / "events" / "env.json").read_text())
    )
    section = text[text.index("the outputs name everything you need") :].split("\n## ")[0]
    paragraph = section[section.index("```", section.index("```") + 3) :].split("\n\n")[1]
    in_paragraph = set(re.findall(r"`([A-Z]\w+)`", paragraph))
    assert asked <= outputs | waf_outputs, asked - outputs - waf_outputs
    assert in_paragraph <= outputs, in_paragraph - outputs
    assert outputs <= in_paragraph | asked, outputs - in_paragraph - asked


def test_every_resource_in_the_alarm_table_is_in_the_template() -> None:
    text = _guide()
    table = text[text.index("| Alarm or rule | Fires when | First look |") :].split("\n\n")[0]
    named = {
        name for row in re.findall(r"^\| (.+?) \|", table, flags=re.MULTILINE) for name in re.findall(r"`(\w+)`", row)
    }
    assert named
    resources = _template()["Resources"]
    assert named <= set(resources), named - set(resources)
    # And every alarm that tells the topic (the wake and idle alarms act on scaling policies instead).
    told = {
        name
        for name, resource in resources.items()
        if resource["Type"] == "AWS::CloudWatch::Alarm" and "AlarmTopic" in json.dumps(resource["Properties"])
    }
    assert told and told <= named, told - named


def test_every_environment_variable_the_guide_names_is_read_somewhere() -> None:
    """An ALL_CAPS name in backticks (SWEEP_GRACE_SECONDS, DOMAIN_PACK_DIR...) is set by the template or
    read by the code; a make variable (REGION=, STACK=) by the Makefile."""
    text = _guide()
    named = set(re.findall(r"`([A-Z][A-Z0-9]*_[A-Z0-9_]+)`", text)) - NOT_ENVIRONMENT
    assert named
    sources = (ROOT / "template.yaml").read_text() + MAKEFILE.read_text()
    for folder in ("layers/dialogue/dialogue", "functions", "realizer_container", "ops", "devstack", "web"):
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in {".py", ".js", ".json", ".yaml"} and path.is_file():
                sources += path.read_text(errors="ignore")
    missing = sorted(name for name in named if name not in sources)
    assert not missing, missing


def test_every_module_and_venv_the_guide_runs_exists() -> None:
    text = _guide()
    modules = set(re.findall(r"python -m ([a-z_][\w.]*)", text))
    assert modules
    for module in modules:
        path = ROOT / module.replace(".", "/")
        candidates = [path.with_suffix(".py"), path / "__main__.py"]
        candidates += [ROOT / "realizer_container" / module.replace(".", "/") / "__main__.py"]
        assert any(candidate.exists() for candidate in candidates), f"python -m {module}"
    makefile = MAKEFILE.read_text()
    for venv in set(re.findall(r"(\.venv[\w-]*)/bin/", text)):
        assert re.search(rf"^\w+_?VENV :?= {re.escape(venv)}$|^VENV := {re.escape(venv)}$", makefile, re.MULTILINE), (
            venv
        )


# --- Operator traps (issue 41, item 5) ------------------------------------------------------------

# What a reader's shell has without installing anything: its keywords and builtins.
SHELL_BUILTINS = {"cd", "command", "do", "done", "echo", "export", "for", "if", "fi", "printf", "read", "then", "while"}


def _shell_commands() -> set[str]:
    """The programs the guide's sh blocks run (indented ones in lists too): the first word of each
    command, after pipes, `;`, `&&`, `||`, `$(`, `do` and `then`, past `NAME=value` assignments."""
    text = _guide()
    programs: set[str] = set()
    for block in re.findall(r"^[ \t]*```sh\n(.*?)^[ \t]*```", text, flags=re.MULTILINE | re.DOTALL):
        lines = [
            re.split(r"\s#", line, maxsplit=1)[0] for line in block.splitlines() if not line.lstrip().startswith("#")
        ]
        code = re.sub(r"'[^']*'", "''", "\n".join(lines).replace("\\\n", " "))
        for line in code.splitlines():
            for command in re.split(r"\|\||&&|[|;]|\$\(|\bdo\b|\bthen\b", line):
                words = command.strip().lstrip("(").split()
                while words and re.match(r"^[A-Za-z_]\w*=", words[0]):
                    words = words[1:]
                if words:
                    programs.add(words[0])
    return programs


def test_the_guide_lists_every_tool_its_commands_run() -> None:
    """A reader who installs what "Before you start" lists can run every command the guide gives: jq,
    openssl, curl and git included. A venv's program (`.venv-deploy/bin/sam`, `$SAM`) comes from make."""
    text = _guide()
    start = text.index("- **The tools this guide's commands run**")
    listed = set(re.findall(r"`([^`\s]+)`", text[start : text.index("\n- ", start + 1)]))
    run = _shell_commands()
    assert {"aws", "make", "git", "jq", "openssl", "curl"} <= run  # the guide does run them
    from_make = {program for program in run if program.startswith(".venv") or program.startswith("$")}
    assert {"jq", "openssl", "curl", "git"} <= listed
    assert run - SHELL_BUILTINS - from_make <= listed, sorted(run - SHELL_BUILTINS - from_make - listed)
    # `$SAM` is the deploy venv's SAM CLI, set before its use
    assert 'SAM=".venv-deploy/bin/sam"' in text


def test_the_guide_gives_the_first_deploy_its_honest_time() -> None:
    text = _guide()
    step = text[text.index("## 1. The first deploy") : text.index("## 2. ")]
    assert "about 5 minutes" not in step
    assert "The first\ndeploy takes **10-20 minutes**" in step


def test_the_guide_names_cloudfronts_account_verification_before_step_1() -> None:
    text = _guide()
    before = " ".join(text[: text.index("## 1. The first deploy")].split())
    assert "account verification for CloudFront distributions" in before
    assert "Your account must be verified before you can add new CloudFront resources" in before


def test_the_preflight_figures_the_guide_gives_are_preflights() -> None:
    from ops import preflight

    facts = preflight.template_facts(preflight.load_template(ROOT / "template.yaml"))
    text = _guide()
    section = text[text.index("## Before you deploy: make preflight") : text.index("## 1. The first deploy")]
    assert f"about {facts.lambda_peak_total} at once" in section
    assert f"the request for {facts.lambda_ask}" in section
    assert f"{preflight.LAMBDA_UNRESERVED_MINIMUM} Lambda keeps unreserved" in section
    assert "one to three `GpuInstanceTypes`" in section and preflight.GPU_TYPES_MOST == 3
    assert "`ok`, `warn` or `FAIL`" in section


def test_the_gpu_types_the_guide_offers_are_the_templates_one_to_three() -> None:
    template = _template()
    parameter = template["Parameters"]["GpuInstanceTypes"]
    assert parameter["Description"].startswith("One to three different GPU instance types")
    text = _guide()
    assert "Exactly three" not in text and "the three `GpuInstanceTypes`" not in text
    (row,) = [line for line in text.splitlines() if line.startswith("| `GpuInstanceTypes` |")]
    assert "One to three different types" in row
    for name in re.findall(r"`(g\d\w*\.\w+)`", row):
        assert name in parameter["AllowedValues"], name


def test_the_teardown_section_names_what_stays_as_the_template_keeps_it() -> None:
    """Every resource the template keeps past a delete (a Retain policy) or keeps for a while (a KMS key's
    pending window) is named, with the audit bucket's retention; every name the section gives exists."""
    template = _template()
    resources, parameters, outputs = template["Resources"], template["Parameters"], template["Outputs"]
    text = _guide()
    section = text[text.index("## 8. Tearing it down") : text.index("## Checks that run offline")]
    kept = {
        name for name, resource in resources.items() if str(resource.get("DeletionPolicy", "")).startswith("Retain")
    }
    assert {"ConversationTable", "StaffUserPool", "AuditBucket"} <= kept
    for name in kept:
        assert f"**`{name}`, retained" in section, name
    keys = {name: resource for name, resource in resources.items() if resource["Type"] == "AWS::KMS::Key"}
    for name, key in keys.items():
        window = key["Properties"]["PendingWindowInDays"]
        assert f"**`{name}`, scheduled for deletion**" in section and f"`PendingWindowInDays` ({window})" in section
    # The audit bucket's write-once retention, with the parameter's default
    audit = resources["AuditBucket"]["Properties"]["ObjectLockConfiguration"]["Rule"]["DefaultRetention"]
    assert audit["Mode"] == "COMPLIANCE" and "Object Lock in COMPLIANCE mode" in section
    assert f"`AuditRetentionDays` ({parameters['AuditRetentionDays']['Default']} by default)" in section
    # Every CamelCase name in backticks is the template's: a resource, a parameter or an output, or a
    # property or policy it sets (EmptyOnDelete, PendingWindowInDays, RetainExceptOnCreate)
    source = (ROOT / "template.yaml").read_text()
    named = set(re.findall(r"`([A-Z][a-z]+(?:[A-Z][a-z0-9]*)+)`", section))
    unknown = {name for name in named - set(resources) - set(parameters) - set(outputs)
               if not re.search(rf"^\s*(?:{name}:|DeletionPolicy: {name}$)", source, flags=re.MULTILINE)}  # fmt: skip
    assert named and not unknown, unknown
    # and make teardown's plan says the same before it changes anything
    from ops import teardown

    assert set(teardown.RETAINED) == kept
    assert "make teardown` also names in the\nplan" in section


def test_the_guide_leads_publish_pages_to_a_guided_deploy_that_persists() -> None:
    """The console's address goes in with `sam deploy --guided`, saved to samconfig.toml, never a one-off
    `--parameter-overrides` that the next plain `sam deploy` undoes."""
    text = _guide()
    assert "--parameter-overrides" not in text
    pages = text[text.index("### The pages: the resident chat") : text.index("### The first staff user")]
    assert "`.venv-deploy/bin/sam deploy --guided`" in pages and "`samconfig.toml` keeps it" in pages
    assert "`PagesUrl` itself: the distribution's root object is the chat page" in pages

"""P3 cold start: importing the turn handler module against importing boto3 and Powertools' resolver alone.

Fresh processes, interleaved, medians of wall-clock time (interpreter start included, the same on
both sides):

- turn_api: `python -c "import turn_api"` (the project is installed editable: its import roots are on sys.path);
- baseline: `python -c "import boto3; from aws_lambda_powertools.event_handler import APIGatewayHttpResolver"`.

Both run with the function's environment from template.yaml (TABLE_NAME, POWERTOOLS_*). Twice:
in this development environment, and in a Lambda-like one (LAMBDA_TASK_ROOT and the function's name
set, as Lambda does: observability.py then builds the Tracer, and the X-Ray SDK takes its Lambda
path). A third command, interleaved with the two, imports what no handler with validated routes avoids
(pydantic and the validating resolver): the floor. Then `-X importtime`, grouped by package, for what
turn_api adds beyond the baseline.

The Tracer, interleaved with those three: `import turn_api` twice more. dialogue/aws/observability.py builds
Powertools' Tracer only where tracing is on (Powertools' own rule: in Lambda, unless POWERTOOLS_TRACE_DISABLED
is true, or under `sam local` or Chalice) and otherwise gives the handlers `TracingOff`, a decorator that does
nothing: as deployed, the Lambda-like environment gets a Tracer with botocore patched, the development one
(tests, devstack) no Tracer and no X-Ray SDK. Once with POWERTOOLS_TRACE_DISABLED=true, Powertools' own
switch, as a function configured without tracing would run it: no Tracer in either environment. Once more
with the same switch and observability.py as it was before that change, the Tracer built whatever the
environment (PREVIOUS_OBSERVABILITY, the tracer's line replaced in the layer's file): a copy of the layer's
dialogue package in a temporary folder put ahead of the layer on PYTHONPATH (the layer is not touched). That Tracer,
even disabled, imports the X-Ray SDK and builds its recorder (it takes the SDK's recorder as its provider
before it looks at `disabled`); the switch skipped only the botocore patch and the recorder's streaming
setting. Per variant: the median, its ratio to the baseline, the per-round difference from the layer as
deployed, and the `-X importtime` self time of the X-Ray SDK and what it alone pulls in (the modules the
variant imports that the layer with the switch, which imports no SDK, does not). Then the SDK's import and
the Tracer's build timed inside a process, and whether turn_api imports with aws_xray_sdk absent.
"""

from __future__ import annotations

import difflib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from bench._common import ROOT, SMALLEST, emit, markdown_table, median, sized, summary

BENCH = "P3"
QUESTION = "Cold start: import turn_api vs import boto3 + Powertools' resolver, fresh processes"
GOAL = 1.25
RUNS = sized(15, 1)
GOAL_TEXT = f"≤ {GOAL}x"

BASELINE = "import boto3; from aws_lambda_powertools.event_handler import APIGatewayHttpResolver"
TURN_API = "import turn_api"
# What no handler with typed, validated routes avoids: pydantic and Powertools' validating resolver.
FLOOR = BASELINE + "; import pydantic; APIGatewayHttpResolver(enable_validation=True)"
IMPORTTIME_RUNS = sized(3, 1)

LAYER_PACKAGE = ROOT / "layers" / "dialogue" / "dialogue"
OBSERVABILITY = LAYER_PACKAGE / "aws" / "observability.py"
LAYER_REQUIREMENTS = ROOT / "layers" / "dialogue" / "requirements.txt"
TRACE_DISABLED = {"POWERTOOLS_TRACE_DISABLED": "true"}
# The variants of the Tracer, in the order of the second table.
AS_DEPLOYED, SWITCHED_OFF, TRACER_ALWAYS = "as_deployed", "trace_disabled", "tracer_always"
VARIANTS = {
    AS_DEPLOYED: "as deployed",
    SWITCHED_OFF: "as deployed, POWERTOOLS_TRACE_DISABLED=true",
    TRACER_ALWAYS: "Tracer always built (before this change), POWERTOOLS_TRACE_DISABLED=true",
}
# observability.py as it was before the Tracer was built only where tracing is on, measured as
# TRACER_ALWAYS: (text in the layer's module, the previous text), each found exactly once. The copy builds
# `Tracer(patch_modules=("botocore",))` whatever the environment (its TracingOff and tracing_on stay
# defined, unused); the change made is in this bench's JSON as `observability_change_applied`, a diff from
# that file to the layer's.
PREVIOUS_OBSERVABILITY = (
    (
        'tracer: Tracer | TracingOff = Tracer(patch_modules=("botocore",)) if tracing_on() else TracingOff()\n',
        'tracer = Tracer(patch_modules=("botocore",))\n',
    ),
)
# The Tracer's own cost, timed inside a fresh process once boto3 and Powertools are imported (as they
# are when turn_api reaches dialogue.aws.observability): importing the SDK, then building the Tracer as
# dialogue.aws.observability does. Differences of a few ms drown in the wall times of whole processes.
IN_PROCESS = (
    "import time, boto3, botocore.client, botocore.endpoint; from aws_lambda_powertools import Tracer; "
    "started = time.perf_counter(); import aws_xray_sdk.core; imported = time.perf_counter(); "
    "Tracer(patch_modules=('botocore',)); built = time.perf_counter(); "
    "print((imported - started) * 1e3, (built - imported) * 1e3)"
)
IN_PROCESS_RUNS = sized(7, 1)
# What each variant's process holds once turn_api is imported.
PROBE = (
    "import json, sys, turn_api; from dialogue.aws import observability as o; print(json.dumps({"
    "'observability': o.__file__, 'tracer': type(o.tracer).__name__, "
    "'disabled': getattr(o.tracer, 'disabled', None), 'aws_xray_sdk_imported': 'aws_xray_sdk' in sys.modules, "
    "'botocore_patched': 'aws_xray_sdk.ext.botocore.patch' in sys.modules}))"
)


def environment(lambda_like: bool, task_root: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AWS_LAMBDA_", "LAMBDA_", "_X_AMZN", "POWERTOOLS_", "AWS_XRAY"))
    }
    env.update(
        {
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_REGION": "us-east-1",
            # template.yaml's Globals and the turn function's own variables.
            "TABLE_NAME": "conversations",
            "LOG_LEVEL": "INFO",
            "POWERTOOLS_LOG_LEVEL": "INFO",
            "POWERTOOLS_METRICS_NAMESPACE": "EnrollmentDesk/bench",  # EnrollmentDesk/${AWS::StackName}
            "POWERTOOLS_LOGGER_LOG_EVENT": "false",
            "POWERTOOLS_TRACER_CAPTURE_RESPONSE": "false",
            "POWERTOOLS_SERVICE_NAME": "turn_api",
        }
    )
    if lambda_like:
        env.update(
            {
                "LAMBDA_TASK_ROOT": task_root,
                "AWS_LAMBDA_FUNCTION_NAME": "TurnApiFunction",
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
                "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
                "_HANDLER": "turn_api.lambda_handler",
            }
        )
    return env


def observability_before_change(package: Path) -> str:
    """Copy the layer's dialogue package into `package`, its observability.py as it was before the change
    (PREVIOUS_OBSERVABILITY); the change made, from that file to the layer's, as a diff."""
    shutil.copytree(LAYER_PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    current = OBSERVABILITY.read_text(encoding="utf-8")
    previous = current
    for old, new in PREVIOUS_OBSERVABILITY:
        if previous.count(old) != 1:
            raise SystemExit(
                f"P3: {OBSERVABILITY.relative_to(ROOT)} changed; PREVIOUS_OBSERVABILITY no longer fits {old!r}"
            )
        previous = previous.replace(old, new)
    (package / "aws" / "observability.py").write_text(previous, encoding="utf-8")
    name = str(OBSERVABILITY.relative_to(ROOT))
    lines = difflib.unified_diff(
        previous.splitlines(keepends=True), current.splitlines(keepends=True), "a/" + name, "b/" + name
    )
    return "".join(lines)


def variant_environments(env: dict[str, str], copy_root: str) -> dict[str, dict[str, str]]:
    """The function's environment for each variant of the Tracer."""
    path = os.pathsep.join(filter(None, [copy_root, env.get("PYTHONPATH")]))
    return {
        AS_DEPLOYED: env,
        SWITCHED_OFF: {**env, **TRACE_DISABLED},
        TRACER_ALWAYS: {**env, **TRACE_DISABLED, "PYTHONPATH": path},
    }


def probe(env: dict[str, str]) -> dict[str, Any]:
    completed = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, cwd=ROOT, capture_output=True, text=True, check=True
    )
    found: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return found


def run_once(code: str, env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds of one fresh process, and the CPU seconds (user + system) it used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, check=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def interleaved_runs(
    commands: dict[str, tuple[str, dict[str, str]]], runs: int
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Each command (code, environment) in a fresh process, `runs` times, the order alternating: per
    command, the wall seconds and the CPU seconds of each round."""
    for code, env in () if SMALLEST else commands.values():  # warm the file cache and the .pyc files
        run_once(code, env)
    times: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    names = list(commands)
    for index in range(runs):
        for name in names if index % 2 == 0 else reversed(names):
            wall, used = run_once(*commands[name])
            times[name].append(wall)
            cpu[name].append(used)
    return times, cpu


def paired_change_ms(samples: list[float], reference: list[float]) -> float:
    """Median of the per-round differences, in ms: both ran in each round, so a slow spell weighs on both."""
    return median([(value - base) * 1e3 for value, base in zip(samples, reference, strict=True)])


def import_times(code: str, env: dict[str, str]) -> dict[str, int]:
    """Self time in µs per module, from `-X importtime`."""
    completed = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, check=True
    )
    times: dict[str, int] = {}
    for line in completed.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _, name = line[len("import time:") :].split("|")
        times[name.strip()] = int(self_us)
    return times


def added_by_package(env: dict[str, str], turn_api_runs: list[dict[str, int]]) -> dict[str, float]:
    """Milliseconds of import self time turn_api adds to the baseline, by package (median of runs)."""
    baseline = import_times(BASELINE, env)
    runs: list[Counter[str]] = []
    for turn_api_times in turn_api_runs:
        groups: Counter[str] = Counter()
        for module, self_us in turn_api_times.items():
            if module in baseline:
                continue
            parts = module.split(".")
            group = ".".join(parts[:3]) if parts[0] == "aws_lambda_powertools" else parts[0]
            groups[group] += self_us
        runs.append(groups)
    names = {group for groups in runs for group in groups}
    medians = {group: median([groups.get(group, 0) for groups in runs]) / 1000 for group in names}
    return dict(sorted(medians.items(), key=lambda item: -item[1]))


def tracer_in_process(env: dict[str, str]) -> dict[str, float]:
    """Milliseconds to import aws_xray_sdk.core and to build the Tracer, medians of fresh processes."""
    imports: list[float] = []
    builds: list[float] = []
    for _ in range(IN_PROCESS_RUNS):
        completed = subprocess.run(
            [sys.executable, "-c", IN_PROCESS], env=env, cwd=ROOT, capture_output=True, text=True, check=True
        )
        imported, built = completed.stdout.strip().splitlines()[-1].split()
        imports.append(float(imported))
        builds.append(float(built))
    return {"import_xray_sdk_core_ms": median(imports), "build_tracer_ms": median(builds)}


def xray_share(variant_runs: dict[str, list[dict[str, int]]]) -> dict[str, dict[str, Any]]:
    """Per variant, import self time (ms, medians of runs) in all and in the X-Ray SDK with what it alone
    pulls in: the modules the variant imports that the layer with POWERTOOLS_TRACE_DISABLED=true, which
    builds no Tracer in either environment, never does."""
    never = set().union(*variant_runs[SWITCHED_OFF])
    shares: dict[str, dict[str, Any]] = {}
    for variant, runs in variant_runs.items():
        total = [sum(times.values()) for times in runs]
        xray = [sum(us for module, us in times.items() if module not in never) for times in runs]
        by_package: Counter[str] = Counter()
        for module, self_us in runs[0].items():
            if module not in never:
                by_package[module.split(".")[0]] += self_us
        shares[variant] = {
            "import_self_ms": median(total) / 1000,
            "xray_ms": median(xray) / 1000,
            "share": median(xray) / median(total),
            "xray_by_package_ms_first_run": {name: us / 1000 for name, us in by_package.most_common()},
        }
    return shares


def xray_without_sdk(env: dict[str, str]) -> str:
    """Whether turn_api imports where aws-xray-sdk is absent (the python3.12 runtime has none of its own)."""
    code = "import sys; sys.modules['aws_xray_sdk'] = None; sys.modules['aws_xray_sdk.core'] = None; import turn_api"
    completed = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True)
    if completed.returncode == 0:
        return "imports"
    return completed.stderr.strip().splitlines()[-1]


def main() -> int:
    with (
        tempfile.TemporaryDirectory(prefix="lambda-task-root-") as task_root,
        tempfile.TemporaryDirectory(prefix="observability-before-change-") as copy_root,
    ):
        change = observability_before_change(Path(copy_root) / "dialogue")
        environments = {"development": environment(False, task_root), "Lambda-like": environment(True, task_root)}
        ratios: dict[str, dict[str, Any]] = {}
        added: dict[str, dict[str, float]] = {}
        tracer: dict[str, dict[str, dict[str, Any]]] = {}
        in_process: dict[str, dict[str, dict[str, float]]] = {}
        for name, env in environments.items():
            variants = variant_environments(env, copy_root)
            probes = {variant: probe(variant_env) for variant, variant_env in variants.items()}
            _check_variants(name, probes, copy_root)
            times, cpu = interleaved_runs(
                {
                    "turn_api": (TURN_API, env),
                    "baseline": (BASELINE, env),
                    "floor": (FLOOR, env),
                    SWITCHED_OFF: (TURN_API, variants[SWITCHED_OFF]),
                    TRACER_ALWAYS: (TURN_API, variants[TRACER_ALWAYS]),
                },
                RUNS,
            )
            handler_ms = median(times["turn_api"]) * 1e3
            baseline_ms = median(times["baseline"]) * 1e3
            floor_ms = median(times["floor"]) * 1e3
            ratios[name] = {
                "turn_api_ms": handler_ms,
                "baseline_ms": baseline_ms,
                "floor_ms": floor_ms,
                "ratio": handler_ms / baseline_ms,
                "floor_ratio": floor_ms / baseline_ms,
            }
            emit(BENCH, "measurement", environment=name, runs=RUNS, **ratios[name], samples=times, cpu_samples=cpu)
            variant_runs = {
                variant: [import_times(TURN_API, variant_env) for _ in range(IMPORTTIME_RUNS)]
                for variant, variant_env in variants.items()
            }
            added[name] = added_by_package(env, variant_runs[AS_DEPLOYED])
            shares = xray_share(variant_runs)
            # The SDK's import and the Tracer's build alone, in the function's environment and with the switch.
            in_process[name] = {
                AS_DEPLOYED: tracer_in_process(env),
                SWITCHED_OFF: tracer_in_process(variants[SWITCHED_OFF]),
            }
            command = {AS_DEPLOYED: "turn_api", SWITCHED_OFF: SWITCHED_OFF, TRACER_ALWAYS: TRACER_ALWAYS}
            wall = {variant: times[command[variant]] for variant in VARIANTS}
            used = {variant: cpu[command[variant]] for variant in VARIANTS}
            tracer[name] = {
                variant: {
                    "turn_api_ms": median(wall[variant]) * 1e3,
                    "ratio": median(wall[variant]) * 1e3 / baseline_ms,
                    "change_ms": paired_change_ms(wall[variant], wall[AS_DEPLOYED]),
                    "cpu_ms": median(used[variant]) * 1e3,
                    "cpu_change_ms": paired_change_ms(used[variant], used[AS_DEPLOYED]),
                    "vs_tracer_always_ms": paired_change_ms(wall[variant], wall[TRACER_ALWAYS]),
                    "cpu_vs_tracer_always_ms": paired_change_ms(used[variant], used[TRACER_ALWAYS]),
                    **shares[variant],
                    "process": probes[variant],
                }
                for variant in VARIANTS
            }
            emit(BENCH, "tracer", environment=name, runs=RUNS, variants=tracer[name], in_process=in_process[name])
        without_sdk = {
            "development": xray_without_sdk(environments["development"]),
            "Lambda-like": xray_without_sdk(environments["Lambda-like"]),
            "Lambda-like, POWERTOOLS_TRACE_DISABLED=true": xray_without_sdk(
                {**environments["Lambda-like"], **TRACE_DISABLED}
            ),
        }
        emit(
            BENCH,
            "importtime",
            added_ms=added,
            turn_api_without_aws_xray_sdk=without_sdk,
            observability_change_applied=change,
        )

    development = ratios["development"]
    lambda_like = ratios["Lambda-like"]
    table = markdown_table(
        [
            "environment",
            "import turn_api (ms)",
            "boto3 + resolver (ms)",
            "ratio",
            f"≤ {GOAL}x",
            "floor: + pydantic + validating resolver (ms)",
            "floor ratio",
        ],
        [
            [
                name,
                f"{row['turn_api_ms']:.0f}",
                f"{row['baseline_ms']:.0f}",
                f"{row['ratio']:.2f}x",
                _yes(row["ratio"]),
                f"{row['floor_ms']:.0f}",
                f"{row['floor_ratio']:.2f}x",
            ]
            for name, row in ratios.items()
        ],
    )
    development_added = added["development"]
    lambda_added = added["Lambda-like"]
    top = sorted(
        set(development_added) | set(lambda_added),
        key=lambda group: -max(development_added.get(group, 0.0), lambda_added.get(group, 0.0)),
    )[:14]
    added_rows = [
        [group, f"{development_added.get(group, 0.0):.1f}", f"{lambda_added.get(group, 0.0):.1f}"] for group in top
    ]
    met = development["ratio"] <= GOAL and lambda_like["ratio"] <= GOAL
    own = ("dialogue", "api_models", "turn_api")
    core_ms = {name: sum(groups.get(group, 0.0) for group in own) for name, groups in added.items()}
    xray_ms = {name: groups.get("aws_xray_sdk", 0.0) for name, groups in added.items()}
    floors = (development["floor_ratio"], lambda_like["floor_ratio"])
    verdict = "cannot reach" if min(floors) > GOAL else "leaves little room under"
    explanation = (
        "Why it misses: a handler that uses pydantic and Powertools' validating resolver, as this one must, "
        f"{verdict} {GOAL}x. Those two alone (`APIGatewayHttpResolver(enable_validation=True)`, for the "
        f"typed routes) already cost {development['floor_ratio']:.2f}x the baseline "
        f"({lambda_like['floor_ratio']:.2f}x Lambda-like): the baseline imports the resolver class but neither "
        "pydantic nor the OpenAPI validation it pulls in. Beyond that floor (import self times, medians of "
        f"{IMPORTTIME_RUNS} runs): the X-Ray SDK under Powertools' Tracer, {xray_ms['Lambda-like']:.0f} ms "
        "Lambda-like, where, as in Lambda, tracing is on and the SDK takes its Lambda path (the Lambda-like row "
        f"is the one that speaks for a cold start); {xray_ms['development']:.0f} ms in development, where "
        "tracing is off and observability.py builds no Tracer. Then the dialogue "
        f"core, the API models and the handler module: {core_ms['development']:.0f} ms "
        f"({core_ms['Lambda-like']:.0f} ms Lambda-like), most of it pydantic building the validators of some "
        "40 model classes (the pack, records, jobs and API bodies) as they are defined; deferring those builds "
        "(defer_build) would only move the cost into the first request, which a cold start pays too."
    )
    notes = "\n\n".join(
        [
            *([] if met else [explanation]),
            f"Medians of {RUNS} fresh processes per command, the three commands interleaved (with the two "
            "variants of the Tracer below); interpreter "
            "start-up included on every side. The floor is "
            "`import boto3, pydantic; APIGatewayHttpResolver(enable_validation=True)`.",
            "What `import turn_api` adds, by package (`-X importtime` self time in ms, median of "
            f"{IMPORTTIME_RUNS} runs, modules the baseline does not import):\n\n"
            + markdown_table(["package", "development", "Lambda-like"], added_rows),
            _sdk_finding(without_sdk),
            _tracer_notes(tracer, in_process),
        ]
    )
    figure = f"{development['ratio']:.2f}x (Lambda-like environment: {lambda_like['ratio']:.2f}x)"
    values = {
        "ratios": ratios,
        "added_ms": added,
        "turn_api_without_aws_xray_sdk": without_sdk,
        "tracer": tracer,
        "tracer_in_process": in_process,
        "observability_change_applied": change,
    }
    summary(BENCH, QUESTION, GOAL_TEXT, figure=figure, met=met, table=table, notes=notes, values=values)
    return 0


def _yes(ratio: float) -> str:
    return "yes" if ratio <= GOAL else "no"


def _check_variants(environment_name: str, probes: dict[str, dict[str, Any]], copy_root: str) -> None:
    """Each variant is what it claims to be, or the figures would compare the wrong things: the tracer its
    process holds, whether that is disabled, whether it imported aws_xray_sdk and patched botocore, and
    whether its observability.py came from the copy (the previous file) or the layer."""
    tracing_off = {"tracer": "TracingOff", "disabled": True, "aws_xray_sdk_imported": False, "botocore_patched": False}
    traced = {"tracer": "Tracer", "disabled": False, "aws_xray_sdk_imported": True, "botocore_patched": True}
    expected = {
        AS_DEPLOYED: traced if environment_name == "Lambda-like" else tracing_off,
        SWITCHED_OFF: tracing_off,
        TRACER_ALWAYS: {"tracer": "Tracer", "disabled": True, "aws_xray_sdk_imported": True, "botocore_patched": False},
    }
    for variant, wanted in expected.items():
        found = probes[variant]
        from_copy = found["observability"].startswith(copy_root)
        wrong = {key: found[key] for key, value in wanted.items() if found[key] != value}
        if wrong or from_copy != (variant == TRACER_ALWAYS):
            raise SystemExit(f"P3: {environment_name}, {variant} is not as measured: {found}")


def _outcome(result: str) -> str:
    return "imports" if result == "imports" else f"fails (`{result}`)"


def _sdk_finding(without_sdk: dict[str, str]) -> str:
    requirements = LAYER_REQUIREMENTS.read_text(encoding="utf-8")
    extra = any(line.replace(" ", "").startswith("aws-lambda-powertools[tracer]") for line in requirements.splitlines())
    outcomes = (
        f"With the SDK absent, `import turn_api` in the Lambda-like environment "
        f"{_outcome(without_sdk['Lambda-like'])}; there with POWERTOOLS_TRACE_DISABLED=true it "
        f"{_outcome(without_sdk['Lambda-like, POWERTOOLS_TRACE_DISABLED=true'])}; in development it "
        f"{_outcome(without_sdk['development'])}."
    )
    if extra:
        return (
            "The X-Ray SDK must ship in the layer, and does (layers/dialogue/requirements.txt pins "
            "aws-lambda-powertools with its `tracer` extra; the python3.12 runtime has no aws-xray-sdk): where "
            "tracing is on, Powertools' Tracer imports the SDK when it is built, at import of "
            "dialogue.aws.observability; where it is off, nothing imports it. " + outcomes
        )
    return (
        "A finding on the way: the layer built from layers/dialogue/requirements.txt holds no aws-xray-sdk "
        "(aws-lambda-powertools is pinned without its `tracer` extra), and where tracing is on Powertools' "
        "Tracer imports the SDK when it is built, at import of dialogue.aws.observability. " + outcomes + " "
        "Unless the Lambda runtime provides aws-xray-sdk, both functions fail at init with tracing on. These "
        "figures include the SDK, as a working deployment with tracing must."
    )


def _tracer_cell(process: dict[str, Any]) -> str:
    if process["tracer"] != "Tracer":
        return str(process["tracer"])
    return "Tracer, disabled" if process["disabled"] else "Tracer, tracing"


def _tracer_notes(
    tracer: dict[str, dict[str, dict[str, Any]]], in_process: dict[str, dict[str, dict[str, float]]]
) -> str:
    """The second table, the Tracer as deployed, switched off and always built, and the decision it supports."""
    rows = [
        [
            name,
            VARIANTS[variant],
            _tracer_cell(row["process"]),
            "yes" if row["process"]["aws_xray_sdk_imported"] else "no",
            f"{row['turn_api_ms']:.0f}",
            f"{row['ratio']:.2f}x",
            "" if variant == AS_DEPLOYED else f"{row['change_ms']:+.0f}",
            f"{row['cpu_ms']:.0f}",
            "" if variant == AS_DEPLOYED else f"{row['cpu_change_ms']:+.0f}",
            f"{row['xray_ms']:.1f}",
            f"{row['share']:.0%}",
        ]
        for name, variants in tracer.items()
        for variant, row in variants.items()
    ]
    table = markdown_table(
        [
            "environment",
            "variant",
            "tracer",
            "X-Ray SDK imported",
            "import turn_api (ms)",
            "ratio to boto3 + resolver",
            "vs as deployed (ms)",
            "CPU (ms)",
            "vs as deployed, CPU (ms)",
            "X-Ray SDK + what it pulls in, import self time (ms)",
            "share of import self time",
        ],
        rows,
    )
    lam, dev = tracer["Lambda-like"], tracer["development"]
    lam_cost, dev_cost = in_process["Lambda-like"], in_process["development"]
    build_saved = lam_cost[AS_DEPLOYED]["build_tracer_ms"] - lam_cost[SWITCHED_OFF]["build_tracer_ms"]
    packages = ", ".join(
        f"{package} {ms:.1f}" for package, ms in lam[AS_DEPLOYED]["xray_by_package_ms_first_run"].items() if ms >= 0.5
    )
    measured = (
        "The Tracer as deployed, switched off, and always built as before this change: medians of the same "
        "interleaved fresh processes; vs as deployed, the median of the per-round differences from the layer as "
        "deployed (each round runs every command once); CPU, the process's user + system time, which other work "
        "on the machine disturbs less than wall time; the X-Ray SDK's import self time, medians of "
        f"{IMPORTTIME_RUNS} runs, counts the modules a variant imports that the layer with "
        "POWERTOOLS_TRACE_DISABLED=true never does (Lambda-like as deployed, in one run: "
        f"{packages or 'none'} ms), its share is of the variant's whole import self time. Each variant's "
        "process is checked before it is timed: its tracer, whether it imported aws_xray_sdk and patched "
        "botocore, and which observability.py it loaded. observability.py builds the Tracer only where tracing "
        "is on, by Powertools' rule (in Lambda, unless POWERTOOLS_TRACE_DISABLED, `sam local` or Chalice), and "
        "otherwise gives the handlers `TracingOff`, which imports nothing. Before, it built the Tracer "
        "everywhere, and POWERTOOLS_TRACE_DISABLED=true, Powertools' own switch, did not keep the SDK out: the "
        "Tracer takes the SDK's recorder as its provider (importing aws_xray_sdk.core, whose recorder is built at "
        "import) before it reads `disabled`, which then skips only the botocore patch and the recorder's streaming "
        "setting; outside Lambda Powertools disables that Tracer by itself, so there the switch changed nothing.\n\n"
        + table
        + "\n\nTimed inside fresh processes once boto3 and Powertools are imported (medians of "
        f"{IN_PROCESS_RUNS}): `import aws_xray_sdk.core` takes "
        f"{lam_cost[AS_DEPLOYED]['import_xray_sdk_core_ms']:.0f} ms Lambda-like "
        f"({lam_cost[SWITCHED_OFF]['import_xray_sdk_core_ms']:.0f} ms with POWERTOOLS_TRACE_DISABLED=true; "
        f"{dev_cost[AS_DEPLOYED]['import_xray_sdk_core_ms']:.0f} ms development); "
        '`Tracer(patch_modules=("botocore",))` then takes '
        f"{lam_cost[AS_DEPLOYED]['build_tracer_ms']:.1f} ms Lambda-like, "
        f"{lam_cost[SWITCHED_OFF]['build_tracer_ms']:.1f} ms with the switch. Before this change that "
        f"difference, {build_saved:.1f} ms, "
        "was all the switch saved; now no Tracer is built with it, and it saves the import as well."
    )
    noise = dev[SWITCHED_OFF]
    scale = (
        "the development rows as deployed and with the switch run the same code and differ by "
        f"{noise['change_ms']:+.0f} ms wall, {noise['cpu_change_ms']:+.0f} ms CPU"
    )
    switched = lam[SWITCHED_OFF]
    within_noise = max(abs(switched["change_ms"]), abs(switched["vs_tracer_always_ms"])) <= abs(noise["change_ms"])
    whole = (
        f"Lambda-like, whole processes read {switched['change_ms']:+.0f} ms in wall time "
        f"({switched['cpu_change_ms']:+.0f} ms CPU) against the functions as deployed and "
        f"{switched['vs_tracer_always_ms']:+.0f} ms ({switched['cpu_vs_tracer_always_ms']:+.0f} ms CPU) against the "
        "Tracer always built with the same switch"
        + (
            f", differences whole processes cannot resolve here: {scale}."
            if within_noise
            else f" (for scale, {scale})."
        )
    )
    decision = (
        "Decision: the Tracer stays on in the deployed functions (Tracing: Active, template.yaml), and "
        "observability.py now builds it only where tracing is on. In Lambda the X-Ray SDK and what it pulls in "
        f"are {lam[AS_DEPLOYED]['xray_ms']:.0f} ms of import self time ({lam[AS_DEPLOYED]['share']:.0%} of "
        f"all `import turn_api` imports; {lam_cost[AS_DEPLOYED]['import_xray_sdk_core_ms']:.0f} ms timed "
        "in-process). With SnapStart on the published versions the import runs once, when a version is "
        "published and its snapshot taken; a restored cold start skips it, so in the cold starts users meet the "
        "Tracer costs nothing, while X-Ray is the one view that follows a turn across the API, the table's "
        "stream, the dispatch function, SQS and the screen Lambda. Without SnapStart (a region that does not "
        "offer it for Python, or an invocation of the unpublished $LATEST) each cold start pays that import, "
        "which buys the traces. A deployment that would rather have the milliseconds sets "
        "POWERTOOLS_TRACE_DISABLED=true, which now keeps the SDK out: before this change the Tracer, built "
        f"anyway, still imported it with the switch ({lam[TRACER_ALWAYS]['xray_ms']:.0f} ms of import self time, "
        f"{lam_cost[SWITCHED_OFF]['import_xray_sdk_core_ms']:.0f} ms timed in-process), and the switch saved "
        f"only its build ({build_saved:.1f} ms). " + whole + " Tests, devstack and `sam local invoke` "
        "(outside Lambda, or AWS_SAM_LOCAL set: Powertools disables tracing) no longer import the SDK: in "
        f"development the Tracer always built reads {dev[TRACER_ALWAYS]['change_ms']:+.0f} ms wall and "
        f"{dev[TRACER_ALWAYS]['cpu_change_ms']:+.0f} ms CPU per process against as deployed "
        f"({dev[TRACER_ALWAYS]['xray_ms']:.0f} ms of import self time in the SDK and what it pulls in: outside "
        "Lambda its recorder builds a sampler with botocore X-Ray clients); `sam local invoke` sets "
        "LAMBDA_TASK_ROOT, so the SDK takes its Lambda path there, and the change saves it the Lambda-like "
        "import above."
    )
    return measured + "\n\n" + decision


if __name__ == "__main__":
    raise SystemExit(main())

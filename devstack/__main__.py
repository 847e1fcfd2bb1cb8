"""`python -m devstack`: the whole pipeline offline, on moto.

replay FILE.csv [--realizer NAME] [--json]   scripted turns through every component, seed's tables
controls [FILE] [--json]                     the desk's control replies through the screens
chat [--realizer NAME]                       talk to the assistant in the terminal
serve [--host H] [--port P] [--realizer NAME]  the HTTP APIs on loopback, as API Gateway serves them
token --staff NAME [--group G] [--minutes N]   a bearer token for the staff API that serve accepts
eval FILE.csv [FILE.csv ...] [--json] [--goal F] a labelled set scored against the desk's understanding
new-pack NAME [DIR]                          write a starter desk (no other desk's words) to DIR
check-pack PATH                              every check the tests run on data/*, on a pack anywhere
fit-examples DIR                             fit examples.toml's linear scorer: DIR/examples.weights.json (numpy)
verify-audit                                 a desk session's audit chains verified, then two rewrites caught
fleet [--scenario S] [--desks N] [--days D] [--seed N] [--json]  the GPU realizer's scaling, simulated
                                             from template.yaml (devstack.fleet)

replay, controls, chat and serve take --pack DIR (a desk's folder, or its name under data/); without
it, DOMAIN_PACK_DIR, else the default desk of data/packs.toml. They take --screens lesson|desk (the
reply screens' profile); without it, SCREEN_PROFILE, else the pack's. They and eval take
--understanding lesson|desk (rules alone, or rules and the desk's examples.toml); without it,
UNDERSTANDING_PROFILE, else the pack's.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dialogue.pack import DomainPack

CONTROLS_FILE = "screen_controls.csv"
SCREEN_PROFILE_ENV = "SCREEN_PROFILE"
ENGINE_LABELS = {"qwen": "Qwen realization", "vllm": "Qwen realization (vLLM)", "smollm": "SmolLM2 realization"}


def _realizer(value: str) -> str:
    from devstack.realizers import REALIZER_NAMES

    if value in REALIZER_NAMES[:-1] or (value.startswith("canned:") and len(value) > len("canned:")):
        return value
    raise argparse.ArgumentTypeError(f"choose one of {', '.join(REALIZER_NAMES)}")


def _use_pack(args: argparse.Namespace) -> None:
    """Make --pack the desk of this process and of everything it starts (handlers, serve's workers)."""
    from dialogue.pack import PACK_DIR_ENV, PROFILE_ENV, PackError, forget_loaded_packs, get_pack, pack_dir_for

    if getattr(args, "pack", None):
        os.environ[PACK_DIR_ENV] = str(pack_dir_for(args.pack).resolve())
        forget_loaded_packs()
    if getattr(args, "screens", None):
        os.environ[SCREEN_PROFILE_ENV] = args.screens
    if getattr(args, "understanding", None):
        os.environ[PROFILE_ENV] = args.understanding
    pack = get_pack()  # a pack with a mistake stops here, with the file, table and field named
    if active_profile(pack) == "desk" and pack.spec.screens.desk is None:
        raise PackError(f"{pack.spec.domain.name}: the desk screen profile needs [screens.desk] in its domain.toml")


def active_profile(pack: DomainPack) -> str:
    """The screens' profile this run uses: --screens or SCREEN_PROFILE, else the pack's."""
    return os.environ.get(SCREEN_PROFILE_ENV) or str(pack.spec.screens.profile)


def _replay(args: argparse.Namespace) -> int:
    from devstack import replay as tables
    from devstack.stack import local_stack
    from dialogue.pack import PackError, get_pack, read_scripted_turns, scripted_turns_by_conversation

    try:
        _use_pack(args)
        frame = get_pack().frame
        turns = read_scripted_turns(args.file, frame)
    except PackError as error:
        print(f"devstack: {error}", file=sys.stderr)
        return 2
    rows = []
    try:
        with local_stack(realizer=args.realizer, model=args.model, revision=args.revision) as stack:
            for conversation in scripted_turns_by_conversation(turns).values():
                rows.extend(tables.replay_conversation(stack, conversation))
            if args.audit_dir:
                from devstack.audit import write_audit
                from devstack.desk_walk import walk_the_desk

                walked = walk_the_desk(stack)  # the staff's side too: claims, decisions, staff messages
                print(f"devstack: a staff pass over the desk: {dict(walked)}", file=sys.stderr)
                counts = write_audit(stack, Path(args.audit_dir))
                print(f"devstack: audit written to {args.audit_dir}: {counts}", file=sys.stderr)
    except tables.ReplayError as error:
        print(f"devstack: {error}", file=sys.stderr)
        return 1
    except (ValueError, RuntimeError) as error:  # an unknown realizer, or model weights not on this machine
        print(f"devstack: {error}", file=sys.stderr)
        return 2
    if args.json:
        for row in rows:
            print(json.dumps(row.json_record()))
    else:
        label = ENGINE_LABELS.get(args.realizer, f"{args.realizer.split(':')[0]} realization")
        utterances = {(turn.conversation_id, turn.turn_id): turn.user_utterance for turn in turns}
        first = rows[0].conversation_id if rows else ""
        print(
            "\n\n".join(
                [
                    tables.trace_table(rows, frame),
                    tables.token_table(rows),
                    tables.replies_table(rows, label),
                    tables.screens_table(rows, label),
                    tables.shown_transcript(rows, utterances, first),
                    tables.retained_table(rows, frame),
                    tables.summary_line(rows),
                ]
            )
        )
    return 1 if any(row.matches is False for row in rows) else 0


def _controls(args: argparse.Namespace) -> int:
    from devstack.controls import control_table, read_controls, screen_controls
    from dialogue.actions import ScreenProfile
    from dialogue.pack import PackError, default_pack_dir, get_pack

    try:
        _use_pack(args)
        pack = get_pack()
        controls = read_controls(Path(args.file) if args.file else default_pack_dir() / CONTROLS_FILE, pack)
        results = screen_controls(controls, pack, ScreenProfile(active_profile(pack)))
    except PackError as error:
        print(f"devstack: {error}", file=sys.stderr)
        return 2
    if args.json:
        for result in results:
            print(json.dumps(result.json_record()))
        return 0
    print(control_table(results, pack))
    return 0


def _chat(args: argparse.Namespace) -> int:
    from devstack.chat import run_chat
    from dialogue.pack import PackError

    try:
        _use_pack(args)
    except PackError as error:
        print(f"devstack: {error}", file=sys.stderr)
        return 2
    return run_chat(args.realizer, sys.stdin, sys.stdout, model=args.model, revision=args.revision)


def _serve(args: argparse.Namespace) -> int:
    from devstack.serve import serve
    from dialogue.pack import PackError

    try:
        _use_pack(args)
        return serve(
            args.host,
            args.port,
            realizer=args.realizer,
            model=args.model,
            revision=args.revision,
            quiet=args.quiet,
            handler_logs=args.handler_logs,
            audit_dir=Path(args.audit_dir) if args.audit_dir else None,
        )
    except (ValueError, RuntimeError, PackError) as error:  # the port is taken, an unknown realizer, no weights
        print(f"devstack: {error}", file=sys.stderr)
        return 2


def _eval(args: argparse.Namespace) -> int:
    from devstack.evaluate import dump_json, render, score_file
    from dialogue.pack import PackError, get_pack

    try:
        _use_pack(args)
        pack = get_pack()
        reports = [score_file(Path(file), pack) for file in args.file]
    except PackError as error:
        print(f"devstack: {error}", file=sys.stderr)
        return 2
    for report in reports:
        print(dump_json(report) if args.json else render(report, max_misses=args.misses))
    if args.goal is not None and (short := [report.file for report in reports if report.share < args.goal]):
        print(f"devstack: below the goal of {args.goal:.0%}: {', '.join(short)}", file=sys.stderr)
        return 1
    return 0


def _share(value: str) -> float:
    share = float(value)
    if not 0 <= share <= 1:
        raise argparse.ArgumentTypeError("give a share from 0 to 1, such as 0.9")
    return share


def _token(args: argparse.Namespace) -> int:
    from devstack.auth import LocalIssuer, devstack_home

    groups = [group for group in args.group if group] if args.group is not None else ["desk-staff"]
    token = LocalIssuer.load().token(args.staff, groups=groups, lifetime_s=args.minutes * 60)
    shown = ", ".join(groups) or "no group"
    print(
        f"devstack: a bearer token for {args.staff} ({shown}), valid {args.minutes} minutes, signed by the key in "
        f"{devstack_home()}; send it as 'Authorization: Bearer <token>':",
        file=sys.stderr,
    )
    print(token)
    return 0


def _minutes(value: str) -> int:
    minutes = int(value)
    if not 1 <= minutes <= 24 * 60:
        raise argparse.ArgumentTypeError("choose a whole number of minutes from 1 to 1440")
    return minutes


def _new_pack(args: argparse.Namespace) -> int:
    from devstack.pack_check import NAME_PATTERN, new_pack
    from dialogue.pack import PackError, pack_dir_for

    if not NAME_PATTERN.match(args.name):
        print("devstack: a desk's name is 2 to 40 lower-case letters, digits and underscores", file=sys.stderr)
        return 2
    try:
        written = new_pack(args.name, Path(args.dir) if args.dir else pack_dir_for(args.name))
    except PackError as error:
        print(f"devstack: {error}", file=sys.stderr)
        return 2
    print(f"devstack: a starter desk is in {written}; next: python -m devstack check-pack {written}")
    return 0


def _check_pack(args: argparse.Namespace) -> int:
    from devstack.pack_check import check_findings, check_pack, check_table
    from dialogue.pack import pack_dir_for

    desk = pack_dir_for(args.path)
    if not (desk / "domain.toml").is_file():
        print("devstack: check-pack needs a folder holding a domain.toml", file=sys.stderr)
        return 2
    checks = check_pack(desk, profile=args.understanding)
    print(check_table(desk, checks))
    if findings := check_findings(checks):
        print(f"\n{findings}\n")
    failed = [check.name for check in checks if check.passed is False]
    print(
        f"{len(checks) - len(failed)} of {len(checks)} checks passed or skipped"
        + (f"; failed: {', '.join(failed)}" if failed else ".")
    )
    return 1 if failed else 0


def _fit_examples(args: argparse.Namespace) -> int:
    try:
        from devstack.fit_examples import fit_pack
    except ImportError as error:  # numpy: the dev venv has it, the Lambda runtime's venv does not
        print(f"devstack: fit-examples needs numpy ({error}); use the dev venv", file=sys.stderr)
        return 2
    from dialogue.pack import pack_dir_for

    desk = pack_dir_for(args.path)
    try:
        written, weights = fit_pack(desk)
    except (ImportError, ValueError) as error:
        print(f"devstack: {error}", file=sys.stderr)
        return 2
    kept = sum(1 for column in weights.coef for value in column if value)
    print(
        f"devstack: wrote {written}: {len(weights.labels)} labels over {weights.size} examples, l2={weights.l2:g}, "
        f"{kept} of {weights.size * len(weights.labels)} coefficients kept; the desk reads it where examples.toml "
        'says scorer = "linear" (fit again after any change to examples.toml)'
    )
    return 0


def _verify_audit(args: argparse.Namespace) -> int:
    from devstack.desk_walk import DeskWalkError
    from devstack.verify_audit import run

    try:
        return run(sys.stdout)
    except DeskWalkError as error:
        print(f"devstack: {error}", file=sys.stderr)
        return 1


def _pack_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pack",
        metavar="DIR",
        help="the desk: a domain pack's folder, or a desk's name under data/ (default: data/packs.toml's)",
    )
    parser.add_argument(
        "--screens",
        choices=("lesson", "desk"),
        help="the reply screens: the lesson's six, or the desk's (default: SCREEN_PROFILE, else the pack's)",
    )
    _understanding_option(parser)


def _understanding_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--understanding",
        choices=("lesson", "desk"),
        help="how turns are read: by the rules alone (the lesson's), or by the rules and the desk's examples "
        "(default: UNDERSTANDING_PROFILE, else the pack's)",
    )


def _model_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", help="model id for the qwen and vllm realizers (default: Qwen2.5-1.5B-Instruct)")
    parser.add_argument("--revision", help="model revision (default: the pinned Qwen revision)")


def _month(args: argparse.Namespace) -> int:
    import dataclasses

    from devstack.month import MonthPlan, simulate_month

    plan = MonthPlan.small() if args.small else MonthPlan()
    changes = {name: value for name, value in (("days", args.days), ("seed", args.seed)) if value is not None}
    plan = dataclasses.replace(plan, **changes)
    if plan.days < 1 or max(plan.outage_day, plan.dispatch_failure_day, plan.pack_change_day) >= plan.days:
        print("The plan needs at least as many days as its last fault's day; use more --days.", file=sys.stderr)
        return 2
    from dialogue.pack import pack_dir_for

    pack = pack_dir_for(args.pack).resolve() if args.pack else None
    report = simulate_month(plan, pack, progress=lambda line: print(line, file=sys.stderr, flush=True))
    print(report.render())
    return 0 if report.ok else 1


def _fleet(args: argparse.Namespace) -> int:
    from devstack.fleet import SCENARIOS, TEMPLATE, FleetError, run_command
    from dialogue.pack import PackError, pack_dir_for

    try:
        print(
            run_command(
                scenarios=SCENARIOS if args.scenario == "all" else (args.scenario,),
                desks=args.desks,
                days=args.days,
                seed=args.seed,
                as_json=args.json,
                parameters=args.parameter or (),
                shared_realizer=args.shared_realizer,
                instance_type=args.instance_type,
                template_path=Path(args.template) if args.template else TEMPLATE,
                pack=pack_dir_for(args.pack) if args.pack else None,
                timing=args.timing or (),
                conversations=args.conversations,
                generated_share=args.generated_share,
                desk_hours=args.desk_hours,
            )
        )
    except (FleetError, PackError, ValueError) as error:
        print(f"devstack: {error}", file=sys.stderr)
        return 2
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m devstack", description="Run the pipeline offline on moto.")
    commands = parser.add_subparsers(dest="command", required=True)

    replay = commands.add_parser("replay", help="replay scripted turns and print the seed's tables")
    replay.add_argument("file", help="CSV with conversation_id, turn_id, user_utterance and optional expected_*")
    replay.add_argument("--realizer", type=_realizer, default="template",
                        help="smollm, qwen, vllm, template or canned:FILE (default: template)")  # fmt: skip
    replay.add_argument("--json", action="store_true", help="print one JSON object per turn")
    replay.add_argument(
        "--audit-dir",
        help="after a staff pass over the desk, write every DynamoDB item, SQS message body and log line here",
    )
    _model_options(replay)
    _pack_option(replay)
    replay.set_defaults(run=_replay)

    controls = commands.add_parser("controls", help="screen the control replies and print the control table")
    controls.add_argument("file", nargs="?", help=f"CSV of control replies (default: the desk's {CONTROLS_FILE})")
    controls.add_argument("--json", action="store_true", help="print one JSON object per control")
    _pack_option(controls)
    controls.set_defaults(run=_controls)

    chat = commands.add_parser("chat", help="talk to the assistant through the whole pipeline")
    chat.add_argument("--realizer", type=_realizer, default="template", help="as for replay")
    _model_options(chat)
    _pack_option(chat)
    chat.set_defaults(run=_chat)

    serve = commands.add_parser("serve", help="serve the HTTP API on loopback, backed by moto and a local realizer")
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1, loopback only)")
    serve.add_argument("--port", type=int, default=3000, help="port to bind; 0 picks a free one (default: 3000)")
    serve.add_argument("--realizer", type=_realizer, default="template", help="as for replay")
    serve.add_argument("--quiet", action="store_true", help="do not log each request to stderr")
    serve.add_argument("--handler-logs", action="store_true", help="print the handlers' log lines to stderr")
    serve.add_argument(
        "--audit-dir", help="append every SQS message body and log line here as they happen, and the items at exit"
    )
    _model_options(serve)
    _pack_option(serve)
    serve.set_defaults(run=_serve)

    evaluation = commands.add_parser("eval", help="score labelled turns against the desk's understanding and policy")
    evaluation.add_argument("file", nargs="+", help="CSV with text and expected_action/_topic/_passage_ids/_<slot>")
    evaluation.add_argument("--json", action="store_true", help="print one JSON object per file")
    evaluation.add_argument("--goal", type=_share, help="exit 1 when a file's share right is below this (0 to 1)")
    evaluation.add_argument("--misses", type=int, default=50, help="how many misses to list (default: 50)")
    evaluation.add_argument(
        "--pack",
        metavar="DIR",
        help="the desk: a domain pack's folder, or a desk's name under data/ (default: data/packs.toml's)",
    )
    _understanding_option(evaluation)
    evaluation.set_defaults(run=_eval)

    starter = commands.add_parser("new-pack", help="write a starter desk: one slot, one topic, sample turns")
    starter.add_argument("name", help="the desk's name: lower-case letters, digits and underscores")
    starter.add_argument("dir", nargs="?", help="the new folder (default: data/NAME)")
    starter.set_defaults(run=_new_pack)

    checking = commands.add_parser("check-pack", help="run every check the tests run on data/* on one pack")
    checking.add_argument("path", help="a domain pack's folder, or a desk's name under data/")
    _understanding_option(checking)
    checking.set_defaults(run=_check_pack)

    fitting = commands.add_parser("fit-examples", help="fit the linear scorer of a desk's examples.toml (needs numpy)")
    fitting.add_argument("path", help="a domain pack's folder, or a desk's name under data/")
    fitting.set_defaults(run=_fit_examples)

    token = commands.add_parser("token", help="print a staff bearer token that `serve` accepts (stdout, last line)")
    token.add_argument("--staff", required=True, metavar="NAME", help="the staff user's name (its subject is stable)")
    token.add_argument("--group", action="append", metavar="G",
                       help="a group claim, repeatable (default: desk-staff); --group '' for none")  # fmt: skip
    token.add_argument("--minutes", type=_minutes, default=60, help="lifetime in minutes (default: 60)")
    token.set_defaults(run=_token)

    audit = commands.add_parser(
        "verify-audit", help="verify a local desk session's audit, then show a rewritten audit item caught"
    )
    audit.set_defaults(run=_verify_audit)

    month = commands.add_parser(
        "month", help="simulate a desk's first month on a moving clock, with faults, and check what it left"
    )
    month.add_argument("--days", type=int, help="simulated days (default: 30; --small: 9)")
    month.add_argument("--small", action="store_true", help="the small plan `make test` runs: 9 days, few residents")
    month.add_argument("--seed", type=int, help="the random seed of residents and staff (default: 24)")
    month.add_argument(
        "--pack",
        metavar="DIR",
        help="the desk: a domain pack's folder, or a desk's name under data/ (default: data/packs.toml's)",
    )
    month.set_defaults(run=_month)

    fleet = commands.add_parser(
        "fleet", help="simulate the GPU realizer's scaling (CloudWatch, ECS, the wake call) from template.yaml"
    )
    fleet.add_argument(
        "--scenario",
        choices=("desk", "abuse", "unhealthy", "all"),
        default="all",
        help="desk: the desks' weekday traffic; abuse: that and a stranger's; unhealthy: the desks' traffic and "
        "an image whose model load hangs (default: all)",
    )
    fleet.add_argument("--desks", type=int, default=1, help="desks, each with its own stack (default: 1)")
    fleet.add_argument("--days", type=int, default=30, help="simulated days from a Monday (default: 30)")
    fleet.add_argument("--seed", type=int, default=42, help="the random seed: the same seed, the same table (42)")
    fleet.add_argument("--json", action="store_true", help="print one JSON object per scenario")
    fleet.add_argument(
        "--parameter",
        action="append",
        metavar="NAME=VALUE",
        help="a template parameter other than its default, as sam deploy's overrides (repeatable)",
    )
    fleet.add_argument(
        "--shared-realizer",
        action="store_true",
        help="all desks on one realizer service (issue 42, item 3), not one each",
    )
    fleet.add_argument(
        "--conversations", type=int, help="conversations a desk an open day, 6 turns each (default: 100)"
    )
    fleet.add_argument(
        "--generated-share", type=_share, help="share of turns the model words (default: the pack's scripted turns')"
    )
    fleet.add_argument(
        "--timing",
        action="append",
        metavar="NAME=SECONDS",
        help="a time the template does not set, e.g. load_s=180-300 or job_s=2-3 (devstack.fleet.Timings; repeatable)",
    )
    fleet.add_argument(
        "--desk-hours",
        action="store_true",
        help="set DeskOpensSchedule (30 minutes early), DeskClosesSchedule and DeskTimezone from the pack's hours",
    )
    fleet.add_argument("--instance-type", help="the GPU type that has capacity (default: the template's first)")
    fleet.add_argument("--template", help="the SAM template to read (default: template.yaml)")
    fleet.add_argument(
        "--pack",
        metavar="DIR",
        help="the desk whose hours and share of generated turns drive the traffic (default: data/packs.toml's)",
    )
    fleet.set_defaults(run=_fleet)

    args = parser.parse_args(argv)
    keep_example_index()
    return int(args.run(args))


def keep_example_index() -> None:
    """Keep the desk's built example index between runs, as the Qwen vocabulary is (~/.cache/enrollment-desk,
    or under XDG_CACHE_HOME; EXAMPLE_INDEX_CACHE_DIR names another folder, or `off`): each command after
    the first, and every process it starts, reads it back instead of building it (about a second)."""
    from dialogue.local_cache import cache_home
    from dialogue.pack.examples import INDEX_CACHE_ENV

    os.environ.setdefault(INDEX_CACHE_ENV, str(cache_home() / "example-index"))


if __name__ == "__main__":
    sys.exit(main())

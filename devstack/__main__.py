"""`python -m devstack replay FILE.csv [--realizer template] [--json]`: the whole pipeline offline."""

from __future__ import annotations

import argparse
import sys

from devstack.paths import add_project_paths


def _replay(args: argparse.Namespace) -> int:
    from devstack.replay import ReplayError, replay_conversation, replies_table, summary_line, trace_table
    from devstack.stack import local_stack
    from dialogue.pack import PackError, read_scripted_turns, scripted_turns_by_conversation

    try:
        turns = read_scripted_turns(args.file)
    except PackError as error:
        print(f"devstack: {error}", file=sys.stderr)
        return 2
    rows = []
    try:
        with local_stack(realizer=args.realizer) as stack:
            for conversation in scripted_turns_by_conversation(turns).values():
                rows.extend(replay_conversation(stack, conversation))
    except ReplayError as error:
        print(f"devstack: {error}", file=sys.stderr)
        return 1
    if args.json:
        for row in rows:
            print(row.model_dump_json())
    else:
        print(trace_table(rows))
        print()
        print(replies_table(rows))
        print()
        print(summary_line(rows))
    return 1 if any(row.matches is False for row in rows) else 0


def main(argv: list[str] | None = None) -> int:
    add_project_paths()
    parser = argparse.ArgumentParser(prog="python -m devstack", description="Run the pipeline offline on moto.")
    commands = parser.add_subparsers(dest="command", required=True)
    replay = commands.add_parser("replay", help="replay scripted turns and compare with their expected columns")
    replay.add_argument("file", help="CSV with conversation_id, turn_id, user_utterance and optional expected_*")
    replay.add_argument("--realizer", default="template", choices=["template"], help="how replies are worded")
    replay.add_argument("--json", action="store_true", help="print one JSON object per turn")
    replay.set_defaults(run=_replay)
    args = parser.parse_args(argv)
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())

"""`python -m ops COMMAND ...`: the operator tools for a deployed stack.

preflight [--region R] [--domain-prefix P] [--alarm-email A] [--fix]   the account, before the first deploy
verify-audit --stack NAME [--region R] [--conversation ID]   the staff audit's chains and WORM copies
rotate-origin-secret --stack NAME [--region R]              a new origin-verify value, no request refused
smoke --stack NAME | --api-url URL [...]                     one resident turn to its reply
teardown --stack NAME [--region R] [--yes]                   empty what blocks deletion, delete the stack

Each command's own --help says more; `python -m ops.preflight`, `python -m ops.smoke` and
`python -m ops.teardown` run as well.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

COMMANDS = ("preflight", "verify-audit", "rotate-origin-secret", "smoke", "teardown")


def _command(name: str) -> Callable[[list[str]], int]:
    if name == "preflight":
        from ops.preflight import main as preflight

        return lambda argv: preflight(argv)
    if name == "verify-audit":
        from ops.verify_audit import main as verify_audit

        return lambda argv: verify_audit(argv)
    if name == "rotate-origin-secret":
        from ops.rotate_origin_secret import main as rotate_origin_secret

        return lambda argv: rotate_origin_secret(argv)
    if name == "smoke":
        from ops.smoke import main as smoke

        return lambda argv: smoke(argv)
    from ops.teardown import main as teardown

    return lambda argv: teardown(argv)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    if argv[0] not in COMMANDS:
        print(f"python -m ops: choose one of {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    return _command(argv[0])(argv[1:])


if __name__ == "__main__":
    sys.exit(main())

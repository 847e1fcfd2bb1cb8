"""Lambda SnapStart: what a function's init does before its snapshot, and what it must not do.

With SnapStart (template.yaml's Globals), Lambda runs a published version's init once, snapshots the
memory and restores that snapshot for each cold start. So init may hold what every execution
environment can share: the imported modules, the pack loaded, its patterns compiled and
its example index built (`prime`), the settings read from the environment. It must hold nothing one
environment must not share with another: no AWS client or connection (`dialogue.aws.factory` makes them
on first use, after a restore, with the restored environment's credentials), no id, no random state,
no time.

`register_snapshot_hooks` runs `prime` as a before-snapshot hook where the Lambda runtime provides the
hook library (`snapshot_restore_py`, in the managed Python runtimes); elsewhere (tests, devstack,
`sam local invoke`) it does nothing, and the pack loads on the first request as before. A handler's
`after_restore` callables run after each restore: what a snapshot may hold but a restored environment must
read afresh (the turn and staff functions forget the origin-verify values, dialogue.aws.origin, which a
rotation may have changed since the snapshot was taken).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from dialogue.pack import get_pack
from dialogue.settings import get_settings


def prime() -> None:
    """Load what every request needs and every environment shares, so the snapshot holds it."""
    pack = get_pack()
    _ = pack.compiled  # the handbook, the frame, every pattern
    _ = pack.example_index  # the desk profile's example index (a few hundred ms to build)
    _ = pack.speller  # the desk profile's speller and its English word list (about 0.2 s to read)
    get_settings()


def register_snapshot_hooks(after_restore: Sequence[Callable[[], None]] = ()) -> bool:
    """Register `prime` to run before the snapshot, and each of `after_restore` after a restore; False
    where there is no SnapStart runtime."""
    try:
        import snapshot_restore_py  # type: ignore[import-not-found]
    except ImportError:
        return False
    snapshot_restore_py.register_before_snapshot(prime)
    for hook in after_restore:
        snapshot_restore_py.register_after_restore(hook)
    return True

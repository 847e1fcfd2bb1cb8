"""SnapStart: init loads what every environment may share and nothing unique (dialogue/snapstart.py).

A snapshot is restored into many execution environments, so whatever a function makes at init is
shared by all of them. The handlers' init must make no AWS client (its connections and credentials
belong to one environment), and the before-snapshot hook must load the pack.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

from dialogue import snapstart
from dialogue.pack import DomainPack, forget_loaded_packs
from dialogue.pack.loader import _cached_pack
from dialogue.settings import get_settings

ROOT = Path(__file__).resolve().parents[2]
HANDLERS = ("turn_api", "staff_api", "dispatch_turn", "screen_reply")

PROBE = r"""
import json, uuid
import botocore.client, botocore.session

made = []
original = botocore.session.Session.create_client
def counting(self, *args, **kwargs):
    made.append([args[0] if args else kwargs.get("service_name"), kwargs.get("endpoint_url")])
    return original(self, *args, **kwargs)
botocore.session.Session.create_client = counting
uuids = []
original_uuid4 = uuid.uuid4
uuid.uuid4 = lambda: uuids.append(1) or original_uuid4()

import turn_api, staff_api, dispatch_turn, screen_reply
from dialogue import snapstart
from dialogue.pack import loader
before = loader._cached_pack.cache_info().currsize
snapstart.prime()
print(json.dumps({"clients": made, "uuids": len(uuids), "packs": [before, loader._cached_pack.cache_info().currsize]}))
"""


def test_without_the_snapstart_runtime_nothing_is_registered() -> None:
    assert "snapshot_restore_py" not in sys.modules
    assert snapstart.register_snapshot_hooks() is False


def test_with_it_the_pack_is_loaded_before_the_snapshot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TABLE_NAME", "conversations")
    get_settings.cache_clear()
    registered = []
    fake = types.ModuleType("snapshot_restore_py")
    fake.register_before_snapshot = registered.append  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "snapshot_restore_py", fake)
    assert snapstart.register_snapshot_hooks() is True
    assert registered == [snapstart.prime]
    forget_loaded_packs()
    spellers: list[DomainPack] = []
    monkeypatch.setattr(DomainPack, "speller", property(spellers.append))
    registered[0]()
    assert _cached_pack.cache_info().currsize == 1
    assert len(spellers) == 1  # the speller (and its English word list) is made into the snapshot too
    get_settings.cache_clear()


def test_the_handlers_init_and_the_hook_make_no_aws_client_and_no_id() -> None:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "POWERTOOLS_"))},
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "TABLE_NAME": "conversations",
        "REALIZE_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/realize",
        "SCREEN_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/screen",
        "DOMAIN_PACK_DIR": str(ROOT / "data" / "riverton"),
        "POWERTOOLS_TRACE_DISABLED": "true",
    }
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, cwd=ROOT, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr[-3000:]
    found = json.loads(result.stdout.strip().splitlines()[-1])
    # The pack loads at the hook (before the snapshot), not at import; no id either way, and no AWS
    # client but the X-Ray SDK's sampling connector: unsigned, to the local daemon, with no credentials.
    assert {"uuids": found["uuids"], "packs": found["packs"]} == {"uuids": 0, "packs": [0, 1]}
    assert all(client == ["xray", "http://127.0.0.1:2000"] for client in found["clients"]), found["clients"]

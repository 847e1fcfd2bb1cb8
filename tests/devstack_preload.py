"""What the forkserver behind tests/commands.py's `run_devstack` imports once, before it forks each
command: the libraries every devstack command imports and the Qwen2.5 tokenizer its token table reads
(seconds a command, as a fresh `python -m devstack` pays them). Nothing here reads a setting a command
is given: its pack, its settings and the functions' modules load in the command, from its environment."""

from __future__ import annotations

import boto3  # noqa: F401
import moto  # noqa: F401
import pydantic  # noqa: F401
import transformers  # noqa: F401

from devstack.token_accounting import qwen_tokenizer

qwen_tokenizer()  # read from its kept file; nothing encoded, so no tokenizer thread runs before a fork

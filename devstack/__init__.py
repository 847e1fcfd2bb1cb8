"""The whole pipeline offline, in one process on moto: replay scripted turns, serve the HTTP API, chat."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]

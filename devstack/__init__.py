"""The whole pipeline offline, in one process on moto: replay scripted turns (and later serve, chat)."""

from devstack.paths import add_project_paths

add_project_paths()

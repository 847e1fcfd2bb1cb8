"""Loading a pack from its folder: `domain.toml` and `handbook.csv`, validated, once per process.

A malformed pack raises `PackError` naming the file and the row or entry at fault.
"""

from __future__ import annotations

import csv
import os
import tomllib
from functools import lru_cache
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from dialogue.pack.schema import DomainPack, DomainSpec, HandbookRow

PACK_DIR_ENV = "DOMAIN_PACK_DIR"


class PackError(ValueError):
    """A domain pack file is missing or malformed."""


def describe(error: ValidationError) -> str:
    """Where the first problem is and what it is, with how many more there are."""
    first = error.errors()[0]
    where = ".".join(str(part) for part in first["loc"]) or "top level"
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"{where}: {first['msg']}{more}"


Row = TypeVar("Row", bound=BaseModel)


def read_csv_records(path: Path) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """A CSV file's header and its records with their line numbers; a record with a field too many or
    too few is an error naming its line."""
    try:
        handle = path.open(newline="", encoding="utf-8")
    except OSError as error:
        raise PackError(f"{path}: cannot be read ({error.strerror})") from None
    with handle:
        reader = csv.DictReader(handle)
        header = list(reader.fieldnames or [])
        records: list[tuple[int, dict[str, str]]] = []
        for record in reader:
            if None in record or any(value is None for value in record.values()):
                raise PackError(
                    f"{path}, row at line {reader.line_num}: wrong number of fields (quote text that holds commas)"
                )
            records.append((reader.line_num, record))
        return header, records


def read_csv_rows(path: Path, model: type[Row]) -> list[Row]:
    """Read a CSV file into validated rows; errors name the file and the row's line number."""
    header, records = read_csv_records(path)
    expected = list(model.model_fields)
    required = [name for name, field in model.model_fields.items() if field.is_required()]
    missing = [name for name in required if name not in header]
    unknown = [name for name in header if name not in expected]
    if missing or unknown:
        raise PackError(f"{path}: header must hold {expected}; missing {missing}, unexpected {unknown}")
    rows: list[Row] = []
    for line, record in records:
        try:
            rows.append(model.model_validate(record))
        except ValidationError as error:
            raise PackError(f"{path}, row at line {line}: {describe(error)}") from None
    return rows


def load_pack(directory: str | os.PathLike[str]) -> DomainPack:
    """Load and validate the pack in `directory`."""
    root = Path(directory)
    domain_file = root / "domain.toml"
    try:
        raw = tomllib.loads(domain_file.read_text(encoding="utf-8"))
    except OSError as error:
        raise PackError(f"{domain_file}: cannot be read ({error.strerror})") from None
    except tomllib.TOMLDecodeError as error:
        raise PackError(f"{domain_file}: not valid TOML ({error})") from None
    try:
        spec = DomainSpec.model_validate(raw)
    except ValidationError as error:
        raise PackError(f"{domain_file}, entry {describe(error)}") from None
    handbook_file = root / "handbook.csv"
    handbook = read_csv_rows(handbook_file, HandbookRow)
    try:
        return DomainPack(spec=spec, handbook=tuple(handbook))
    except ValidationError as error:
        raise PackError(f"{handbook_file}: {describe(error)}") from None


def default_pack_dir() -> Path:
    """The pack named by DOMAIN_PACK_DIR, else the repository's `data/riverton`."""
    configured = os.environ.get(PACK_DIR_ENV)
    if configured:
        return Path(configured)
    return _repository_pack_dir()


@lru_cache(maxsize=1)
def _repository_pack_dir() -> Path:
    # Resolved once: `get_pack()` runs on every request, and resolving a path is a syscall per part.
    return Path(__file__).resolve().parents[4] / "data" / "riverton"


@lru_cache(maxsize=4)
def _cached_pack(directory: str) -> DomainPack:
    return load_pack(directory)


def get_pack(directory: str | os.PathLike[str] | None = None) -> DomainPack:
    """The pack in `directory` (default: `default_pack_dir()`), loaded once per process."""
    return _cached_pack(str(directory if directory is not None else default_pack_dir()))


def forget_loaded_packs() -> None:
    """Load packs afresh on the next `get_pack` (for tests and local stacks that change the environment)."""
    _cached_pack.cache_clear()

"""Loading a pack from its folder: `domain.toml`, `handbook.csv` and, where the desk has one,
`examples.toml` (with `examples.weights.json` where it names the linear scorer), validated, once per
process.

A malformed pack raises `PackError` naming the file and the row or entry at fault.
"""

from __future__ import annotations

import csv
import os
import tomllib
import types
from functools import lru_cache
from pathlib import Path
from typing import Any, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from dialogue.pack.domain import DomainPack
from dialogue.pack.examples import ExampleSet
from dialogue.pack.formats import read_format
from dialogue.pack.schema import DomainSpec, HandbookRow, UnderstandingProfile, located

PACK_DIR_ENV = "DOMAIN_PACK_DIR"
PROFILE_ENV = "UNDERSTANDING_PROFILE"
"""The understanding profile of this process (lesson or desk); unset, each pack's own."""
EXAMPLES_FILE = "examples.toml"
WEIGHTS_FILE = "examples.weights.json"
"""The linear scorer's weights, beside examples.toml (`dialogue.linear`; written by fit-examples)."""


class PackError(ValueError):
    """A domain pack file is missing or malformed."""


def _where(loc: tuple[int | str, ...]) -> str:
    """A pydantic location as a pack author reads it: `table topics, entry 3, field rows`."""
    if not loc:
        return ""
    index = next((position for position, part in enumerate(loc) if isinstance(part, int)), None)
    if index is None:
        table, number, field = loc[:-1], None, loc[-1:]
    else:
        table, number, field = loc[:index], int(loc[index]), loc[index + 1 :]
    return located(
        ".".join(map(str, table)) or "(top level)",
        number,
        ".".join(map(str, field)) or None,
    ).removeprefix("table (top level), ")


def _unwrapped(annotation: Any) -> Any:
    """`X` of `X | None`."""
    if get_origin(annotation) in (Union, types.UnionType):
        annotation = next((arg for arg in get_args(annotation) if arg is not type(None)), annotation)
    return annotation


def _is_table(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def what_to_add(model: type[BaseModel], loc: tuple[int | str, ...]) -> str | None:
    """For a field `model` needs at `loc` and the file lacks: what to add and where, as a pack author
    writes it (`add [staff] with reason_codes and max_message_chars`); None where `loc` leads nowhere."""
    annotation: Any = model
    for part in loc:
        annotation = _unwrapped(annotation)
        if _is_table(annotation) and isinstance(part, str) and part in annotation.model_fields:
            annotation = annotation.model_fields[part].annotation
        elif get_origin(annotation) in (tuple, dict) and get_args(annotation):  # a list's entry, a named value
            annotation = get_args(annotation)[0 if get_origin(annotation) is tuple else -1]
        else:
            return None
    annotation, name = _unwrapped(annotation), str(loc[-1])
    path = ".".join(str(part) for part in loc if not isinstance(part, int))
    if _is_table(annotation):
        keys = [key for key, field in annotation.model_fields.items() if field.is_required()]
        listed = ", ".join(keys[:-1]) + f" and {keys[-1]}" if len(keys) > 1 else "".join(keys)
        return f"add [{path}]" + (f" with {listed}" if keys else "")
    if get_origin(annotation) is tuple and _is_table(_unwrapped(get_args(annotation)[0])):
        return f"add [[{path}]] entries"
    parent, index = loc[:-1], next((part for part in reversed(loc) if isinstance(part, int)), None)
    table = ".".join(str(part) for part in parent if not isinstance(part, int))
    if not table:
        return f"add {name} at the top of the file"
    if index is not None and isinstance(parent[-1], int):
        return f"add {name} to entry {index + 1} of [[{table}]]"
    return f"add {name} to [{table}]"


def describe(error: ValidationError, model: type[BaseModel] | None = None) -> str:
    """Where the first problem is (table, entry, field) and what it is, with how many more there are; for
    a field `model` needs and the file lacks, what to add."""
    first = error.errors()[0]
    message = str(first["msg"]).removeprefix("Value error, ")
    loc = tuple(first["loc"])
    if first["type"] == "missing" and model is not None and (hint := what_to_add(model, loc)):
        message += f"; {hint}"
    # A model's own check names its field in its message: its location is then the table itself.
    own_field = message.startswith("field ") and not any(isinstance(part, int) for part in loc)
    where = located(".".join(map(str, loc))) if own_field and loc else _where(loc)
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    if not where:
        return f"{message}{more}"
    # A model's own check names its field in its message: "field rows: ..." joins the location.
    joiner = ", " if message.startswith("field ") else ": "
    return f"{where}{joiner}{message}{more}"


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


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise PackError(f"{path}: cannot be read ({error.strerror})") from None
    except tomllib.TOMLDecodeError as error:
        raise PackError(f"{path}: not valid TOML ({error})") from None


def _read_examples(path: Path) -> ExampleSet | None:
    if not path.exists():
        return None
    try:
        return ExampleSet.model_validate(_read_toml(path))
    except ValidationError as error:
        raise PackError(f"{path}, {describe(error, ExampleSet)}") from None


def _read_weights(root: Path, examples_file: Path) -> Any:
    """The linear scorer's weights beside examples.toml, checked against its sha256 (a LinearWeights)."""
    import hashlib

    from dialogue.linear import LinearWeights, WeightsError

    path = root / WEIGHTS_FILE
    refit = f"run python -m devstack fit-examples {root}"
    if not path.is_file():
        raise PackError(f'{path}: missing; examples.toml says scorer = "linear": {refit}')
    try:
        weights = LinearWeights.read(path)
    except OSError as error:
        raise PackError(f"{path}: cannot be read ({error.strerror})") from None
    except WeightsError as error:
        raise PackError(f"{path}: {error}: {refit}") from None
    if weights.examples_sha256 != hashlib.sha256(examples_file.read_bytes()).hexdigest():
        raise PackError(f"{path}: {WEIGHTS_FILE} was fitted from another {EXAMPLES_FILE}: {refit}")
    return weights


def load_pack(directory: str | os.PathLike[str], *, profile: UnderstandingProfile | str | None = None) -> DomainPack:
    """Load and validate the pack in `directory`; `profile` overrides its understanding profile."""
    root = Path(directory)
    domain_file = root / "domain.toml"
    contents = _read_toml(domain_file)
    try:
        # A pack of an earlier format gets what later formats added, by default (dialogue.pack.formats).
        contents, pack_format = read_format(contents)
        spec = DomainSpec.model_validate(contents)
    except ValidationError as error:
        raise PackError(f"{domain_file}, {describe(error, DomainSpec)}") from None
    except ValueError as error:  # a format_version this release does not read
        raise PackError(f"{domain_file}, {error}") from None
    examples_file = root / EXAMPLES_FILE
    examples = _read_examples(examples_file)
    weights = _read_weights(root, examples_file) if examples is not None and examples.scorer == "linear" else None
    handbook_file = root / "handbook.csv"
    handbook = read_csv_rows(handbook_file, HandbookRow)
    try:
        chosen = UnderstandingProfile(profile) if profile else None
    except ValueError:
        raise PackError(f"{PROFILE_ENV} must be one of {[str(name) for name in UnderstandingProfile]}") from None
    try:
        pack = DomainPack(
            spec=spec,
            handbook=tuple(handbook),
            examples=examples,
            example_weights=weights,
            profile=chosen,
            pack_format=pack_format,
        )
    except ValidationError as error:
        # A row id a table names but the handbook lacks is domain.toml's mistake; the rest are the handbook's.
        problem = describe(error)
        if problem.startswith("examples.toml"):
            raise PackError(f"{root / problem}") from None
        blamed = domain_file if problem.startswith("table ") else handbook_file
        raise PackError(f"{blamed}, {problem}" if blamed is domain_file else f"{blamed}: {problem}") from None
    try:
        if examples is not None:
            examples.check()  # so a bad example fails the load, not a turn; the index is built on first use
    except ValueError as error:
        raise PackError(f"{examples_file}: {error}") from None
    return pack


PACKS_FILE = "packs.toml"
"""The configuration beside the packs (the repository's `data/packs.toml`) naming the default desk."""


def default_pack_dir() -> Path:
    """The pack named by DOMAIN_PACK_DIR, else the `default` desk of the repository's `data/packs.toml`."""
    configured = os.environ.get(PACK_DIR_ENV)
    if configured:
        return Path(configured)
    return _configured_pack_dir()


@lru_cache(maxsize=1)
def _configured_pack_dir() -> Path:
    # Read once: `get_pack()` runs on every request. The code names no desk; the configuration does.
    data = Path(__file__).resolve().parents[4] / "data"
    config = data / PACKS_FILE
    try:
        default = tomllib.loads(config.read_text(encoding="utf-8"))["default"]
    except (OSError, tomllib.TOMLDecodeError, KeyError):
        raise PackError(f"no desk configured: set {PACK_DIR_ENV}, or name one as `default` in {config}") from None
    if not isinstance(default, str) or not default or "/" in default or default.startswith("."):
        raise PackError(f"{config}: default must name a folder beside it")
    return data / default


def pack_dir_for(name_or_path: str | os.PathLike[str]) -> Path:
    """A pack folder from a command line: a path, or the name of a desk under the repository's data/."""
    given = Path(name_or_path)
    if given.exists() or given.is_absolute() or len(given.parts) > 1:
        return given
    return Path(__file__).resolve().parents[4] / "data" / given


@lru_cache(maxsize=4)
def _cached_pack(directory: str, profile: str | None) -> DomainPack:
    return load_pack(directory, profile=profile)


def get_pack(directory: str | os.PathLike[str] | None = None) -> DomainPack:
    """The pack in `directory` (default: `default_pack_dir()`), loaded once per process, read with the
    understanding profile UNDERSTANDING_PROFILE names (unset: the pack's)."""
    return _cached_pack(
        str(directory if directory is not None else default_pack_dir()), os.environ.get(PROFILE_ENV) or None
    )


def forget_loaded_packs() -> None:
    """Load packs afresh on the next `get_pack` (for tests and local stacks that change the environment)."""
    _cached_pack.cache_clear()

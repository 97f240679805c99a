"""Service configuration from flags, environment and a deploy profile, in that order of precedence.

A service declares its settings as a dataclass whose fields carry a help text (`option(default, help)`).
Values come from, highest first:
  1. command-line flags (`--max-streams 64`; flags default to None, so only given flags count),
  2. environment variables `OMNI_<SERVICE>_<FIELD>` (e.g. OMNI_CODEC_MAX_STREAMS=64),
  3. the deploy profile YAML: the section named after the service (`codec: {max_streams: 64}`),
     after merging the profile over its `base_config` chain (mappings merge key by key, the child wins),
  4. the dataclass defaults.
Unknown keys in the service's profile section and unparsable values are errors naming the source.
"""

import argparse
import dataclasses
import os
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

import yaml

DEPLOY_DIR = Path(__file__).resolve().parents[2] / "deploy"
T = TypeVar("T")


class ConfigError(ValueError):
    """A configuration value or profile that cannot be used."""


def option(default: Any, help: str) -> Any:
    """A config field with a default and the help text its flag shows."""
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda: list(default), metadata={"help": help})
    return dataclasses.field(default=default, metadata={"help": help})


def resolve_profile(name_or_path: str | Path) -> Path:
    """A profile path, or a profile name looked up as deploy/<name>.yaml."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    named = DEPLOY_DIR / f"{name_or_path}.yaml"
    if named.is_file():
        return named
    raise ConfigError(f"deploy profile {name_or_path!r} not found (as a path or in {DEPLOY_DIR})")


def deep_merge(base: Mapping, override: Mapping) -> dict:
    """`override` over `base`; nested mappings merge key by key, anything else is replaced."""
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def load_profile(name_or_path: str | Path, _seen: tuple[Path, ...] = ()) -> dict:
    """Read a profile and its `base_config` chain (paths relative to the including file)."""
    path = resolve_profile(name_or_path).resolve()
    if path in _seen:
        raise ConfigError(f"base_config cycle: {' -> '.join(str(p) for p in (*_seen, path))}")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{path}: invalid YAML: {e}") from e
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: a profile must be a mapping, got {type(data).__name__}")
    base_name = data.pop("base_config", None)
    if base_name is None:
        return data
    base_path = Path(base_name)
    if not base_path.is_absolute() and (path.parent / base_path).is_file():
        base_path = path.parent / base_path
    elif not base_path.is_file():
        base_path = resolve_profile(str(base_name))
    return deep_merge(load_profile(base_path, (*_seen, path)), data)


def _unwrap_optional(tp: Any) -> tuple[Any, bool]:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return tp, False


def convert(value: Any, tp: Any, where: str) -> Any:
    """Convert a YAML value or a string (env, flag) to the field type `tp`."""
    inner, optional = _unwrap_optional(tp)
    if value is None or (optional and isinstance(value, str) and value.lower() in ("", "none", "null")):
        if optional:
            return None
        raise ConfigError(f"{where}: a value is required")
    try:
        if typing.get_origin(inner) is list:
            (item_type,) = typing.get_args(inner)
            items = value if isinstance(value, list) else [v for v in str(value).split(",") if v.strip()]
            return [convert(v, item_type, where) for v in items]
        if inner is bool:
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in ("1", "true", "yes", "on"):
                return True
            if text in ("0", "false", "no", "off"):
                return False
            raise ValueError(f"not a boolean: {value!r}")
        if inner is int:
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError(f"not an integer: {value!r}")
            return int(str(value).strip()) if isinstance(value, str) else int(value)
        if inner is float:
            if isinstance(value, bool):
                raise ValueError(f"not a number: {value!r}")
            return float(value)
        if inner is Path:
            return Path(value)
        if inner is str:
            if isinstance(value, dict | list):
                raise ValueError(f"not a string: {value!r}")
            return str(value)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"{where}: {e}") from e
    raise ConfigError(f"{where}: unsupported field type {tp}")


def add_config_flags(parser: argparse.ArgumentParser, cls: type) -> None:
    """One `--field-name` flag per dataclass field (default None: unset flags do not override), plus --profile."""
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        inner, _ = _unwrap_optional(hints[field.name])
        default = field.default if field.default is not dataclasses.MISSING else field.default_factory()
        metavar = "A,B,..." if typing.get_origin(inner) is list else field.name.upper()
        parser.add_argument(
            "--" + field.name.replace("_", "-"),
            dest=field.name,
            default=None,
            metavar=metavar,
            help=f"{field.metadata.get('help', '')} (default: {default})".replace("%", "%%"),  # argparse formats it
        )
    parser.add_argument("--profile", default=None, help="deploy profile: a YAML path or a name in deploy/")


def load_config(
    cls: type[T],
    service: str,
    flags: argparse.Namespace | Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    profile: str | Path | None = None,
) -> T:
    """Build `cls` for `service` from flags > env > profile > defaults (see the module docstring)."""
    env = os.environ if env is None else env
    flags = vars(flags) if isinstance(flags, argparse.Namespace) else dict(flags or {})
    profile = flags.get("profile") or profile or env.get(f"OMNI_{service.upper()}_PROFILE")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    values: dict[str, Any] = {}

    if profile:
        section = load_profile(profile).get(service) or {}
        if not isinstance(section, dict):
            raise ConfigError(f"profile {profile}: section {service!r} must be a mapping")
        unknown = sorted(set(section) - names)
        if unknown:
            raise ConfigError(f"profile {profile}: unknown {service} settings {unknown}; known: {sorted(names)}")
        for name, value in section.items():
            values[name] = convert(value, hints[name], f"profile {profile}: {service}.{name}")
    for name in names:
        key = f"OMNI_{service.upper()}_{name.upper()}"
        if key in env:
            values[name] = convert(env[key], hints[name], f"environment {key}")
    for name in names:
        if flags.get(name) is not None:
            values[name] = convert(flags[name], hints[name], f"flag --{name.replace('_', '-')}")
    return cls(**values)


def capture_buckets(requested: list[int], max_streams: int) -> list[int]:
    """The batch sizes a service captures CUDA graphs for: the requested ones below `max_streams`, and `max_streams`
    itself, which holds every batch, so no step falls back to an eager forward (~10x slower) whatever the load."""
    return sorted({b for b in requested if b < max_streams} | {max_streams})


@dataclasses.dataclass
class ServiceConfig:
    """Settings every gRPC service has; a service's config dataclass extends it."""

    model: str = option("", "checkpoint directory (the official Hugging Face layout)")
    revision: str = option("", "checkpoint revision reported in the model identity")
    host: str = option("0.0.0.0", "address to bind the gRPC server to")
    port: int = option(0, "gRPC port (0 picks a free one)")
    metrics_port: int = option(-1, "Prometheus /metrics port (-1 disables it, 0 picks a free one)")
    grace_s: float = option(10.0, "graceful-shutdown period for in-flight streams, seconds")
    log_level: str = option("info", "log level (debug, info, warning, error)")
    device: str = option("cpu", "torch device (cpu, cuda, cuda:1, ...)")
    dtype: str = option("float32", "model dtype (float32, bfloat16, float16)")
    switch_interval_ms: float = option(
        0.5,
        "Python's thread switch interval, ms (0 keeps the interpreter's 5 ms). The engine thread releases the GIL "
        "at every torch call; while the event loop is busy with many streams it gets it back only at the next forced "
        "switch, so a step of many small calls can wait most of its time (0.5: +10% audio-s/s at 512 streams on two "
        "H200s, the codec's step 133 -> 82 ms for 72 -> 64 ms of planned GPU work)",
    )

"""The durable voice registry: named reference voices in Redis, the source of truth.

Each voice is a hash `<prefix>voice:<name>` holding its metadata and the original audio file (so a model
upgrade can re-encode it), plus its name in the set `<prefix>names`. A registration is one Lua script, so the
duplicate check, the count cap and the write are atomic. Durability comes from the Redis server settings:
`appendonly yes` with `appendfsync always` fsyncs the AOF before a write is acknowledged, so a registration
that returned survives `kill -9` of Redis; `check_durability` reports a server that is not set up that way.
Registry keys carry no TTL, so a `volatile-*` maxmemory policy only ever evicts cache entries.
"""

import hashlib
import logging
import re
import time
from dataclasses import dataclass

import numpy as np
import redis.asyncio as redis
from omni.services.common.metrics import MetricsServer
from omni.services.refenc.redis_client import REDIS_DOWN_ERRORS

from omni.audio import MAX_AUDIO_BYTES, MAX_REFERENCE_SECONDS, MIN_REFERENCE_SECONDS, prepare_reference_audio

log = logging.getLogger("omni.refenc.registry")

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
MAX_CONSENT_ID_CHARS = 256
MAX_REF_TEXT_CHARS = 4096
MAX_DESCRIPTION_CHARS = 1024
SAMPLE_RATE = 24000


class RegistryError(ValueError):
    """Invalid registration input (name, consent id, text fields); the message says which and why."""


class VoiceExistsError(Exception):
    """A voice with this name is registered already (duplicates are rejected unless `replace=True`)."""


class VoiceNotFoundError(LookupError):
    """No voice with this name."""


class RegistryFullError(Exception):
    """The registry holds its maximum number of voices."""


class RegistryUnavailableError(RuntimeError):
    """Redis cannot be reached; the registry has no fallback (it is the source of truth)."""


@dataclass(frozen=True)
class Voice:
    name: str
    ref_text: str
    consent_id: str
    description: str
    duration_s: float
    created_unix_ms: int
    audio_sha256: str


_META = ("name", "ref_text", "consent_id", "description", "duration_s", "created_unix_ms", "audio_sha256")

# KEYS: voice hash, names set. ARGV: name, replace ("1"/"0"), max voices, then field/value pairs.
_REGISTER = """
local exists = redis.call('exists', KEYS[1])
if exists == 1 and ARGV[2] ~= '1' then return 'exists' end
if exists == 0 and redis.call('scard', KEYS[2]) >= tonumber(ARGV[3]) then return 'full' end
redis.call('del', KEYS[1])
redis.call('hset', KEYS[1], unpack(ARGV, 4))
redis.call('sadd', KEYS[2], ARGV[1])
return 'ok'
"""
_DELETE = """
redis.call('srem', KEYS[2], ARGV[1])
return redis.call('del', KEYS[1])
"""


def validate_name(name: object) -> str:
    if not isinstance(name, str) or NAME_PATTERN.fullmatch(name) is None:
        raise RegistryError(
            f"voice name must be 1-64 characters of [A-Za-z0-9_.-] starting with a letter or digit, got {name!r}"
        )
    return name


def _check_text(value: object, field: str, limit: int, required: bool = False) -> str:
    if not isinstance(value, str):
        raise RegistryError(f"{field} must be a string, got {type(value).__name__}")
    if required and not value.strip():
        raise RegistryError(f"{field} is required")
    if len(value) > limit:
        raise RegistryError(f"{field} is {len(value)} characters, more than the limit of {limit}")
    return value


class VoiceRegistry:
    def __init__(
        self,
        client: redis.Redis,
        max_voices: int = 1000,
        max_audio_bytes: int = MAX_AUDIO_BYTES,
        min_seconds: float = MIN_REFERENCE_SECONDS,
        max_seconds: float = MAX_REFERENCE_SECONDS,
        prefix: str = "omni:registry:",
        metrics: MetricsServer | None = None,
    ) -> None:
        self.client = client
        self.max_voices = max_voices
        self.max_audio_bytes = max_audio_bytes
        self.min_seconds, self.max_seconds = min_seconds, max_seconds
        self.prefix = prefix
        self.metrics = metrics or MetricsServer("omni_refenc")
        self._size = self.metrics.gauge("registry_voices", "Registered voices")
        self._register = client.register_script(_REGISTER)
        self._delete = client.register_script(_DELETE)

    def _key(self, name: str) -> str:
        return f"{self.prefix}voice:{name}"

    @property
    def _names(self) -> str:
        return f"{self.prefix}names"

    async def register(
        self,
        name: str,
        audio: bytes,
        consent_id: str,
        ref_text: str = "",
        description: str = "",
        replace: bool = False,
    ) -> tuple[Voice, np.ndarray]:
        """Validate and store a voice; returns it and its 24 kHz PCM (for encoding it right away).

        Raises RegistryError / AudioError (invalid input), VoiceExistsError, RegistryFullError,
        RegistryUnavailableError.
        """
        validate_name(name)
        _check_text(consent_id, "consent_id", MAX_CONSENT_ID_CHARS, required=True)
        _check_text(ref_text, "ref_text", MAX_REF_TEXT_CHARS)
        _check_text(description, "description", MAX_DESCRIPTION_CHARS)
        pcm = prepare_reference_audio(audio, self.min_seconds, self.max_seconds, self.max_audio_bytes)
        voice = Voice(
            name=name,
            ref_text=ref_text,
            consent_id=consent_id,
            description=description,
            duration_s=round(len(pcm) / SAMPLE_RATE, 3),
            created_unix_ms=int(time.time() * 1000),
            audio_sha256=hashlib.sha256(audio).hexdigest(),
        )
        fields: list[str | bytes] = []
        for field in _META:
            fields += [field, str(getattr(voice, field))]
        fields += ["audio", bytes(audio)]
        args = [name, "1" if replace else "0", self.max_voices, *fields]
        status = await self._run(self._register(keys=[self._key(name), self._names], args=args))
        if status == b"exists":
            raise VoiceExistsError(f"voice {name!r} is already registered")
        if status == b"full":
            raise RegistryFullError(f"the registry holds its maximum of {self.max_voices} voices")
        log.info("registered voice %s (%.2f s, consent %s)", name, voice.duration_s, consent_id)
        await self.count()
        return voice, pcm

    async def get(self, name: str) -> Voice:
        validate_name(name)
        values = await self._run(self.client.hmget(self._key(name), list(_META)))
        if values[0] is None:
            raise VoiceNotFoundError(f"no voice named {name!r}")
        return _voice(values)

    async def get_audio(self, name: str) -> bytes:
        validate_name(name)
        audio = await self._run(self.client.hget(self._key(name), "audio"))
        if audio is None:
            raise VoiceNotFoundError(f"no voice named {name!r}")
        return audio

    async def list_voices(self) -> list[Voice]:
        """All voices, sorted by name (metadata only)."""
        names = sorted(n.decode() for n in await self._run(self.client.smembers(self._names)))
        pipe = self.client.pipeline(transaction=False)
        for name in names:
            pipe.hmget(self._key(name), list(_META))
        rows = await self._run(pipe.execute()) if names else []
        voices = [_voice(values) for values in rows if values[0] is not None]
        self._size.set(len(names))
        return voices

    async def delete(self, name: str) -> None:
        validate_name(name)
        if not await self._run(self._delete(keys=[self._key(name), self._names], args=[name])):
            raise VoiceNotFoundError(f"no voice named {name!r}")
        log.info("deleted voice %s", name)
        await self.count()

    async def count(self) -> int:
        """Registered voices (also refreshes the registry-size gauge)."""
        count = int(await self._run(self.client.scard(self._names)))
        self._size.set(count)
        return count

    async def check_durability(self) -> list[str]:
        """Problems with the server's persistence settings (empty when registrations are crash-safe)."""
        try:
            config = await self.client.config_get("append*")
            config |= await self.client.config_get("maxmemory-policy")
        except redis.ResponseError as e:  # CONFIG may be disabled (managed Redis): say we cannot tell
            return [f"cannot read the redis persistence settings: {e}"]
        except REDIS_DOWN_ERRORS as e:
            raise RegistryUnavailableError(f"voice registry unavailable: {e}") from e
        config = {str(k): v.decode() if isinstance(v, bytes) else str(v) for k, v in config.items()}
        problems = []
        if config.get("appendonly") != "yes":
            problems.append("appendonly is off: registrations are lost when redis restarts")
        if config.get("appendfsync") != "always":
            problems.append(
                f"appendfsync is {config.get('appendfsync')!r}, not 'always': acknowledged registrations can be lost"
            )
        if config.get("maxmemory-policy", "").startswith("allkeys"):
            problems.append(
                f"maxmemory-policy {config['maxmemory-policy']!r} can evict voices; use a volatile-* policy"
            )
        return problems

    async def _run(self, awaitable):
        try:
            return await awaitable
        except REDIS_DOWN_ERRORS as e:
            raise RegistryUnavailableError(f"voice registry unavailable: {e}") from e


def _voice(values: list[bytes]) -> Voice:
    fields = dict(zip(_META, (v.decode() for v in values), strict=True))
    return Voice(
        name=fields["name"],
        ref_text=fields["ref_text"],
        consent_id=fields["consent_id"],
        description=fields["description"],
        duration_s=float(fields["duration_s"]),
        created_unix_ms=int(fields["created_unix_ms"]),
        audio_sha256=fields["audio_sha256"],
    )

"""Optional bearer API keys. Keys come from a file (one per line, `#` comments) and/or an environment variable
(comma-separated); only their SHA-256 digests are kept, and a presented key is compared against every digest
with `hmac.compare_digest`, so neither the keys nor the timing of a comparison leak.
"""

from __future__ import annotations

import hashlib
import hmac
import os
from pathlib import Path

ENV_VAR = "OMNI_API_KEYS"


def _digest(key: str) -> bytes:
    return hashlib.sha256(key.encode()).digest()


class ApiKeys:
    def __init__(self, keys: list[str]) -> None:
        cleaned = [k.strip() for k in keys if k.strip()]
        self._digests = [_digest(k) for k in cleaned]

    @classmethod
    def load(cls, keys_file: str | Path | None = None, env_var: str = ENV_VAR) -> ApiKeys:
        """Keys from `keys_file` (if given) plus `$env_var` (if set); none means auth is off."""
        keys: list[str] = []
        if keys_file is not None:
            for line in Path(keys_file).read_text().splitlines():
                line = line.strip()
                if line and not line.startswith("#"):
                    keys.append(line)
        keys.extend(os.environ.get(env_var, "").split(","))
        return cls(keys)

    @property
    def enabled(self) -> bool:
        return bool(self._digests)

    def check_header(self, authorization: str | None) -> bool:
        """True when auth is off or the `Authorization: Bearer <key>` header carries a known key."""
        if not self.enabled:
            return True
        if not authorization:
            return False
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return False
        presented = _digest(token.strip())
        matched = False
        for digest in self._digests:  # no early exit: every key is compared
            matched |= hmac.compare_digest(presented, digest)
        return matched

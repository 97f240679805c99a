"""Resolving a request's `ref_audio` locator to audio bytes, safely.

- `data:<mime>;base64,<payload>`: always accepted (strict base64).
- `http(s)://`: only when the operator allows remote fetches. The host is resolved once; every address must be
  public (no private, loopback, link-local / cloud-metadata, multicast, reserved or unspecified address, also
  when embedded in IPv6) unless it lies in an allow-listed network; the connection then goes to that checked
  address (no second lookup, so DNS rebinding cannot swap it), redirects are not followed, and size and time
  are bounded.
- `file://`: only under operator-allowed root directories, judged on the fully resolved real path (so `..` and
  symlinks cannot leave the root).
The result must pass `omni.audio.prepare_reference_audio` (decodes; duration, finite, not silent).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import ipaddress
import socket
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

import httpx

from omni.audio import AudioError, prepare_reference_audio

from .errors import APIError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@dataclass(frozen=True)
class RefAudioPolicy:
    allow_remote: bool = False  # http(s) locators
    allowed_domains: tuple[str, ...] = ()  # when non-empty, remote hosts must be one of these or a subdomain
    allowed_networks: tuple[str, ...] = ()  # CIDRs exempt from the non-public-address block
    allowed_local_roots: tuple[str, ...] = ()  # file:// locators must resolve inside one of these
    max_bytes: int = 10 * 1024 * 1024
    timeout_s: float = 10.0
    min_duration_s: float = 1.0
    max_duration_s: float = 30.0


def _refuse(message: str) -> APIError:
    return APIError(400, f"ref_audio: {message}", "ref_audio")


def _embedded_ipv4(ip: IPAddress) -> ipaddress.IPv4Address | None:
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return ip.ipv4_mapped
        if ip.sixtofour is not None:
            return ip.sixtofour
        if ip.teredo is not None:
            return ip.teredo[1]
        if ip in ipaddress.ip_network("64:ff9b::/96"):  # NAT64
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def is_public_address(ip: IPAddress) -> bool:
    """False for anything that is not a globally routable unicast address (metadata 169.254.169.254 included)."""
    inner = _embedded_ipv4(ip)
    if inner is not None and not is_public_address(inner):
        return False
    return ip.is_global and not ip.is_multicast and not ip.is_reserved and not ip.is_unspecified


def address_allowed(ip: IPAddress, policy: RefAudioPolicy) -> bool:
    if any(ip in ipaddress.ip_network(net, strict=False) for net in policy.allowed_networks):
        return True
    return is_public_address(ip)


def _domain_allowed(host: str, policy: RefAudioPolicy) -> bool:
    if not policy.allowed_domains:
        return True
    host = host.lower().rstrip(".")
    return any(host == d or host.endswith("." + d) for d in (d.lower().rstrip(".") for d in policy.allowed_domains))


def decode_data_uri(uri: str, max_bytes: int) -> bytes:
    header, sep, payload = uri[len("data:") :].partition(",")
    if not sep or not header.split(";")[-1] == "base64":
        raise _refuse("data: URIs must be base64 encoded (data:<mime>;base64,<payload>)")
    payload = "".join(payload.split())
    if len(payload) * 3 // 4 > max_bytes:
        raise _refuse(f"audio is larger than {max_bytes} bytes")
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise _refuse("invalid base64 payload") from None


async def _fetch_remote(uri: str, policy: RefAudioPolicy) -> bytes:
    parts = urlsplit(uri)
    host = parts.hostname
    if not host:
        raise _refuse("URL has no host")
    if parts.username or parts.password:
        raise _refuse("credentials in URLs are not allowed")
    if not _domain_allowed(host, policy):
        raise _refuse(f"host {host!r} is not in the allowed domains")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        raise _refuse(f"cannot resolve host {host!r}") from None
    addresses = [ipaddress.ip_address(info[4][0].split("%")[0]) for info in infos]
    blocked = [str(ip) for ip in addresses if not address_allowed(ip, policy)]
    if not addresses or blocked:
        raise _refuse(f"host {host!r} resolves to a non-public address ({', '.join(blocked)}); refused")
    ip = addresses[0]
    pinned_host = f"[{ip}]" if ip.version == 6 else str(ip)
    target = parts._replace(netloc=f"{pinned_host}:{port}").geturl()
    host_header = host if parts.port is None else f"{host}:{parts.port}"
    extensions = {"sni_hostname": host} if parts.scheme == "https" else {}
    chunks: list[bytes] = []
    size = 0
    async with httpx.AsyncClient(follow_redirects=False, timeout=policy.timeout_s, trust_env=False) as client:
        async with client.stream("GET", target, headers={"Host": host_header}, extensions=extensions) as response:
            if response.is_redirect:
                raise _refuse("redirects are not followed")
            if response.status_code != 200:
                raise _refuse(f"fetching the URL answered HTTP {response.status_code}")
            declared = response.headers.get("content-length")
            if declared and declared.isdigit() and int(declared) > policy.max_bytes:
                raise _refuse(f"audio is larger than {policy.max_bytes} bytes")
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > policy.max_bytes:
                    raise _refuse(f"audio is larger than {policy.max_bytes} bytes")
                chunks.append(chunk)
    return b"".join(chunks)


def _read_local(uri: str, policy: RefAudioPolicy) -> bytes:
    parts = urlsplit(uri)
    if parts.netloc not in ("", "localhost"):
        raise _refuse("file:// URLs must name a local path")
    try:
        path = Path(unquote(parts.path)).resolve(strict=True)
    except (OSError, RuntimeError):
        raise _refuse("file not found") from None
    roots = [Path(root).resolve() for root in policy.allowed_local_roots]
    if not any(path.is_relative_to(root) for root in roots):
        raise _refuse("file is outside the allowed directories")
    if not path.is_file():
        raise _refuse("not a regular file")
    if path.stat().st_size > policy.max_bytes:
        raise _refuse(f"audio is larger than {policy.max_bytes} bytes")
    return path.read_bytes()


def check_audio(data: bytes, policy: RefAudioPolicy, what: str = "ref_audio") -> None:
    """A clear 400 unless the bytes are usable reference audio (the reference encoder's own validation)."""
    try:
        prepare_reference_audio(data, policy.min_duration_s, policy.max_duration_s, policy.max_bytes)
    except AudioError as exc:
        raise APIError(400, f"{what}: {exc}", what) from None


async def resolve_ref_audio(uri: str, policy: RefAudioPolicy) -> bytes:
    """The audio bytes a `ref_audio` locator names, checked to decode and to fit the duration bounds."""
    scheme = uri.split(":", 1)[0].lower() if ":" in uri else ""
    if scheme == "data":
        data = decode_data_uri(uri, policy.max_bytes)
    elif scheme in ("http", "https"):
        if not policy.allow_remote:
            raise _refuse("http(s) URLs are disabled on this server; send a data: URI")
        try:
            async with asyncio.timeout(policy.timeout_s):
                data = await _fetch_remote(uri, policy)
        except (TimeoutError, httpx.TimeoutException):
            raise _refuse(f"fetching the URL took longer than {policy.timeout_s:g} s") from None
        except httpx.HTTPError as exc:
            raise _refuse(f"fetching the URL failed: {type(exc).__name__}") from None
    elif scheme == "file":
        if not policy.allowed_local_roots:
            raise _refuse("file:// URLs are disabled on this server; send a data: URI")
        data = await asyncio.to_thread(_read_local, uri, policy)
    else:
        raise _refuse("must be a data:, http(s):// or file:// URL")
    await asyncio.to_thread(check_audio, data, policy)
    return data

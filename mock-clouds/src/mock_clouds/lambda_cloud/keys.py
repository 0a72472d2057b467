"""SSH keys: validation of uploaded public keys and generation of real Ed25519 pairs (OpenSSH formats).

POST /ssh-keys without `public_key` returns a generated pair. Lambda's example shows an RSA PEM key; the mock
generates Ed25519 (mock deviation) in pure Python (RFC 8032 arithmetic) so that the package needs no crypto
dependency. The pair is valid: `ssh-keygen -y` derives the same public key from the private key.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import secrets
import struct

PUBLIC_KEY_TYPES = frozenset(
    {
        "ssh-ed25519",
        "ssh-rsa",
        "ssh-dss",
        "ecdsa-sha2-nistp256",
        "ecdsa-sha2-nistp384",
        "ecdsa-sha2-nistp521",
        "sk-ssh-ed25519@openssh.com",
        "sk-ecdsa-sha2-nistp256@openssh.com",
    }
)


def is_valid_public_key(text: str) -> bool:
    """True for one OpenSSH public key line: `<type> <base64 blob naming the same type> [comment]`."""
    parts = text.strip().split(maxsplit=2)
    if len(parts) < 2 or parts[0] not in PUBLIC_KEY_TYPES:
        return False
    try:
        blob = base64.b64decode(parts[1], validate=True)
    except binascii.Error:
        return False
    return blob.startswith(_string(parts[0].encode()))


def generate_key_pair(comment: str) -> tuple[str, str]:
    """(public key line, OpenSSH PEM private key) of a fresh Ed25519 key."""
    seed = secrets.token_bytes(32)
    public = _ed25519_public(seed)
    blob = _string(b"ssh-ed25519") + _string(public)
    public_line = f"ssh-ed25519 {base64.b64encode(blob).decode()} {comment}"
    return public_line, _openssh_private(seed, public, blob, comment)


def _string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def _openssh_private(seed: bytes, public: bytes, blob: bytes, comment: str) -> str:
    """The `openssh-key-v1` container, unencrypted (PROTOCOL.key in the OpenSSH sources)."""
    check = secrets.token_bytes(4)
    private = (
        check
        + check
        + _string(b"ssh-ed25519")
        + _string(public)
        + _string(seed + public)
        + _string(comment.encode())
    )
    private += bytes(range(1, 1 + (-len(private) % 8)))
    body = (
        b"openssh-key-v1\0"
        + _string(b"none")
        + _string(b"none")
        + _string(b"")
        + struct.pack(">I", 1)
        + _string(blob)
        + _string(private)
    )
    encoded = base64.b64encode(body).decode()
    lines = [encoded[i : i + 70] for i in range(0, len(encoded), 70)]
    return (
        "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END OPENSSH PRIVATE KEY-----\n"
    )


# ------------------------------------------------------------------ Ed25519 (RFC 8032 section 5.1)
_P = 2**255 - 19
_D = -121665 * pow(121666, _P - 2, _P) % _P
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)
_Point = tuple[int, int, int, int]  # extended homogeneous coordinates (X, Y, Z, T)


def _recover_x(y: int, sign: int) -> int:
    x2 = (y * y - 1) * pow(_D * y * y + 1, _P - 2, _P)
    x = pow(x2, (_P + 3) // 8, _P)
    if (x * x - x2) % _P:
        x = x * _SQRT_M1 % _P
    return _P - x if (x & 1) != sign else x


_BASE_Y = 4 * pow(5, _P - 2, _P) % _P
_BASE_X = _recover_x(_BASE_Y, 0)
_BASE: _Point = (_BASE_X, _BASE_Y, 1, _BASE_X * _BASE_Y % _P)


def _add(p: _Point, q: _Point) -> _Point:
    a = (p[1] - p[0]) * (q[1] - q[0]) % _P
    b = (p[1] + p[0]) * (q[1] + q[0]) % _P
    c = 2 * p[3] * q[3] * _D % _P
    d = 2 * p[2] * q[2] % _P
    e, f, g, h = b - a, d - c, d + c, b + a
    return e * f % _P, g * h % _P, f * g % _P, e * h % _P


def _multiply(scalar: int, point: _Point) -> _Point:
    result: _Point = (0, 1, 1, 0)
    while scalar:
        if scalar & 1:
            result = _add(result, point)
        point = _add(point, point)
        scalar >>= 1
    return result


def _ed25519_public(seed: bytes) -> bytes:
    digest = hashlib.sha512(seed).digest()
    scalar = int.from_bytes(digest[:32], "little")
    scalar = (scalar & ((1 << 254) - 8)) | (1 << 254)
    x, y, z, _ = _multiply(scalar, _BASE)
    z_inv = pow(z, _P - 2, _P)
    x, y = x * z_inv % _P, y * z_inv % _P
    return (y | ((x & 1) << 255)).to_bytes(32, "little")

"""TLS for the mock clouds: a private certificate authority in the state dir and a server certificate it signs.

`ensure(state_dir, host)` makes them on first use and reuses them afterwards, so a client that trusts
`STATE_DIR/ca.pem` keeps trusting the server across restarts:

    ca.pem          the CA certificate: what clients trust (`SSL_CERT_FILE`, `ca_file`)
    ca-key.pem      its private key (never leaves the state dir)
    server.pem      the server certificate, for IP 127.0.0.1 and DNS localhost (and `host` when it is another
                    name or address), signed by the CA
    server-key.pem  its private key

Every file is written 0600 in the 0700 state dir. The server certificate is made again when it is missing, not
signed by the CA, lacks a name it needs or is within RENEW_BEFORE of its end; the CA when it is missing or
near its end (and then the server certificate with it). Keys are ECDSA P-256, which is fast to generate.
"""

from __future__ import annotations

import datetime
import ipaddress
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .core.store import write_atomic

if TYPE_CHECKING:
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ec

CA_FILE = "ca.pem"
CA_KEY_FILE = "ca-key.pem"
CERT_FILE = "server.pem"
KEY_FILE = "server-key.pem"
LOOPBACK_NAMES = ("127.0.0.1", "localhost")
CA_DAYS = 3650
SERVER_DAYS = 397  # the longest lifetime public CAs may give a server certificate
RENEW_BEFORE = datetime.timedelta(days=7)
_WILDCARD_HOSTS = ("", "0.0.0.0", "::")


@dataclass(frozen=True)
class ServerTls:
    """Where a server's TLS material lives; the front ends read it through these helpers."""

    ca_file: Path
    cert_file: Path
    key_file: Path

    def cert_pem(self) -> bytes:
        return self.cert_file.read_bytes()

    def key_pem(self) -> bytes:
        return self.key_file.read_bytes()

    def ssl_context(self) -> ssl.SSLContext:
        """A server-side context (TLS 1.2 or later) presenting the server certificate."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.cert_file, self.key_file)
        return context


def ensure(state_dir: Path, host: str = "127.0.0.1") -> ServerTls:
    """The state dir's CA and server certificate for `host`, made or renewed as the module docstring says."""
    files = ServerTls(state_dir / CA_FILE, state_dir / CERT_FILE, state_dir / KEY_FILE)
    names = server_names(host)
    ca_cert, ca_key = _load_ca(state_dir)
    if ca_cert is None or ca_key is None:
        ca_cert, ca_key = _new_ca(state_dir)
    if not _server_cert_fits(files, ca_cert, names):
        _new_server_cert(files, ca_cert, ca_key, names)
    return files


def server_names(host: str) -> list[str]:
    """The names the server certificate must hold: the loopback ones, and `host` unless it is a wildcard."""
    names = list(LOOPBACK_NAMES)
    if host not in _WILDCARD_HOSTS and host not in names:
        names.append(host)
    return names


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _load_ca(state_dir: Path) -> tuple[x509.Certificate | None, ec.EllipticCurvePrivateKey | None]:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    try:
        cert = x509.load_pem_x509_certificate((state_dir / CA_FILE).read_bytes())
        key = serialization.load_pem_private_key((state_dir / CA_KEY_FILE).read_bytes(), password=None)
    except (OSError, ValueError):
        return None, None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or cert.not_valid_after_utc - RENEW_BEFORE < _now():
        return None, None
    return cert, key


def _new_ca(state_dir: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "mock-clouds"),
                      x509.NameAttribute(NameOID.COMMON_NAME, f"mock-clouds local CA ({state_dir.name})")])
    now = _now()
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=CA_DAYS))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    write_atomic(state_dir / CA_KEY_FILE, _key_pem(key))
    write_atomic(state_dir / CA_FILE, _cert_pem(cert))
    return cert, key


def _server_cert_fits(files: ServerTls, ca_cert: x509.Certificate, names: list[str]) -> bool:
    """Whether the server certificate on disk (with its key) can be used again as it is."""
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import serialization

    try:
        cert = x509.load_pem_x509_certificate(files.cert_pem())
        key = serialization.load_pem_private_key(files.key_pem(), password=None)
        if key.public_key() != cert.public_key():
            return False  # a write of the pair was cut short
        cert.verify_directly_issued_by(ca_cert)
        held = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (OSError, ValueError, TypeError, InvalidSignature, x509.ExtensionNotFound):
        return False
    return set(_san_entries(names)) <= set(held) and cert.not_valid_after_utc - RENEW_BEFORE > _now()


def _new_server_cert(files: ServerTls, ca_cert: x509.Certificate, ca_key: ec.EllipticCurvePrivateKey,
                     names: list[str]) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    now = _now()
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0])]))
        .issuer_name(ca_cert.subject).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(min(now + datetime.timedelta(days=SERVER_DAYS), ca_cert.not_valid_after_utc))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(cert_sign=False), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.SubjectAlternativeName(_san_entries(names)), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    write_atomic(files.key_file, _key_pem(key))
    write_atomic(files.cert_file, _cert_pem(cert))


def _san_entries(names: list[str]) -> list[x509.GeneralName]:
    from cryptography import x509

    entries: list[x509.GeneralName] = []
    for name in names:
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            entries.append(x509.DNSName(name))
    return entries


def _key_usage(*, cert_sign: bool) -> x509.KeyUsage:
    from cryptography import x509

    return x509.KeyUsage(
        digital_signature=not cert_sign, content_commitment=False, key_encipherment=False,
        data_encipherment=False, key_agreement=False, key_cert_sign=cert_sign, crl_sign=cert_sign,
        encipher_only=False, decipher_only=False,
    )


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _cert_pem(cert: x509.Certificate) -> bytes:
    from cryptography.hazmat.primitives import serialization

    return cert.public_bytes(serialization.Encoding.PEM)

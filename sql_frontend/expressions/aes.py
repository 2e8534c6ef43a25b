"""``aes_encrypt`` (with an explicit IV, or in ECB mode: deterministic), ``aes_decrypt`` and
``try_aes_decrypt`` as Spark's ``ExpressionImplUtils`` computes them, through the
``cryptography`` package's AES; per row. Layouts: GCM = IV (12 bytes) + ciphertext + tag
(16 bytes); CBC = IV (16 bytes) + ciphertext, PKCS#7 padded; ECB = ciphertext, PKCS#7 padded."""

from __future__ import annotations

from sql_frontend.expressions.evaluate import OPS, elementwise, runtime_error
from sql_frontend.expressions.vec import Vec
from sql_frontend.sql_types import SqlType

MODES = {"GCM": ("NONE", 12), "CBC": ("PKCS", 16), "ECB": ("PKCS", 0)}
"""Mode → (its padding, its IV length)."""


def check_mode(mode: str, padding: str) -> str | None:
    """None if Spark supports the mode with the padding, else what is wrong."""
    m, p = mode.upper(), padding.upper()
    if m not in MODES:
        return f"the mode {mode!r} (write 'GCM', 'CBC' or 'ECB')"
    if p not in ("DEFAULT", MODES[m][0]):
        return f"the padding {padding!r} with mode {m} (write 'DEFAULT' or {MODES[m][0]!r})"
    return None


def _key_check(key: bytes) -> None:
    if len(key) not in (16, 24, 32):
        raise runtime_error(
            f"[INVALID_PARAMETER_VALUE.AES_KEY_LENGTH] the AES key has {len(key)} bytes; "
            "it must have 16, 24 or 32"
        )


def _crypto_error(what: str) -> Exception:
    return runtime_error(f"[INVALID_PARAMETER_VALUE.AES_CRYPTO_ERROR] {what}")


def encrypt(data: bytes, key: bytes, mode: str, iv: bytes, aad: bytes) -> bytes:
    from cryptography.hazmat.primitives import padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    _key_check(key)
    m = mode.upper()
    if m != "GCM" and aad:
        raise runtime_error(f"[UNSUPPORTED_FEATURE.AES_MODE_AAD] {m} mode takes no AAD")
    if m == "ECB" and iv:
        raise runtime_error("[UNSUPPORTED_FEATURE.AES_MODE_IV] ECB mode takes no IV")
    if m != "ECB" and len(iv) != MODES[m][1]:
        raise runtime_error(
            f"[INVALID_PARAMETER_VALUE.AES_IV_LENGTH] {m} needs an IV of {MODES[m][1]} bytes,"
            f" not {len(iv)}"
        )
    if m == "GCM":
        return iv + AESGCM(key).encrypt(iv, data, aad or None)
    padder = padding.PKCS7(128).padder()
    padded = padder.update(data) + padder.finalize()
    cipher = Cipher(algorithms.AES(key), modes.CBC(iv) if m == "CBC" else modes.ECB())
    e = cipher.encryptor()
    return iv + e.update(padded) + e.finalize()


def decrypt(data: bytes, key: bytes, mode: str, aad: bytes) -> bytes:
    from cryptography.exceptions import InvalidTag
    from cryptography.hazmat.primitives import padding
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    _key_check(key)
    m = mode.upper()
    if m != "GCM" and aad:
        raise runtime_error(f"[UNSUPPORTED_FEATURE.AES_MODE_AAD] {m} mode takes no AAD")
    n = MODES[m][1]
    iv, body = data[:n], data[n:]
    if m == "GCM":
        try:
            return AESGCM(key).decrypt(iv, body, aad or None)
        except (InvalidTag, ValueError):
            raise _crypto_error("Tag mismatch: the input was not encrypted with this key") from None
    if len(data) >= n and not body:  # Java's Cipher.doFinal of no bytes: no bytes
        return b""
    if len(data) < n or len(body) % 16:
        raise _crypto_error("the input length is not a multiple of 16 after the IV")
    cipher = Cipher(algorithms.AES(key), modes.CBC(iv) if m == "CBC" else modes.ECB())
    d = cipher.decryptor()
    plain = d.update(body) + d.finalize()
    unpadder = padding.PKCS7(128).unpadder()
    try:
        return unpadder.update(plain) + unpadder.finalize()
    except ValueError:
        raise _crypto_error("bad padding: the input was not encrypted with this key") from None


def _aes_encrypt(args: list[Vec], t: SqlType) -> Vec:
    return elementwise(
        lambda d, k, m, _p, iv, aad: encrypt(bytes(d), bytes(k), m, bytes(iv), bytes(aad)), args, t
    )


def _aes_decrypt(safe: bool):
    def one(d: bytes, k: bytes, m: str, _p: str, aad: bytes) -> bytes | None:
        try:
            return decrypt(bytes(d), bytes(k), m, bytes(aad))
        except Exception:
            if safe:
                return None
            raise

    return lambda args, t: elementwise(one, args, t)


OPS["aes_encrypt"] = _aes_encrypt
OPS["aes_decrypt"] = _aes_decrypt(safe=False)
OPS["try_aes_decrypt"] = _aes_decrypt(safe=True)

//! `enc:` credential values: AES-256-GCM, wire-compatible with the reference engines.
//!
//! Form: `enc:` + base64(12-byte IV) + `:` + base64(ciphertext ‖ 16-byte tag), standard base64
//! with padding, no associated data. The key is 64 hexadecimal characters (32 bytes), read from
//! the environment variable [`CREDENTIAL_KEY_VAR`]. Decryption fails closed: a missing or
//! malformed key, a malformed value, a wrong key or a tampered value is `config.decrypt`, never the
//! value returned as-is.

use std::fmt;

use a2aflow_model::{ErrorCode, Failure};
use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use super::env::Environment;
use super::secret::Secret;

/// The environment variable holding the 64-hex-character credential key.
pub const CREDENTIAL_KEY_VAR: &str = "A2AT_CRED_KEY";

/// The prefix marking an encrypted value.
pub const ENCRYPTED_PREFIX: &str = "enc:";

const IV_LEN: usize = 12;

/// A 256-bit AES-GCM key. `Debug` never prints it.
#[derive(Clone)]
pub struct CredentialKey([u8; 32]);

impl CredentialKey {
    /// Parses 64 hexadecimal characters. Anything else is `config.decrypt`.
    pub fn from_hex(hex: &str) -> Result<Self, Failure> {
        let hex = hex.trim();
        if hex.len() != 64 {
            return Err(Failure::new(
                ErrorCode::ConfigDecrypt,
                format!(
                    "{CREDENTIAL_KEY_VAR} must contain exactly 64 hexadecimal characters (32 bytes)"
                ),
            ));
        }
        let mut key = [0u8; 32];
        for (i, pair) in hex.as_bytes().chunks(2).enumerate() {
            let (Some(hi), Some(lo)) = (hex_digit(pair[0]), hex_digit(pair[1])) else {
                return Err(Failure::new(
                    ErrorCode::ConfigDecrypt,
                    format!("{CREDENTIAL_KEY_VAR} contains non-hexadecimal characters"),
                ));
            };
            key[i] = (hi << 4) | lo;
        }
        Ok(CredentialKey(key))
    }

    /// The key from [`CREDENTIAL_KEY_VAR`] in `env`, `None` when unset, an error when malformed.
    pub fn from_environment(env: &Environment) -> Result<Option<Self>, Failure> {
        env.get(CREDENTIAL_KEY_VAR).map(Self::from_hex).transpose()
    }

    /// A fresh random key (for generating one to store in a secret manager).
    pub fn generate() -> Self {
        CredentialKey(Aes256Gcm::generate_key(&mut OsRng).into())
    }

    /// The key as 64 lowercase hexadecimal characters.
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn cipher(&self) -> Aes256Gcm {
        Aes256Gcm::new(Key::<Aes256Gcm>::from_slice(&self.0))
    }
}

impl fmt::Debug for CredentialKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CredentialKey(***)")
    }
}

fn hex_digit(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// True when `value` carries the `enc:` prefix.
pub fn is_encrypted(value: &str) -> bool {
    value.starts_with(ENCRYPTED_PREFIX)
}

/// Encrypts `plaintext` into the `enc:<iv>:<ciphertext>` form with a fresh random IV.
///
/// ```
/// use a2aflow_protocol::auth::{CredentialKey, decrypt_secret, encrypt_secret};
/// let key = CredentialKey::from_hex(&"0f".repeat(32))?;
/// let value = encrypt_secret("p@ss&中文", &key)?;
/// assert!(value.starts_with("enc:"));
/// assert_eq!(decrypt_secret(&value, &key)?.expose(), "p@ss&中文");
/// # Ok::<(), a2aflow_model::Failure>(())
/// ```
pub fn encrypt_secret(plaintext: &str, key: &CredentialKey) -> Result<String, Failure> {
    let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
    let sealed = key
        .cipher()
        .encrypt(&nonce, plaintext.as_bytes())
        .map_err(|_| Failure::new(ErrorCode::ConfigDecrypt, "credential encryption failed"))?;
    Ok(format!(
        "{ENCRYPTED_PREFIX}{}:{}",
        STANDARD.encode(nonce),
        STANDARD.encode(sealed)
    ))
}

/// Decrypts an `enc:<iv>:<ciphertext>` value. A value without the prefix is returned unchanged.
/// Every failure is `config.decrypt` and its message never contains the value.
pub fn decrypt_secret(value: &str, key: &CredentialKey) -> Result<Secret, Failure> {
    let Some(body) = value.strip_prefix(ENCRYPTED_PREFIX) else {
        return Ok(Secret::new(value));
    };
    let format_error = || {
        Failure::new(
            ErrorCode::ConfigDecrypt,
            "Invalid encrypted credential format; expected enc:<iv>:<ciphertext>",
        )
    };
    let (iv, sealed) = body.split_once(':').ok_or_else(format_error)?;
    let failed = || Failure::new(ErrorCode::ConfigDecrypt, "Credential decryption failed");
    let iv = STANDARD.decode(iv).map_err(|_| failed())?;
    if iv.len() != IV_LEN {
        return Err(failed());
    }
    let sealed = STANDARD.decode(sealed).map_err(|_| failed())?;
    let plain = key
        .cipher()
        .decrypt(Nonce::from_slice(&iv), sealed.as_slice())
        .map_err(|_| failed())?;
    String::from_utf8(plain)
        .map(Secret::new)
        .map_err(|_| failed())
}

/// Resolves one configured value against an optional key: plain values pass through; `enc:`
/// values need the key (`config.decrypt` "… not configured" when it is missing).
pub fn decrypt_with(value: &str, key: Option<&CredentialKey>) -> Result<Secret, Failure> {
    if !is_encrypted(value) {
        return Ok(Secret::new(value));
    }
    let key = key.ok_or_else(|| {
        Failure::new(
            ErrorCode::ConfigDecrypt,
            format!("Encrypted credential found but {CREDENTIAL_KEY_VAR} is not configured"),
        )
    })?;
    decrypt_secret(value, key)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: &str) -> CredentialKey {
        CredentialKey::from_hex(&byte.repeat(32)).unwrap()
    }

    #[test]
    fn round_trip_has_three_fields_and_random_iv() {
        let k = key("ab");
        let a = encrypt_secret("secret", &k).unwrap();
        let b = encrypt_secret("secret", &k).unwrap();
        assert_ne!(a, b, "IV must be random");
        assert_eq!(a.split(':').count(), 3);
        assert_eq!(decrypt_secret(&a, &k).unwrap().expose(), "secret");
    }

    #[test]
    fn key_validation_messages() {
        let e = CredentialKey::from_hex("not-a-256-bit-key").unwrap_err();
        assert!(e.is(ErrorCode::ConfigDecrypt));
        assert!(e.message.contains("64 hexadecimal"), "{}", e.message);
        let e = CredentialKey::from_hex(&"zz".repeat(32)).unwrap_err();
        assert!(e.message.contains("non-hexadecimal"), "{}", e.message);
        let k = key("7f");
        assert_eq!(CredentialKey::from_hex(&k.to_hex()).unwrap().0, k.0);
        assert_eq!(format!("{k:?}"), "CredentialKey(***)");
    }

    #[test]
    fn missing_key_fails_closed() {
        let e = decrypt_with("enc:aXY=:Y2lwaGVydGV4dA==", None).unwrap_err();
        assert!(e.is(ErrorCode::ConfigDecrypt));
        assert!(e.message.contains("not configured"));
        assert_eq!(decrypt_with("plain", None).unwrap().expose(), "plain");
    }

    #[test]
    fn malformed_values_fail_closed() {
        let k = key("01");
        for bad in [
            "enc:nocolon",
            "enc:aXY=:Y2lwaGVydGV4dA==",
            "enc:!!!:Y2lw",
            "enc::",
        ] {
            let e = decrypt_secret(bad, &k).unwrap_err();
            assert!(e.is(ErrorCode::ConfigDecrypt), "{bad}");
            assert!(!e.message.contains(bad));
        }
    }
}

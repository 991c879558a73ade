//! TLS configuration: default trust, CA bundles, client certificates, the insecure opt-out, and
//! `config.tls` for everything that cannot be read or parsed.

use crate::support::{Capture, Scratch};

use a2aflow_model::ErrorCode;
use a2aflow_protocol::tls::TlsConfig;

/// A throwaway CA and a client certificate it signed (EC P-256, generated once with openssl for
/// these tests; no private key of any real system).
const CA_PEM: &str = r"-----BEGIN CERTIFICATE-----
MIIBjDCCATGgAwIBAgIUAtY9sas64vsv+LY9oMFbyGUAQ/4wCgYIKoZIzj0EAwIw
GjEYMBYGA1UEAwwPYTJhZmxvdyB0ZXN0IENBMCAXDTI2MTEzMDA1MzMwMVoYDzIx
MjYxMTA2MDUzMzAxWjAaMRgwFgYDVQQDDA9hMmFmbG93IHRlc3QgQ0EwWTATBgcq
hkjOPQIBBggqhkjOPQMBBwNCAAQFBra3sM+HGaYCQik4L24LGKVMjLZhjlxemfxr
+uzgNDqcNpYSG1+zCX4OsL9UWxMVm57iwEHZfllhcq5eCThZo1MwUTAdBgNVHQ4E
FgQUUM7cfA5MaOmiILbvrfmgALjh1L0wHwYDVR0jBBgwFoAUUM7cfA5MaOmiILbv
rfmgALjh1L0wDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNJADBGAiEA2gwn
z0YkicMW6fE/STNbsdxRutsxP1sG2lptdL19ikgCIQDsUKAPTiM9HvcCfCIYh31T
rLMbYU4c+IzguSLaK16tDA==
-----END CERTIFICATE-----
";
const CLIENT_CERT_PEM: &str = r"-----BEGIN CERTIFICATE-----
MIIBrDCCAVGgAwIBAgIULeoL4UAx/WDWZ9+7WzI8j85LfocwCgYIKoZIzj0EAwIw
GjEYMBYGA1UEAwwPYTJhZmxvdyB0ZXN0IENBMCAXDTI2MTEzMDA1MzQ1NFoYDzIx
MjYxMTA2MDUzNDU0WjAeMRwwGgYDVQQDDBNhMmFmbG93IHRlc3QgY2xpZW50MFkw
EwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEyvBBBEee6uWt/4ps7ZDRVWqZgnWkTMPN
7NmSUlM6pI0YPEaPfpQZHvEnhztSLPEBbhraqwhKDFa2cT9YyMSebaNvMG0wCQYD
VR0TBAIwADALBgNVHQ8EBAMCB4AwEwYDVR0lBAwwCgYIKwYBBQUHAwIwHQYDVR0O
BBYEFEMHIdUh0HFEjS6mxaMZNd4rGMkbMB8GA1UdIwQYMBaAFFDO3HwOTGjpoiC2
7635oAC44dS9MAoGCCqGSM49BAMCA0kAMEYCIQDVFR6ykXNGBXU68I3E41chqrZe
BSKRKjO6PHRmxG2C4AIhAMqz6qSxBGhb6+HJ4GXNMGLhJ8cor69hCi/rKUOE+uhb
-----END CERTIFICATE-----
";
const CLIENT_KEY_PEM: &str = r"-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQga6WaIG6Hsf3GLRU7
JmsOtXcWBRLHly6OZKM4Q1IKX+uhRANCAATK8EEER57q5a3/imztkNFVapmCdaRM
w83s2ZJSUzqkjRg8Ro9+lBke8SeHO1Is8QFuGtqrCEoMVrZxP1jIxJ5t
-----END PRIVATE KEY-----
";

#[test]
fn default_config_verifies_with_webpki_roots_and_ring() {
    let cfg = TlsConfig::new();
    assert!(!cfg.insecure_skip_verify);
    let built = cfg.client_config().unwrap();
    assert!(!built.client_auth_cert_resolver.has_certs());
    assert!(!cfg.presents_client_identity());
}

#[test]
fn missing_ca_bundle_fails_closed() {
    let s = Scratch::new("a2aflow-tls");
    let missing = s.0.join("nope.pem");
    let e = TlsConfig::new()
        .with_ca_bundle(&missing)
        .client_config()
        .unwrap_err();
    assert!(e.is(ErrorCode::ConfigTls), "{e}");
    assert!(
        e.message.contains("CA trust store not found"),
        "{}",
        e.message
    );
    assert_eq!(e.details["path"], missing.display().to_string());
}

#[test]
fn garbage_or_empty_ca_bundle_fails() {
    let s = Scratch::new("a2aflow-tls");
    let garbage = s.file(
        "garbage.pem",
        "-----BEGIN CERTIFICATE-----\n!!!not base64!!!\n-----END CERTIFICATE-----\n",
    );
    let e = TlsConfig::new()
        .with_ca_bundle(&garbage)
        .client_config()
        .unwrap_err();
    assert!(e.is(ErrorCode::ConfigTls), "{e}");
    assert!(e.message.contains("not valid PEM"), "{}", e.message);

    let empty = s.file("empty.pem", "just some text, no PEM sections\n");
    let e = TlsConfig::new()
        .with_ca_bundle(&empty)
        .client_config()
        .unwrap_err();
    assert!(e.is(ErrorCode::ConfigTls));
    assert!(
        e.message.contains("contains no PEM certificate"),
        "{}",
        e.message
    );

    // Well-formed PEM whose DER is not a certificate.
    let bogus = s.file(
        "bogus.pem",
        "-----BEGIN CERTIFICATE-----\nAAECAwQFBgcICQ==\n-----END CERTIFICATE-----\n",
    );
    let e = TlsConfig::new()
        .with_ca_bundle(&bogus)
        .client_config()
        .unwrap_err();
    assert!(e.is(ErrorCode::ConfigTls), "{e}");
}

#[test]
fn valid_ca_bundle_and_client_identity_build() {
    let s = Scratch::new("a2aflow-tls");
    let ca = s.file("ca.pem", CA_PEM);
    let cert = s.file("client.pem", CLIENT_CERT_PEM);
    let key = s.file("client.key", CLIENT_KEY_PEM);
    let cfg = TlsConfig::new()
        .with_ca_bundle(&ca)
        .with_client_cert(&cert, &key);
    assert!(cfg.presents_client_identity());
    let built = cfg.client_config().unwrap();
    assert!(built.client_auth_cert_resolver.has_certs());
}

#[test]
fn missing_or_unusable_client_key_fails() {
    let s = Scratch::new("a2aflow-tls");
    let cert = s.file("client.pem", CLIENT_CERT_PEM);

    let e = TlsConfig::new()
        .with_client_cert(&cert, s.0.join("missing.key"))
        .client_config()
        .unwrap_err();
    assert!(e.is(ErrorCode::ConfigTls), "{e}");
    assert!(
        e.message.contains("client private key not found"),
        "{}",
        e.message
    );

    // A key file that holds only a certificate.
    let not_a_key = s.file("cert-as-key.pem", CLIENT_CERT_PEM);
    let e = TlsConfig::new()
        .with_client_cert(&cert, &not_a_key)
        .client_config()
        .unwrap_err();
    assert!(e.is(ErrorCode::ConfigTls));
    assert!(e.message.contains("no PEM private key"), "{}", e.message);

    // A key that does not match the certificate.
    let other_key = s.file(
        "other.key",
        "-----BEGIN PRIVATE KEY-----\nAAECAwQFBgcICQ==\n-----END PRIVATE KEY-----\n",
    );
    let e = TlsConfig::new()
        .with_client_cert(&cert, &other_key)
        .client_config()
        .unwrap_err();
    assert!(e.is(ErrorCode::ConfigTls), "{e}");
    // The message names the file, never key material.
    assert!(!e.message.contains("AAECAwQF"));

    // A missing certificate file.
    let key = s.file("client.key", CLIENT_KEY_PEM);
    let e = TlsConfig::new()
        .with_client_cert(s.0.join("missing.pem"), &key)
        .client_config()
        .unwrap_err();
    assert!(e.is(ErrorCode::ConfigTls));
    assert!(
        e.message.contains("client certificate not found"),
        "{}",
        e.message
    );
}

#[cfg(not(feature = "system-roots"))]
#[test]
fn system_roots_without_the_feature_fail_instead_of_falling_back() {
    let e = TlsConfig::new()
        .with_system_roots(true)
        .client_config()
        .unwrap_err();
    assert!(e.is(ErrorCode::ConfigTls));
    assert!(e.message.contains("system-roots"), "{}", e.message);
}

#[test]
fn insecure_skip_verify_is_per_config_and_warns_once() {
    let capture = Capture::default();
    let _guard = capture.trace_default();

    let insecure = TlsConfig::new().with_insecure_skip_verify(true);
    insecure.client_config().unwrap();
    insecure.client_config().unwrap();
    insecure.clone().client_config().unwrap();
    // Another client keeps verifying and does not warn.
    TlsConfig::new().client_config().unwrap();

    let text = capture.text();
    assert_eq!(
        text.matches("verification is DISABLED").count(),
        1,
        "{text}"
    );
    // A second insecure config warns on its own.
    TlsConfig::new()
        .with_insecure_skip_verify(true)
        .client_config()
        .unwrap();
    let text = capture.text();
    assert_eq!(
        text.matches("verification is DISABLED").count(),
        2,
        "{text}"
    );
}

#[test]
fn insecure_skip_verify_with_trust_roots_is_rejected_not_ignored() {
    let s = Scratch::new("a2aflow-tls");
    let ca = s.file("ca.pem", CA_PEM);
    let e = TlsConfig::new()
        .with_ca_bundle(&ca)
        .with_insecure_skip_verify(true)
        .client_config()
        .unwrap_err();
    assert!(e.is(ErrorCode::ConfigTls), "{e}");
    assert!(e.message.contains("insecure_skip_verify"), "{e}");
    assert!(e.message.contains("ca_bundle"), "{e}");
    let e = TlsConfig::new()
        .with_system_roots(true)
        .with_insecure_skip_verify(true)
        .client_config()
        .unwrap_err();
    assert!(e.is(ErrorCode::ConfigTls), "{e}");
    assert!(e.message.contains("system_roots"), "{e}");
    // A client certificate still goes with the opt-out (the server may ask for one).
    let cert = s.file("client.pem", CLIENT_CERT_PEM);
    let key = s.file("client.key", CLIENT_KEY_PEM);
    TlsConfig::new()
        .with_client_cert(&cert, &key)
        .with_insecure_skip_verify(true)
        .client_config()
        .unwrap();
}

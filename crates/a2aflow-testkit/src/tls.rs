//! TLS with a generated CA and server certificate (rcgen, rustls `ring` provider).

use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use crate::error::TestkitError;

/// How the server does TLS.
///
/// ```
/// use a2aflow_testkit::TlsOptions;
/// let opts = TlsOptions::new().wrong_host(true);
/// # let _ = opts;
/// ```
#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    pub(crate) wrong_host: bool,
}

impl TlsOptions {
    /// A certificate for `127.0.0.1` and `localhost`, signed by a fresh CA.
    pub fn new() -> Self {
        Self::default()
    }

    /// Serve a certificate for `wrong-host.invalid` only, so host-name verification fails.
    pub fn wrong_host(mut self, on: bool) -> Self {
        self.wrong_host = on;
        self
    }
}

/// Generated certificate material.
pub(crate) struct TlsMaterial {
    pub(crate) ca_pem: String,
    pub(crate) cert_pem: String,
    pub(crate) acceptor: tokio_rustls::TlsAcceptor,
}

fn tls_err(e: impl std::fmt::Display) -> TestkitError {
    TestkitError::Tls(e.to_string())
}

pub(crate) fn generate(opts: &TlsOptions) -> Result<TlsMaterial, TestkitError> {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(tls_err)?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "a2aflow testkit CA");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate().map_err(tls_err)?;
    let ca_cert = ca_params.self_signed(&ca_key).map_err(tls_err)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let names: Vec<String> = if opts.wrong_host {
        vec!["wrong-host.invalid".into()]
    } else {
        vec!["127.0.0.1".into(), "localhost".into()]
    };
    let mut leaf_params = CertificateParams::new(names).map_err(tls_err)?;
    leaf_params
        .distinguished_name
        .push(DnType::CommonName, "a2aflow testkit server");
    leaf_params.use_authority_key_identifier_extension = true;
    let leaf_key = KeyPair::generate().map_err(tls_err)?;
    let leaf = leaf_params.signed_by(&leaf_key, &issuer).map_err(tls_err)?;

    let chain: Vec<CertificateDer<'static>> = vec![leaf.der().clone(), ca_cert.der().clone()];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(leaf_key.serialize_der()));
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(tls_err)?
    .with_no_client_auth()
    .with_single_cert(chain, key)
    .map_err(tls_err)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsMaterial {
        ca_pem: ca_cert.pem(),
        cert_pem: leaf.pem(),
        acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
    })
}

//! TLS with a generated CA and server certificate (rcgen, rustls `ring` provider), and
//! optionally mutual TLS: a second generated CA whose client certificates the server demands.

use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::RootCertStore;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;

use crate::error::TestkitError;

/// How the server does TLS.
///
/// ```
/// use a2aflow_testkit::TlsOptions;
/// let opts = TlsOptions::new().wrong_host(true);
/// let mutual = TlsOptions::new().require_client_cert(true);
/// # let _ = (opts, mutual);
/// ```
#[derive(Clone, Debug, Default)]
pub struct TlsOptions {
    pub(crate) wrong_host: bool,
    pub(crate) require_client_cert: bool,
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

    /// Mutual TLS: the handshake fails unless the client presents a certificate signed by the
    /// server's generated client CA ([`TestServer::client_identity`](crate::TestServer::client_identity)
    /// is one).
    pub fn require_client_cert(mut self, on: bool) -> Self {
        self.require_client_cert = on;
        self
    }
}

/// A client certificate (PEM chain) and its private key (PKCS#8 PEM), for mutual TLS.
#[derive(Clone)]
pub struct ClientIdentity {
    /// The certificate, PEM.
    pub cert_pem: String,
    /// The private key, PKCS#8 PEM.
    pub key_pem: String,
}

impl std::fmt::Debug for ClientIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientIdentity").finish_non_exhaustive()
    }
}

impl ClientIdentity {
    /// An identity signed by a fresh CA that no test server trusts (a wrong client certificate).
    pub fn untrusted() -> Result<ClientIdentity, TestkitError> {
        let (_, issuer) = new_ca("a2aflow testkit stray CA")?;
        client_identity(&issuer)
    }
}

/// Generated certificate material.
pub(crate) struct TlsMaterial {
    pub(crate) ca_pem: String,
    pub(crate) cert_pem: String,
    pub(crate) client: Option<ClientIdentity>,
    pub(crate) acceptor: tokio_rustls::TlsAcceptor,
}

fn tls_err(e: impl std::fmt::Display) -> TestkitError {
    TestkitError::Tls(e.to_string())
}

/// A self-signed CA: its certificate and the issuer that signs with it.
fn new_ca(name: &str) -> Result<(rcgen::Certificate, Issuer<'static, KeyPair>), TestkitError> {
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(tls_err)?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(DnType::CommonName, name);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate().map_err(tls_err)?;
    let ca_cert = ca_params.self_signed(&ca_key).map_err(tls_err)?;
    Ok((ca_cert, Issuer::new(ca_params, ca_key)))
}

/// A client certificate signed by `issuer`, for TLS client authentication.
fn client_identity(issuer: &Issuer<'static, KeyPair>) -> Result<ClientIdentity, TestkitError> {
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(tls_err)?;
    params
        .distinguished_name
        .push(DnType::CommonName, "a2aflow testkit client");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    params.use_authority_key_identifier_extension = true;
    let key = KeyPair::generate().map_err(tls_err)?;
    let cert = params.signed_by(&key, issuer).map_err(tls_err)?;
    Ok(ClientIdentity {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    })
}

/// A verifier that demands a client certificate signed by a fresh client CA, and one such
/// certificate.
fn client_auth(
    provider: &Arc<rustls::crypto::CryptoProvider>,
) -> Result<
    (
        Arc<dyn rustls::server::danger::ClientCertVerifier>,
        ClientIdentity,
    ),
    TestkitError,
> {
    let (ca_cert, issuer) = new_ca("a2aflow testkit client CA")?;
    let mut roots = RootCertStore::empty();
    roots.add(ca_cert.der().clone()).map_err(tls_err)?;
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
        .build()
        .map_err(tls_err)?;
    Ok((verifier, client_identity(&issuer)?))
}

pub(crate) fn generate(opts: &TlsOptions) -> Result<TlsMaterial, TestkitError> {
    let (ca_cert, issuer) = new_ca("a2aflow testkit CA")?;

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
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(tls_err)?;
    let (builder, client) = if opts.require_client_cert {
        let (verifier, identity) = client_auth(&provider)?;
        (builder.with_client_cert_verifier(verifier), Some(identity))
    } else {
        (builder.with_no_client_auth(), None)
    };
    let mut config = builder.with_single_cert(chain, key).map_err(tls_err)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(TlsMaterial {
        ca_pem: ca_cert.pem(),
        cert_pem: leaf.pem(),
        client,
        acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
    })
}

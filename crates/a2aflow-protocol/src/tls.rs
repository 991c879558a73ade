//! TLS client configuration: rustls with the `ring` provider, verification on by default.
//!
//! - Default trust: the Mozilla roots of `webpki-roots`.
//! - [`TlsConfig::ca_bundle`]: a PEM bundle that **replaces** the default roots (no silent
//!   fallback to public trust). With [`TlsConfig::system_roots`] the system store is added too.
//! - [`TlsConfig::client_cert`]: a PEM certificate chain and a PEM private key (PKCS#8, PKCS#1 or
//!   SEC1) presented for mutual TLS.
//! - [`TlsConfig::insecure_skip_verify`]: an explicit opt-out for one client, for development.
//!   The server's certificate chain and name are not checked (handshake signatures still are);
//!   a warning is logged once per configuration. Nothing process-wide changes. Combined with
//!   trust roots (`ca_bundle`, `system_roots`), which it would silently ignore, it fails with
//!   `config.tls`.
//!
//! Everything that cannot be read or parsed fails with `config.tls` when the rustls config is
//! built, naming the file, never its contents.
//!
//! System roots (`system_roots`) need the cargo feature `system-roots`. It adds no dependency:
//! it reads the PEM bundle named by `SSL_CERT_FILE`, or else the first existing well-known bundle
//! path of Linux/BSD distributions (what `rustls-native-certs` does on those systems, which is not
//! available to this build). Without the feature, `system_roots: true` fails with `config.tls`
//! rather than silently using other roots.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use a2aflow_model::{ErrorCode, Failure};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, WebPkiSupportedAlgorithms};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

/// TLS settings of one client.
#[derive(Clone, Default)]
pub struct TlsConfig {
    /// PEM file of trusted CA certificates, replacing the default webpki roots.
    pub ca_bundle: Option<PathBuf>,
    /// PEM certificate chain and PEM private key presented to servers (mutual TLS).
    pub client_cert: Option<(PathBuf, PathBuf)>,
    /// Accept any server certificate (development only; logs a warning once).
    pub insecure_skip_verify: bool,
    /// Trust the operating system's CA bundle (needs the `system-roots` feature).
    pub system_roots: bool,
    warned: Arc<AtomicBool>,
}

impl std::fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsConfig")
            .field("ca_bundle", &self.ca_bundle)
            .field("client_cert", &self.client_cert)
            .field("insecure_skip_verify", &self.insecure_skip_verify)
            .field("system_roots", &self.system_roots)
            .finish()
    }
}

impl TlsConfig {
    /// Verification on, webpki roots, no client certificate.
    pub fn new() -> Self {
        Self::default()
    }

    /// Trusts the CAs of this PEM bundle instead of the default roots.
    pub fn with_ca_bundle(mut self, path: impl Into<PathBuf>) -> Self {
        self.ca_bundle = Some(path.into());
        self
    }

    /// Presents this client certificate chain and key (PEM files).
    pub fn with_client_cert(mut self, cert: impl Into<PathBuf>, key: impl Into<PathBuf>) -> Self {
        self.client_cert = Some((cert.into(), key.into()));
        self
    }

    /// Turns server verification off for this client only.
    pub fn with_insecure_skip_verify(mut self, skip: bool) -> Self {
        self.insecure_skip_verify = skip;
        self
    }

    /// Adds the system CA bundle to the trusted roots.
    pub fn with_system_roots(mut self, system: bool) -> Self {
        self.system_roots = system;
        self
    }

    /// True when a client certificate is configured (satisfies mutual-TLS security schemes).
    pub fn presents_client_identity(&self) -> bool {
        self.client_cert.is_some()
    }

    /// The rustls configuration, shared. See [`TlsConfig::build_client_config`].
    pub fn client_config(&self) -> Result<Arc<ClientConfig>, Failure> {
        self.build_client_config().map(Arc::new)
    }

    /// Builds an owned rustls configuration (the caller may still set ALPN protocols). Uses the
    /// `ring` provider explicitly; TLS 1.3 and 1.2.
    pub fn build_client_config(&self) -> Result<ClientConfig, Failure> {
        self.check_consistent()?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(|e| tls_failure(format!("TLS protocol setup failed: {e}"), None))?;
        let builder = if self.insecure_skip_verify {
            if !self.warned.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    target: "a2aflow::tls",
                    "TLS server verification is DISABLED for this client (insecure_skip_verify); never use this in production"
                );
            }
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAnyServerCert::new(&provider)))
        } else {
            builder.with_root_certificates(self.root_store()?)
        };
        match &self.client_cert {
            None => Ok(builder.with_no_client_auth()),
            Some((cert, key)) => {
                let chain = read_certs(cert, "client certificate")?;
                let key = read_key(key)?;
                builder.with_client_auth_cert(chain, key).map_err(|e| {
                    tls_failure(
                        format!(
                            "the client certificate and key do not form a usable identity: {e}"
                        ),
                        Some(cert),
                    )
                })
            }
        }
    }

    /// Rejects settings that would be silently ignored: trust roots do nothing when
    /// verification is off.
    fn check_consistent(&self) -> Result<(), Failure> {
        if !self.insecure_skip_verify {
            return Ok(());
        }
        let ignored: Vec<&str> = [
            (self.ca_bundle.is_some(), "ca_bundle"),
            (self.system_roots, "system_roots"),
        ]
        .into_iter()
        .filter_map(|(set, name)| set.then_some(name))
        .collect();
        if ignored.is_empty() {
            return Ok(());
        }
        Err(tls_failure(
            format!(
                "insecure_skip_verify turns server verification off, so {} would be ignored; \
                 configure one or the other",
                ignored.join(" and ")
            ),
            self.ca_bundle.as_deref(),
        ))
    }

    fn root_store(&self) -> Result<RootCertStore, Failure> {
        let mut roots = RootCertStore::empty();
        if let Some(path) = &self.ca_bundle {
            add_all(&mut roots, read_certs(path, "CA bundle")?, path)?;
        }
        if self.system_roots {
            let path = system_bundle()?;
            add_all(&mut roots, read_certs(&path, "system CA bundle")?, &path)?;
        }
        if self.ca_bundle.is_none() && !self.system_roots {
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        }
        Ok(roots)
    }
}

fn tls_failure(message: String, path: Option<&Path>) -> Failure {
    let f = Failure::new(ErrorCode::ConfigTls, message);
    match path {
        Some(p) => f.with_detail("path", p.display().to_string()),
        None => f,
    }
}

fn add_all(
    roots: &mut RootCertStore,
    certs: Vec<CertificateDer<'static>>,
    path: &Path,
) -> Result<(), Failure> {
    for cert in certs {
        roots.add(cert).map_err(|e| {
            tls_failure(
                format!(
                    "CA trust store {} holds a certificate that cannot be used: {e}",
                    path.display()
                ),
                Some(path),
            )
        })?;
    }
    Ok(())
}

fn read_file(path: &Path, what: &str) -> Result<Vec<u8>, Failure> {
    std::fs::read(path).map_err(|e| {
        let msg = if e.kind() == std::io::ErrorKind::NotFound {
            if what.contains("CA") {
                format!("CA trust store not found: {}", path.display())
            } else {
                format!("{what} not found: {}", path.display())
            }
        } else {
            format!("cannot read {what} {}: {}", path.display(), e.kind())
        };
        tls_failure(msg, Some(path))
    })
}

/// Every certificate of a PEM file; a file with none, or with a malformed PEM section, fails.
fn read_certs(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, Failure> {
    let bytes = read_file(path, what)?;
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            tls_failure(
                format!("{what} {} is not valid PEM: {e}", path.display()),
                Some(path),
            )
        })?;
    if certs.is_empty() {
        return Err(tls_failure(
            format!("{what} {} contains no PEM certificate", path.display()),
            Some(path),
        ));
    }
    Ok(certs)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, Failure> {
    let bytes = read_file(path, "client private key")?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| {
        let why = match e {
            rustls::pki_types::pem::Error::NoItemsFound => "contains no PEM private key".to_owned(),
            other => format!("is not a valid PEM private key ({other})"),
        };
        tls_failure(
            format!("client private key {} {why}", path.display()),
            Some(path),
        )
    })
}

#[cfg(feature = "system-roots")]
fn system_bundle() -> Result<PathBuf, Failure> {
    const CANDIDATES: &[&str] = &[
        "/etc/ssl/certs/ca-certificates.crt",
        "/etc/pki/tls/certs/ca-bundle.crt",
        "/etc/ssl/ca-bundle.pem",
        "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
        "/etc/ssl/cert.pem",
        "/usr/local/share/certs/ca-root-nss.crt",
    ];
    if let Some(p) = std::env::var_os("SSL_CERT_FILE") {
        return Ok(PathBuf::from(p));
    }
    CANDIDATES
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or_else(|| {
            tls_failure(
                "no system CA bundle found (set SSL_CERT_FILE or configure ca_bundle)".to_owned(),
                None,
            )
        })
}

#[cfg(not(feature = "system-roots"))]
fn system_bundle() -> Result<PathBuf, Failure> {
    Err(tls_failure(
        "system_roots needs the `system-roots` cargo feature of a2aflow-protocol".to_owned(),
        None,
    ))
}

/// Accepts any server certificate, but still checks that handshake signatures are made by the
/// presented certificate's key (so the peer holds the key of what it shows).
#[derive(Debug)]
struct AcceptAnyServerCert {
    algorithms: WebPkiSupportedAlgorithms,
}

impl AcceptAnyServerCert {
    fn new(provider: &CryptoProvider) -> Self {
        AcceptAnyServerCert {
            algorithms: provider.signature_verification_algorithms,
        }
    }
}

impl ServerCertVerifier for AcceptAnyServerCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

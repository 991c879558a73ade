//! TLS to the database through the workspace's rustls (no OpenSSL, no native-tls): a small
//! [`MakeTlsConnect`] over `tokio-rustls`, verifying the server against the Mozilla roots
//! (`webpki-roots`) and any extra CA certificates the host names.
//!
//! CA files named by the URL's `sslrootcert` are read here ([`root_certificates`]).
//!
//! Whether TLS is used follows the URL's `sslmode` (`disable`, `prefer` — the default — or
//! `require`), as tokio-postgres implements it. SCRAM channel binding is not offered (the
//! client says so to the server, which then authenticates without it).

use a2aflow_kernel::journal::StoreError;
use a2aflow_model::ErrorCode;
use rustls::ClientConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, MakeTlsConnect, TlsConnect};

/// The CA certificates of the PEM file at `path` (a URL's `sslrootcert`; `system`: none beyond
/// the Mozilla roots). A file that cannot be read or holds no certificate is `config.invalid`,
/// naming the file.
pub(crate) fn root_certificates(path: &str) -> Result<Vec<CertificateDer<'static>>, StoreError> {
    if path == "system" {
        return Ok(Vec::new());
    }
    let refused = |why: String| {
        StoreError::new(
            ErrorCode::ConfigInvalid,
            format!("the store URL's sslrootcert {path}: {why}"),
        )
        .with_detail("sslrootcert", path)
    };
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .map_err(|e| refused(format!("cannot be read ({e})")))?
        .collect::<Result<_, _>>()
        .map_err(|e| refused(format!("is not a PEM file of certificates ({e})")))?;
    if certs.is_empty() {
        return Err(refused(
            "holds no PEM certificate (-----BEGIN CERTIFICATE-----)".to_owned(),
        ));
    }
    Ok(certs)
}

/// Makes rustls sessions for the store's connections (cheap to clone: one shared config).
#[derive(Clone)]
pub(crate) struct RustlsConnector {
    config: Arc<ClientConfig>,
}

impl RustlsConnector {
    /// A connector trusting the Mozilla roots and `extra_roots` (DER certificates).
    pub(crate) fn new(extra_roots: &[CertificateDer<'static>]) -> Result<Self, rustls::Error> {
        let mut roots = rustls::RootCertStore::empty();
        roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        for cert in extra_roots {
            roots.add(cert.clone())?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(RustlsConnector {
            config: Arc::new(config),
        })
    }
}

impl<S> MakeTlsConnect<S> for RustlsConnector
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type TlsConnect = RustlsConnect;
    type Error = io::Error;

    fn make_tls_connect(&mut self, domain: &str) -> Result<RustlsConnect, io::Error> {
        let name = ServerName::try_from(domain.to_owned())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        Ok(RustlsConnect {
            connector: tokio_rustls::TlsConnector::from(self.config.clone()),
            name,
        })
    }
}

/// One connection's TLS handshake, for the server `name`.
pub(crate) struct RustlsConnect {
    connector: tokio_rustls::TlsConnector,
    name: ServerName<'static>,
}

type Handshake<S> = Pin<Box<dyn Future<Output = io::Result<RustlsStream<S>>> + Send>>;

impl<S> TlsConnect<S> for RustlsConnect
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    type Stream = RustlsStream<S>;
    type Error = io::Error;
    type Future = Handshake<S>;

    fn connect(self, stream: S) -> Handshake<S> {
        Box::pin(async move {
            let tls = self.connector.connect(self.name, stream).await?;
            Ok(RustlsStream(tls))
        })
    }
}

/// A connection's stream once TLS is up.
pub(crate) struct RustlsStream<S>(tokio_rustls::client::TlsStream<S>);

impl<S> tokio_postgres::tls::TlsStream for RustlsStream<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    fn channel_binding(&self) -> ChannelBinding {
        ChannelBinding::none()
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for RustlsStream<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_read(cx, buf)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for RustlsStream<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_shutdown(cx)
    }
}

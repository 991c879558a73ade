//! What a TLS failure means, in words a person can act on: "unknown issuer", "expired", "a CA
//! used as a leaf", "not valid for this host name", "the server wants a client certificate" —
//! instead of rustls's variant names. The rustls text follows in parentheses, for searching.

use rustls::{AlertDescription, CertificateError, Error};

/// The words for a rustls error, with rustls's own text after them.
pub(crate) fn describe(e: &Error) -> String {
    match words(e) {
        Some(w) => format!("{w} (rustls: {e})"),
        None => e.to_string(),
    }
}

/// The words for a TLS failure known only by its text (HTTP/2 keeps only the I/O error's text,
/// see `find_cause`), with that text after them.
pub(crate) fn describe_text(text: &str) -> String {
    let alert = [
        ("CertificateRequired", CERTIFICATE_REQUIRED),
        ("BadCertificate", CLIENT_CERTIFICATE_REFUSED),
        ("UnknownCA", CLIENT_CERTIFICATE_REFUSED),
        ("CertificateUnknown", CLIENT_CERTIFICATE_REFUSED),
    ]
    .into_iter()
    .find(|(name, _)| text.contains(name));
    match alert {
        Some((_, w)) => format!("{w} (rustls: {text})"),
        None => text.to_owned(),
    }
}

const CERTIFICATE_REQUIRED: &str = "the server requires a client certificate (mutual TLS): \
     configure `tls.client_cert` and `tls.client_key`";
const CLIENT_CERTIFICATE_REFUSED: &str = "the server refused the client certificate: it is not \
     issued by a CA the server trusts, or not meant for a client";

fn words(e: &Error) -> Option<&'static str> {
    Some(match e {
        Error::InvalidCertificate(c) => certificate_words(c)?,
        Error::AlertReceived(AlertDescription::CertificateRequired) => CERTIFICATE_REQUIRED,
        Error::AlertReceived(
            AlertDescription::BadCertificate
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateUnknown
            | AlertDescription::UnsupportedCertificate,
        ) => CLIENT_CERTIFICATE_REFUSED,
        Error::AlertReceived(AlertDescription::CertificateExpired) => {
            "the server refused the client certificate: it has expired"
        }
        Error::NoCertificatesPresented => "the server presented no certificate",
        _ => return None,
    })
}

fn certificate_words(c: &CertificateError) -> Option<&'static str> {
    Some(match c {
        CertificateError::UnknownIssuer => {
            "the server's certificate is not signed by an authority this client trusts (unknown \
             issuer): if you trust it, add its CA to `tls.ca_bundle`"
        }
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => {
            "the server's certificate has expired"
        }
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            "the server's certificate is not valid yet (check both machines' clocks)"
        }
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
            "the server's certificate is not valid for the host name in the URL (wrong name)"
        }
        CertificateError::Revoked => "the server's certificate was revoked",
        CertificateError::BadSignature => "the server's certificate has a bad signature",
        CertificateError::BadEncoding => "the server's certificate cannot be decoded",
        CertificateError::InvalidPurpose | CertificateError::InvalidPurposeContext { .. } => {
            "the server's certificate is not meant for a TLS server (its key usage)"
        }
        CertificateError::Other(o) if o.to_string().contains("CaUsedAsEndEntity") => {
            "the server presents a CA certificate as its own (a CA used as a leaf): it needs a \
             server certificate issued by that CA"
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::OtherError;
    use std::sync::Arc;

    /// Stands for webpki's error, whose text is its variant name.
    #[derive(Debug)]
    struct Webpki(&'static str);
    impl std::fmt::Display for Webpki {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }
    impl std::error::Error for Webpki {}

    #[test]
    fn certificate_failures_are_said_in_words_with_the_rustls_text_after() {
        let cases = [
            (
                Error::InvalidCertificate(CertificateError::UnknownIssuer),
                "unknown issuer",
            ),
            (
                Error::InvalidCertificate(CertificateError::Expired),
                "has expired",
            ),
            (
                Error::InvalidCertificate(CertificateError::NotValidForName),
                "wrong name",
            ),
            (
                Error::InvalidCertificate(CertificateError::Other(OtherError(Arc::new(Webpki(
                    "CaUsedAsEndEntity",
                ))))),
                "a CA used as a leaf",
            ),
            (
                Error::AlertReceived(AlertDescription::CertificateRequired),
                "requires a client certificate",
            ),
        ];
        for (e, words) in cases {
            let text = describe(&e);
            assert!(text.contains(words), "{text}");
            assert!(text.ends_with(&format!("(rustls: {e})")), "{text}");
        }
        // Nothing to add: the rustls text alone.
        let e = Error::General("something else".into());
        assert_eq!(describe(&e), e.to_string());
    }

    #[test]
    fn alerts_known_only_by_their_text_are_said_in_words() {
        let text = describe_text("received fatal alert: CertificateRequired");
        assert!(text.starts_with(CERTIFICATE_REQUIRED), "{text}");
        assert_eq!(
            describe_text("peer is incompatible"),
            "peer is incompatible"
        );
    }
}

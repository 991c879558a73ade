//! [`HttpTokenFetcher`]: the [`TokenFetcher`] that sends token requests — the OAuth2
//! client-credentials grant (RFC 6749 §4.4) and the reference engines' login request — on the
//! crate's own [`HttpClient`] (hyper + rustls).
//!
//! The request is what [`TokenRequest`] holds (built by the token cache from the credentials
//! entry): for OAuth2 a form-encoded `grant_type=client_credentials` body carrying `client_id`
//! and `client_secret` (client authentication in the body, RFC 6749 §2.3.1), and `scope` when
//! scopes apply. Caching until shortly before `expires_in`, and dropping the token when the agent
//! answers 401, are the cache's ([`AgentAuth`](super::AgentAuth)); this module only sends.
//!
//! The token endpoint is a peer: its answer is read within the client's request timeout and at
//! most [`MAX_TOKEN_RESPONSE`] bytes, redirects are not followed, and no agent credential or
//! provider header is ever sent to it. The request body is never logged.

use std::sync::Arc;

use a2aflow_model::{ErrorCode, Failure};
use async_trait::async_trait;
use bytes::Bytes;
use http::HeaderValue;

use super::token::{TokenFetcher, TokenRequest, TokenResponse};
use crate::http_client::{Exchange, HttpClient, parse_uri};
use crate::limits::Limits;

/// Largest token-endpoint answer read (64 KiB); a longer one fails the token request.
pub const MAX_TOKEN_RESPONSE: usize = 64 * 1024;

/// Sends token and login requests over HTTP(S) with a pool of its own.
#[derive(Debug, Clone)]
pub struct HttpTokenFetcher {
    http: HttpClient,
}

impl HttpTokenFetcher {
    /// A fetcher with these limits (connect and request timeouts) and this TLS configuration —
    /// usually the engine's own, so a private CA trusted for agents is trusted for the token
    /// endpoint too.
    pub fn new(limits: Limits, tls: Arc<rustls::ClientConfig>) -> Result<Self, Failure> {
        let http = HttpClient::builder().limits(limits).tls(tls).build()?;
        Ok(Self::with_client(http))
    }

    /// A fetcher on a client the host built. The client's request-headers hook, if any, is not
    /// used for token requests.
    pub fn with_client(http: HttpClient) -> Self {
        HttpTokenFetcher { http }
    }
}

fn header_value(value: &str, what: &str) -> Result<HeaderValue, Failure> {
    HeaderValue::from_str(value).map_err(|_| {
        Failure::new(
            ErrorCode::ConfigInvalidCredentials,
            format!("the {what} of the token request is not a valid header value"),
        )
    })
}

#[async_trait]
impl TokenFetcher for HttpTokenFetcher {
    async fn fetch(&self, request: TokenRequest) -> Result<TokenResponse, Failure> {
        let uri = parse_uri(&request.url)?;
        let exchange = Exchange {
            method: request.method,
            uri: &uri,
            content_type: HeaderValue::from_static(request.content_type),
            accept: header_value(&request.accept, "Accept header")?,
            body: Bytes::from(request.body.expose().to_owned()),
        };
        let reply = self.http.exchange(exchange, MAX_TOKEN_RESPONSE).await?;
        Ok(TokenResponse {
            status: reply.status.as_u16(),
            body: reply.body,
        })
    }
}

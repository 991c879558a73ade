//! Plain JSON requests over the [`HttpClient`] (its limits, TLS, wire log and headers hook), for
//! services that are not A2A agents: agent registries and orchestration centres.

use bytes::Bytes;
use http::Method;
use serde_json::Value;

use crate::error::TransportError;
use crate::headers::CallOptions;
use crate::http_client::{HttpClient, Outgoing, parse_uri};

/// A whole JSON answer: its HTTP status and the raw body (read within the client's limits).
#[derive(Debug, Clone)]
pub struct JsonReply {
    /// The HTTP status code.
    pub status: u16,
    /// The body bytes, at most the client's `max_response_body`.
    pub body: Bytes,
}

impl HttpClient {
    /// `GET url` asking for JSON. The whole body is read within the request timeout (or the
    /// caller's deadline) and the body limit; any status is returned, the caller judges it.
    pub async fn get_json(
        &self,
        url: &str,
        opts: &CallOptions,
    ) -> Result<JsonReply, TransportError> {
        self.json_request(Method::GET, url, None, opts).await
    }

    /// `POST url` with a JSON body, asking for JSON; bounded as [`HttpClient::get_json`].
    pub async fn post_json(
        &self,
        url: &str,
        body: &Value,
        opts: &CallOptions,
    ) -> Result<JsonReply, TransportError> {
        let bytes = serde_json::to_vec(body)
            .map_err(|e| TransportError::InvalidRequest(format!("unserialisable body: {e}")))?;
        self.json_request(Method::POST, url, Some(Bytes::from(bytes)), opts)
            .await
    }

    async fn json_request(
        &self,
        method: Method,
        url: &str,
        body: Option<Bytes>,
        opts: &CallOptions,
    ) -> Result<JsonReply, TransportError> {
        let uri = parse_uri(url)?;
        let reply = self
            .unary(
                Outgoing {
                    method,
                    uri: &uri,
                    body,
                    event_stream: false,
                },
                opts,
            )
            .await?;
        Ok(JsonReply {
            status: reply.status.as_u16(),
            body: reply.body,
        })
    }
}

//! [`SendGate`]: the caller's last word on whether a request may still go, asked on the
//! connection's own task when the request's body is first polled — after the connection was
//! made or taken from the pool, the credentials added and the head encoded, and before any of
//! the request's bytes are written to the socket (HTTP/1.1), or before its body follows its
//! head (HTTP/2, gRPC; a head without its body is reset and never handled). A closed gate fails
//! the call with [`TransportError::Withheld`](crate::TransportError::Withheld).
//!
//! Why so late: a durable run journals a send, checks that it still holds the run's lease, and
//! then sends. A process paused between that check and the write (a stopped process, a long
//! stall) may wake after another driver took the run over and resent the command; the gate
//! makes the window between the last check and the write a few instructions instead of a
//! connect and a request build.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use http_body::{Body, Frame, SizeHint};

type Check = dyn Fn() -> bool + Send + Sync;

/// Whether a request may still be written, asked once per request at the last moment (see the
/// module docs). Clones share the check and what it answered.
#[derive(Clone)]
pub struct SendGate {
    inner: Arc<Inner>,
}

struct Inner {
    check: Box<Check>,
    /// Set when the check said no: the call's failure is then [`Withheld`], whatever the
    /// connection made of the aborted request.
    withheld: AtomicBool,
}

impl SendGate {
    /// A gate that asks `check`; `false` withholds the request. The check runs on the
    /// connection's task inside a poll: it must not block, and it runs once per request sent
    /// (a request sent again after a 401 is asked again).
    pub fn new(check: impl Fn() -> bool + Send + Sync + 'static) -> Self {
        SendGate {
            inner: Arc::new(Inner {
                check: Box::new(check),
                withheld: AtomicBool::new(false),
            }),
        }
    }

    /// Asks the check; remembers a refusal.
    fn admits(&self) -> bool {
        let open = (self.inner.check)();
        if !open {
            self.inner.withheld.store(true, Ordering::Release);
        }
        open
    }

    /// Whether this gate withheld a request.
    pub fn withheld(&self) -> bool {
        self.inner.withheld.load(Ordering::Acquire)
    }
}

impl std::fmt::Debug for SendGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SendGate")
            .field("withheld", &self.withheld())
            .finish_non_exhaustive()
    }
}

/// Two options are equal when they hold the same gate.
impl PartialEq for SendGate {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for SendGate {}

/// The body error of a request its gate withheld.
#[derive(Debug, thiserror::Error)]
#[error("the request was withheld by its send gate before any of it was written")]
pub(crate) struct Withheld;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A request body that asks its gate before its first frame (and fails instead when the gate
/// is closed). Without a gate it is the inner body unchanged.
pub(crate) struct GatedBody<B> {
    inner: B,
    /// Taken at the first poll.
    gate: Option<SendGate>,
}

impl<B> GatedBody<B> {
    pub(crate) fn new(inner: B, gate: Option<SendGate>) -> Self {
        GatedBody { inner, gate }
    }
}

impl<B> Body for GatedBody<B>
where
    B: Body + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = B::Data;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        if let Some(gate) = self.gate.take()
            && !gate.admits()
        {
            return Poll::Ready(Some(Err(Box::new(Withheld))));
        }
        Pin::new(&mut self.inner).poll_frame(cx).map_err(Into::into)
    }

    /// Never at its end before the gate was asked (a body at its end is not polled). A request
    /// whose body is empty may still go unasked (HTTP/1.1 with `Content-Length: 0`): gate only
    /// requests that carry a body, as every business command does.
    fn is_end_stream(&self) -> bool {
        self.gate.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use http_body_util::{BodyExt, Full};

    #[tokio::test]
    async fn an_open_gate_passes_the_body_and_a_closed_one_fails_it_before_any_frame() {
        let open = SendGate::new(|| true);
        let body = GatedBody::new(Full::new(Bytes::from_static(b"{}")), Some(open.clone()));
        assert!(!body.is_end_stream());
        assert_eq!(body.collect().await.unwrap().to_bytes(), "{}");
        assert!(!open.withheld());

        let closed = SendGate::new(|| false);
        let body = GatedBody::new(Full::new(Bytes::from_static(b"{}")), Some(closed.clone()));
        let e = body.collect().await.expect_err("withheld");
        assert!(e.downcast_ref::<Withheld>().is_some(), "{e}");
        assert!(closed.withheld());
        // A clone shares what the gate answered.
        assert_ne!(closed, open);
        assert_eq!(closed.clone(), closed);
    }

    #[tokio::test]
    async fn an_empty_body_still_asks_its_gate() {
        let closed = SendGate::new(|| false);
        let body = GatedBody::new(Full::new(Bytes::new()), Some(closed.clone()));
        assert!(!body.is_end_stream());
        assert!(body.collect().await.is_err());
        let ungated = GatedBody::new(Full::new(Bytes::new()), None);
        assert!(ungated.is_end_stream());
    }
}

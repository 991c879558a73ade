//! The tower layers every request passes: a tracing span per request (method, path, status)
//! and a deadline on producing the response head (a stream's body is not bounded by it; the
//! run's own deadline ends it).

use crate::body::{self, Body};
use http::{Request, Response};
use http_body_util::Limited;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tower::{BoxError, Layer, Service, ServiceBuilder};
use tracing::Instrument;

/// A span per request, with the answer's status logged at debug level; a request the inner
/// layers refused (past the deadline) is answered `503 Service Unavailable`.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct TraceLayer;

impl<S> Layer<S> for TraceLayer {
    type Service = Trace<S>;
    fn layer(&self, inner: S) -> Trace<S> {
        Trace(inner)
    }
}

/// The service of [`TraceLayer`].
#[derive(Debug, Clone)]
pub(crate) struct Trace<S>(S);

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B> Service<Request<B>> for Trace<S>
where
    S: Service<Request<B>, Response = Response<Body>> + Send,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = BoxFuture<Result<Response<Body>, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // The inner services (timeout, request mapping, service_fn) are always ready: their
        // readiness is the service_fn's, which never fails.
        self.0.poll_ready(cx).map(|_| Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let span = tracing::debug_span!(
            target: "a2aflow::serve",
            "a2a_request",
            method = %request.method(),
            path = %request.uri().path(),
        );
        let future = self.0.call(request);
        Box::pin(
            async move {
                let response = match future.await {
                    Ok(response) => response,
                    Err(e) => {
                        let e: BoxError = e.into();
                        tracing::warn!(target: "a2aflow::serve", error = %e, "request not answered in time");
                        body::text(503, "Service Unavailable")
                    }
                };
                tracing::debug!(target: "a2aflow::serve", status = response.status().as_u16(), "answered");
                Ok(response)
            }
            .instrument(span),
        )
    }
}

/// `inner` behind the layers: the tracing span outside, then the deadline on the response head
/// (a request past it is answered `503`), then the body limit (a body read past `max_body`
/// bytes fails with `LengthLimitError`).
pub(crate) fn wrap<S, B>(
    inner: S,
    deadline: Duration,
    max_body: usize,
) -> impl Service<Request<B>, Response = Response<Body>, Error = Infallible, Future: Send> + Clone + Send
where
    S: Service<Request<Limited<B>>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    ServiceBuilder::new()
        .layer(TraceLayer)
        .timeout(deadline)
        .map_request(move |r: Request<B>| r.map(|b| Limited::new(b, max_body)))
        .service(inner)
}

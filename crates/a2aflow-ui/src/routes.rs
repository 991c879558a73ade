//! Every request: the token first (a missing or wrong one is 401 with no data), then the page's
//! three files or the JSON API.

use crate::api;
use crate::token::{AccessToken, Check};
use bytes::Bytes;
use http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, LOCATION, REFERRER_POLICY, SET_COOKIE,
    X_CONTENT_TYPE_OPTIONS, X_FRAME_OPTIONS,
};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use std::convert::Infallible;
use std::sync::Arc;

/// A response body: a whole buffer or the event stream.
pub(crate) type Body = UnsyncBoxBody<Bytes, Infallible>;

const INDEX_HTML: &str = include_str!("../assets/index.html");
const APP_JS: &str = include_str!("../assets/app.js");
const APP_CSS: &str = include_str!("../assets/app.css");

/// The page loads nothing from anywhere else, runs only its own script, and is never framed.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// A whole body.
pub(crate) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed_unsync()
}

/// A response with the headers every answer carries.
pub(crate) fn response(
    status: StatusCode,
    content_type: &'static str,
    body: Body,
) -> Response<Body> {
    let mut r = Response::new(body);
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    r
}

fn unauthorized() -> Response<Body> {
    response(
        StatusCode::UNAUTHORIZED,
        "text/plain; charset=utf-8",
        full("401 unauthorized: open the URL `a2aflow ui` printed (it carries the page's token)\n"),
    )
}

/// Answers one request.
pub(crate) async fn handle(
    state: Arc<api::State>,
    token: Arc<AccessToken>,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let check = token.check(req.uri().query(), req.headers());
    if check == Check::Refused {
        return Ok(unauthorized());
    }
    let path = req.uri().path().to_owned();
    let r = match (req.method(), path.as_str()) {
        (&Method::GET, "/") if check == Check::Query => first_load(&token),
        (&Method::GET, "/") => page(INDEX_HTML, "text/html; charset=utf-8"),
        (&Method::GET, "/app.js") => page(APP_JS, "text/javascript; charset=utf-8"),
        (&Method::GET, "/app.css") => page(APP_CSS, "text/css; charset=utf-8"),
        _ if path.starts_with("/api/") => api::route(&state, req).await,
        _ => api::error_response(StatusCode::NOT_FOUND, "config.invalid", "no such page"),
    };
    Ok(r)
}

fn page(text: &'static str, content_type: &'static str) -> Response<Body> {
    response(StatusCode::OK, content_type, full(text))
}

/// The printed URL: set the cookie and send the browser to `/`, so the token leaves the address
/// bar and the history.
fn first_load(token: &AccessToken) -> Response<Body> {
    let mut r = response(StatusCode::SEE_OTHER, "text/plain; charset=utf-8", full(""));
    if let Ok(cookie) = HeaderValue::from_str(&token.set_cookie()) {
        r.headers_mut().insert(SET_COOKIE, cookie);
    }
    r.headers_mut()
        .insert(LOCATION, HeaderValue::from_static("/"));
    r
}

//! The HTTP+JSON binding (under `/agents/{name}/rest`): the routes of the A2A 1.0 proto, bodies
//! and answers in ProtoJSON, errors as `google.rpc.Status` bodies with the SDK's HTTP statuses,
//! and a plain `404 Not Found` for a path or verb that is not a route, as the SDK answers.

use crate::app::{App, once_response, stream_response};
use crate::auth::Who;
use crate::body::{self, Body};
use crate::ops::{self, Answer, Unsupported};
use crate::params::list_query;
use crate::sse::Framing;
use crate::version::check_version;
use crate::wire_error::A2aError;
use http::{Method, Response};
use serde_json::{Map, Value, json};

/// One HTTP+JSON route.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Route {
    Send,
    Stream,
    Get(String),
    List,
    Cancel(String),
    Subscribe(String),
    PushConfig,
    ExtendedCard,
}

/// The route of `method` and `path` (relative to the interface URL), `None` when there is none.
fn route(method: &Method, path: &str) -> Option<Route> {
    let path = path.trim_end_matches('/');
    let post = method == Method::POST;
    let get = method == Method::GET;
    match path {
        "/message:send" if post => return Some(Route::Send),
        "/message:stream" if post => return Some(Route::Stream),
        "/tasks" if get => return Some(Route::List),
        "/extendedAgentCard" if get => return Some(Route::ExtendedCard),
        _ => {}
    }
    let task = path.strip_prefix("/tasks/")?;
    if task.contains("/pushNotificationConfigs") {
        return Some(Route::PushConfig);
    }
    if let Some(id) = task.strip_suffix(":cancel") {
        return (post && !id.is_empty()).then(|| Route::Cancel(id.to_owned()));
    }
    if let Some(id) = task.strip_suffix(":subscribe") {
        return ((post || get) && !id.is_empty()).then(|| Route::Subscribe(id.to_owned()));
    }
    (get && !task.is_empty() && !task.contains('/')).then(|| Route::Get(task.to_owned()))
}

/// Serves one HTTP+JSON request (its head `parts`) for `workflow`; `path` is below `/rest`,
/// percent-decoded.
pub(crate) async fn serve(
    app: &App,
    workflow: &str,
    who: &Who,
    parts: &http::request::Parts,
    path: &str,
    bytes: &[u8],
) -> Response<Body> {
    let Some(route) = route(&parts.method, path) else {
        return body::text(404, "Not Found");
    };
    let query = parts.uri.query();
    if let Err(e) = check_version(&parts.headers) {
        return error(&e);
    }
    match answer(app, workflow, who, route, query, bytes).await {
        Ok(Answer::Json(value)) => body::a2a_json(&value),
        Ok(Answer::Stream(watch, first, opening)) => {
            stream_response(app, watch, first, opening, Framing::Rest)
        }
        Ok(Answer::StreamOnce(task)) => once_response(task, Framing::Rest),
        Err(e) => error(&e),
    }
}

async fn answer(
    app: &App,
    workflow: &str,
    who: &Who,
    route: Route,
    query: Option<&str>,
    bytes: &[u8],
) -> Result<Answer, A2aError> {
    let runs = &app.runs;
    let wait = app.limits.send_wait;
    match route {
        Route::Send => ops::send(runs, workflow, who, &json_body(bytes)?, false, wait).await,
        Route::Stream => ops::send(runs, workflow, who, &json_body(bytes)?, true, wait).await,
        Route::Get(id) => ops::get(runs, workflow, who, &with_id(query_json(query), id)).await,
        Route::List => ops::list(runs, workflow, who, list_query(&query_json(query))?).await,
        Route::Cancel(id) => ops::cancel(runs, workflow, who, &json!({ "id": id })).await,
        Route::Subscribe(id) => ops::subscribe(runs, workflow, who, &json!({ "id": id })).await,
        Route::PushConfig => Err(ops::unsupported(Unsupported::PushNotifications)),
        Route::ExtendedCard => Err(ops::unsupported(Unsupported::ExtendedCard)),
    }
}

/// The request body as JSON (the SDK's words for one that is not).
fn json_body(bytes: &[u8]) -> Result<Value, A2aError> {
    serde_json::from_slice(bytes).map_err(|e| {
        A2aError::new(
            crate::wire_error::ErrorKind::InvalidRequest,
            format!("Failed to load JSON: {e}."),
        )
    })
}

fn with_id(mut params: Value, id: String) -> Value {
    if let Value::Object(o) = &mut params {
        o.insert("id".into(), Value::String(id));
    }
    params
}

/// The query string as a JSON object of strings (repeated keys: the last wins).
fn query_json(query: Option<&str>) -> Value {
    let mut object = Map::new();
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        object.insert(
            crate::app::percent_decode(key).into_owned(),
            Value::String(crate::app::percent_decode(&value.replace('+', " ")).into_owned()),
        );
    }
    Value::Object(object)
}

/// A `google.rpc.Status` error body.
fn error(e: &A2aError) -> Response<Body> {
    let (status, value) = e.rest_response();
    body::json(status, &value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_of_the_proto() {
        let get = Method::GET;
        let post = Method::POST;
        assert_eq!(route(&post, "/message:send"), Some(Route::Send));
        assert_eq!(route(&get, "/tasks/t1"), Some(Route::Get("t1".into())));
        assert_eq!(route(&get, "/tasks/"), Some(Route::List));
        assert_eq!(
            route(&post, "/tasks/t1:cancel"),
            Some(Route::Cancel("t1".into()))
        );
        assert_eq!(
            route(&get, "/tasks/t1:subscribe"),
            Some(Route::Subscribe("t1".into()))
        );
        assert_eq!(route(&get, "/message:send"), None);
        assert_eq!(route(&get, "/nope"), None);
        assert_eq!(route(&get, "/tasks"), Some(Route::List));
    }
}

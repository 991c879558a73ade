//! The security headers every answer carries: the page's own files, the JSON API, its errors, the
//! 401 without the token, the first load's redirect and the event stream. The policy lets only
//! the page's own script run (no inline script, no `eval`), loads nothing from elsewhere, and
//! forbids framing; the browser enforces it (an inline script put into the page does not run).

use crate::cdp::{Browser, HANG};
use crate::support::Fixture;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The status line and headers of the answer to `GET path` (lower-cased names), read up to the
/// blank line: enough for a stream, which does not end.
async fn head(addr: &str, path: &str, headers: &[(&str, &str)]) -> (u16, Vec<(String, String)>) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    stream.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let read = async {
        while !raw.windows(4).any(|w| w == b"\r\n\r\n") {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => raw.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(HANG, read)
        .await
        .expect("the head arrives");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let head = text.split("\r\n\r\n").next().unwrap_or_default();
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let fields = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (status, fields)
}

/// What is asked for, its path, the request's headers, the status expected.
type Case<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)], u16);

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// The directives of a Content-Security-Policy, by name.
fn directives(csp: &str) -> Vec<(String, Vec<String>)> {
    csp.split(';')
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| {
            let mut words = d.split_whitespace().map(str::to_owned);
            let name = words.next().unwrap_or_default().to_ascii_lowercase();
            (name, words.collect())
        })
        .collect()
}

fn assert_secure(what: &str, fields: &[(String, String)]) {
    let csp = field(fields, "content-security-policy")
        .unwrap_or_else(|| panic!("{what}: no Content-Security-Policy in {fields:?}"));
    let policy = directives(csp);
    let sources = |name: &str| {
        policy
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, s)| s.clone())
    };
    assert_eq!(
        sources("default-src"),
        Some(vec!["'none'".to_owned()]),
        "{what}: {csp}"
    );
    // Scripts: the page's own file only, never inline script or eval.
    let scripts = sources("script-src").unwrap_or_else(|| panic!("{what}: no script-src: {csp}"));
    assert_eq!(scripts, vec!["'self'".to_owned()], "{what}: {csp}");
    for directive in ["style-src", "connect-src", "img-src"] {
        let s = sources(directive).unwrap_or_default();
        assert!(
            !s.iter()
                .any(|v| v.contains("unsafe") || v == "*" || v.starts_with("http")),
            "{what}: {directive} lets in more than the page's own: {csp}"
        );
    }
    assert_eq!(
        sources("frame-ancestors"),
        Some(vec!["'none'".to_owned()]),
        "{what}: {csp}"
    );
    assert_eq!(
        sources("base-uri"),
        Some(vec!["'none'".to_owned()]),
        "{what}: {csp}"
    );
    assert_eq!(
        field(fields, "x-content-type-options"),
        Some("nosniff"),
        "{what}"
    );
    assert_eq!(field(fields, "x-frame-options"), Some("DENY"), "{what}");
    assert_eq!(
        field(fields, "referrer-policy"),
        Some("no-referrer"),
        "{what}"
    );
    assert_eq!(field(fields, "cache-control"), Some("no-store"), "{what}");
}

#[tokio::test]
async fn every_answer_carries_the_security_headers() {
    let f = Fixture::start().await;
    let addr = f.addr();
    let auth = format!("Bearer {}", f.token());
    let with_token = [("Authorization", auth.as_str())];
    let first_load = format!("/?token={}", f.token());
    let cases: [Case; 9] = [
        ("the page", "/", &with_token, 200),
        ("the script", "/app.js", &with_token, 200),
        ("the style sheet", "/app.css", &with_token, 200),
        ("the runs list", "/api/runs", &with_token, 200),
        ("an unknown run", "/api/runs/nope", &with_token, 404),
        ("an unknown path", "/elsewhere", &with_token, 404),
        ("no token", "/api/runs", &[], 401),
        ("the printed URL", &first_load, &[], 303),
        ("a bad parameter", "/api/runs?limit=x", &with_token, 400),
    ];
    for (what, path, headers, want) in cases {
        let (status, fields) = head(&addr, path, headers).await;
        assert_eq!(status, want, "{what}: {fields:?}");
        assert_secure(what, &fields);
    }
    // The event stream of a run (it stays open: only its head is read).
    let run = f.start_run(
        "h",
        r#"{"id": "h", "name": "H", "steps": [{"name": "s", "subtasks": [{"agent": "alpha", "description": "echo hi"}]}]}"#,
    );
    tokio::time::timeout(HANG, run).await.unwrap().unwrap();
    let (status, fields) = head(&addr, "/api/runs/h/events", &with_token).await;
    assert_eq!(status, 200);
    assert_eq!(field(&fields, "content-type"), Some("text/event-stream"));
    assert_secure("the event stream", &fields);
    // Each file says what it is (with nosniff, a browser takes it at its word).
    for (path, kind) in [
        ("/", "text/html"),
        ("/app.js", "text/javascript"),
        ("/app.css", "text/css"),
        ("/api/runs", "application/json"),
    ] {
        let (_, fields) = head(&addr, path, &with_token).await;
        let ct = field(&fields, "content-type").unwrap_or_default();
        assert!(ct.starts_with(kind), "{path}: {ct}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_browser_refuses_an_inline_script_put_into_the_page() {
    let f = Fixture::start().await;
    let b = Browser::launch().await;
    b.goto(f.ui.url()).await;
    b.wait_for(
        "document.getElementById('list-view') && !document.getElementById('list-view').hidden",
    )
    .await;
    // What a run's text would be if it ever reached the page as markup: the policy stops it.
    b.eval(
        "(() => { window.violations = []; \
         document.addEventListener('securitypolicyviolation', e => \
           window.violations.push(e.violatedDirective)); \
         const s = document.createElement('script'); s.textContent = 'window.inlineRan = true'; \
         document.body.appendChild(s); \
         const d = document.createElement('div'); \
         d.innerHTML = '<img src=x onerror=\"window.handlerRan = true\">'; \
         document.body.appendChild(d); })()",
    )
    .await;
    let violations = b
        .wait_for("window.violations.length >= 2 && window.violations")
        .await;
    // The inline script and the inline event handler: both refused by `script-src`.
    for v in violations.as_array().unwrap() {
        assert!(
            v.as_str().unwrap_or_default().starts_with("script-src"),
            "{violations}"
        );
    }
    assert_eq!(b.eval("window.inlineRan === undefined").await, true);
    assert_eq!(b.eval("window.handlerRan === undefined").await, true);
    b.close().await;
}

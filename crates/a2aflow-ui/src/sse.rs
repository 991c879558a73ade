//! `/api/runs/{id}/events`: a run's events as Server-Sent Events, replayed from the store and
//! then followed by polling it, so the stream is the same for a run driven in this process, one
//! driven by another, and one that finished long ago.
//!
//! Messages: each event as `id: <seq>` + `data: <event JSON>` (the stored ones first);
//! `event: run` with the run's view and drawing once they are sent, and whenever it changes
//! (journal records such as a started task or an open gate
//! reach the store before the events that tell them); `event: problem` when the store fails
//! (the stream goes on polling); `event: end` once the run finished and its `close` event was
//! sent (or nothing new arrived for a while after it finished). A reconnecting client's
//! `Last-Event-ID` (or `?after=`) resumes after that event.

use crate::detail::{EVENT_PAGE, run_answer};
use crate::routes::Body;
use crate::views::Views;
use a2aflow::model::{Event, EventKind, Failure};
use a2aflow::{RunStore, execution_events};
use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Frames buffered towards a slow client before the follower waits for it.
const BUFFER: usize = 64;

/// A comment line is sent when nothing else was for this long (keeps proxies and the browser
/// from timing the stream out).
const KEEPALIVE: Duration = Duration::from_secs(15);

/// Polls of a finished run with no new event after which the stream ends anyway.
const QUIET_POLLS_AFTER_FINISH: u32 = 20;

/// How the stream follows a run.
#[derive(Clone)]
pub(crate) struct Follow {
    pub(crate) store: Arc<dyn RunStore>,
    pub(crate) poll: Duration,
    pub(crate) shutdown: CancellationToken,
    /// The page has a resumer (the run's view says whether it is resumable).
    pub(crate) can_resume: bool,
    /// The drawings and finished runs' answers kept.
    pub(crate) views: Arc<Views>,
}

/// The stream's body: a task follows the run and feeds it until the run ended, the client went
/// away (the channel closed) or the server shuts down.
pub(crate) fn events_body(follow: Follow, execution_id: String, after: Option<u64>) -> Body {
    let (tx, rx) = mpsc::channel::<Bytes>(BUFFER);
    tokio::spawn(async move {
        let shutdown = follow.shutdown.clone();
        tokio::select! {
            () = run_follower(follow, execution_id, after, tx) => {}
            () = shutdown.cancelled() => {}
        }
    });
    let frames = futures_util::stream::unfold(rx, |mut rx| async move {
        let bytes = rx.recv().await?;
        Some((Ok::<_, std::convert::Infallible>(Frame::data(bytes)), rx))
    });
    StreamBody::new(frames).boxed_unsync()
}

/// Sending ends when the client went away.
struct Sink {
    tx: mpsc::Sender<Bytes>,
    last_sent: Instant,
}

impl Sink {
    async fn send(&mut self, text: String) -> Result<(), Gone> {
        self.last_sent = Instant::now();
        self.tx.send(Bytes::from(text)).await.map_err(|_| Gone)
    }

    async fn problem(&mut self, f: &Failure) -> Result<(), Gone> {
        let data = json!({"code": f.code.to_string(), "message": f.message});
        self.send(format!("event: problem\ndata: {data}\n\n")).await
    }
}

/// The client closed the stream.
struct Gone;

async fn run_follower(
    follow: Follow,
    execution_id: String,
    mut after: Option<u64>,
    tx: mpsc::Sender<Bytes>,
) {
    let mut sink = Sink {
        tx,
        last_sent: Instant::now(),
    };
    let store = follow.store.as_ref();
    let mut last_run = String::new();
    let mut closed = false;
    let mut quiet_finished = 0u32;
    if sink.send("retry: 2000\n\n".to_owned()).await.is_err() {
        return;
    }
    let mut finished = false;
    // The stored events are replayed first: the view is read once they are sent (a page asked
    // for it before it opened the stream, and building it for a long run takes a while).
    let mut replaying = true;
    loop {
        // While whole pages of events are being replayed, or once the finished run's view was
        // sent, the view is not read again (a finished run's view does not change).
        if !replaying && !finished {
            let run = send_run(
                store,
                &follow.views,
                &execution_id,
                follow.can_resume,
                &mut last_run,
                &mut sink,
            );
            finished = match run.await {
                Ok(f) => f,
                Err(Gone) => return,
            };
        }
        let sent = match send_events(store, &execution_id, &mut after, &mut closed, &mut sink).await
        {
            Ok(n) => n,
            Err(Gone) => return,
        };
        replaying = sent == EVENT_PAGE;
        if finished && !replaying {
            quiet_finished = if sent == 0 { quiet_finished + 1 } else { 0 };
            if closed || quiet_finished >= QUIET_POLLS_AFTER_FINISH {
                let _ = sink.send("event: end\ndata: {}\n\n".to_owned()).await;
                return;
            }
        }
        if sent > 0 {
            continue; // more may be waiting: read again before sleeping
        }
        if sink.last_sent.elapsed() >= KEEPALIVE
            && sink.send(": keepalive\n\n".to_owned()).await.is_err()
        {
            return;
        }
        tokio::time::sleep(follow.poll).await;
    }
}

/// Sends the run's view when it changed; returns whether the run finished (false after a
/// store problem, which is sent instead).
async fn send_run(
    store: &dyn RunStore,
    views: &Views,
    execution_id: &str,
    can_resume: bool,
    last: &mut String,
    sink: &mut Sink,
) -> Result<bool, Gone> {
    match run_answer(store, views, execution_id, can_resume).await {
        Ok((text, finished)) => {
            if *text != **last {
                sink.send(format!("event: run\ndata: {text}\n\n")).await?;
                *last = text.to_string();
            }
            Ok(finished)
        }
        Err(f) => {
            sink.problem(&f).await?;
            Ok(false)
        }
    }
}

/// Sends one page of the events after `after`; returns how many.
async fn send_events(
    store: &dyn RunStore,
    execution_id: &str,
    after: &mut Option<u64>,
    closed: &mut bool,
    sink: &mut Sink,
) -> Result<usize, Gone> {
    let page: Vec<Event> = match execution_events(store, execution_id, *after, EVENT_PAGE).await {
        Ok(p) => p,
        Err(f) => {
            sink.problem(&f).await?;
            return Ok(0);
        }
    };
    let mut text = String::new();
    for event in &page {
        if event.kind == EventKind::Close && event.depth == 0 {
            *closed = true;
        }
        let data = serde_json::to_string(event).unwrap_or_default();
        text.push_str(&format!("id: {}\ndata: {data}\n\n", event.seq));
    }
    if let Some(last) = page.last() {
        *after = Some(last.seq);
        sink.send(text).await?;
    }
    Ok(page.len())
}

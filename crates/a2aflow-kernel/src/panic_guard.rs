//! Turning a panic inside a future into a value, so a panicking host callback fails its own
//! step instead of the scheduler. No `futures` dependency: a small poll wrapper.

use std::any::Any;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::task::{Context, Poll};

/// A future that yields `Err(message)` when the wrapped future panics while being polled.
///
/// After a panic the inner future is dropped and never polled again, which is why asserting
/// unwind safety is sound here: no state observed after the panic is reused.
///
/// The future is held inline, so it must be `Unpin`. The host's callbacks and the remote
/// client's dispatch already are (boxed by `async_trait`); other futures are passed as
/// `Box::pin(fut)`. Boxing here instead would box those boxes a second time, once per task.
pub(crate) struct CatchUnwind<F> {
    inner: Option<F>,
}

impl<F: Future + Unpin> CatchUnwind<F> {
    pub(crate) fn new(fut: F) -> Self {
        CatchUnwind { inner: Some(fut) }
    }
}

impl<F: Future + Unpin> Future for CatchUnwind<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let Some(inner) = self.inner.as_mut() else {
            return Poll::Ready(Err("future polled after it panicked".to_owned()));
        };
        match catch_unwind(AssertUnwindSafe(|| Pin::new(inner).poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => {
                self.inner = None;
                Poll::Ready(Ok(v))
            }
            Err(payload) => {
                self.inner = None;
                Poll::Ready(Err(panic_message(payload.as_ref())))
            }
        }
    }
}

/// The text of a panic payload (`&str` or `String`), or a generic description.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic with a non-string payload".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn panic_becomes_message_and_values_pass_through() {
        let ok = CatchUnwind::new(Box::pin(async { 7 })).await;
        assert_eq!(ok, Ok(7));
        let boom = CatchUnwind::new(Box::pin(async {
            if true {
                panic!("boom {}", 1);
            }
            0
        }))
        .await;
        assert_eq!(boom, Err("boom 1".to_owned()));
    }
}

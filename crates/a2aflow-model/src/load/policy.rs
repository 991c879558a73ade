//! Loading the run-time policies of steps and subtasks: `timeout` (seconds) and `retry`.
//!
//! The loader checks what a value must be to be kept (a number of seconds from 0 to
//! [`MAX_SECONDS`], a whole number of attempts, known keys); whether the values make sense
//! together (`initial` ≤ `max`, a code that retrying can change) is [`crate::validate()`]'s, through
//! [`RetryPolicy::problems`].

use super::{Cx, child, kind};
use crate::retry::{Backoff, RetryPolicy};
use crate::seconds::{MAX_SECONDS, from_secs};
use serde_json::{Map, Value};
use std::time::Duration;

const RETRY_KEYS: &[&str] = &["attempts", "backoff", "on"];
const BACKOFF_KEYS: &[&str] = &["initial", "max", "multiplier", "jitter"];

impl Cx {
    /// A member holding seconds; `null` and absence give `None`.
    pub(super) fn seconds(
        &mut self,
        obj: &Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Option<Duration> {
        let value = obj.get(key)?;
        let secs = match value {
            Value::Null => return None,
            Value::Number(n) => n.as_f64(),
            _ => None,
        };
        let duration = secs.and_then(from_secs);
        if duration.is_none() {
            self.error(
                &child(path, key),
                format!(
                    "`{key}` must be a number of seconds from 0 to {MAX_SECONDS}, found {}",
                    shown(value)
                ),
            );
        }
        duration
    }

    /// A number member; `null` and absence give `None`.
    fn number(&mut self, obj: &Map<String, Value>, key: &str, path: &str) -> Option<f64> {
        match obj.get(key)? {
            Value::Null => None,
            Value::Number(n) => n.as_f64(),
            other => {
                self.error(
                    &child(path, key),
                    format!("`{key}` must be a number, found {}", kind(other)),
                );
                None
            }
        }
    }

    /// A subtask's `retry` member; `null` and absence give `None`.
    pub(super) fn retry(&mut self, obj: &Map<String, Value>, path: &str) -> Option<RetryPolicy> {
        let path = child(path, "retry");
        let retry = match obj.get("retry")? {
            Value::Null => return None,
            Value::Object(o) => o,
            other => {
                self.error(
                    &path,
                    format!("`retry` must be an object, found {}", kind(other)),
                );
                return None;
            }
        };
        self.unknown_keys(retry, RETRY_KEYS, &path, "a retry policy");
        let attempts = self.attempts(retry, &path);
        let backoff = match retry.get("backoff") {
            None | Some(Value::Null) => Backoff::default(),
            Some(Value::Object(b)) => self.backoff(b, &child(&path, "backoff")),
            Some(other) => {
                self.error(
                    &child(&path, "backoff"),
                    format!("`backoff` must be an object, found {}", kind(other)),
                );
                Backoff::default()
            }
        };
        let on = match retry.get("on") {
            None => None,
            Some(v) => self.string_list(v, "on", &child(&path, "on")),
        };
        Some(RetryPolicy {
            attempts: attempts?,
            backoff,
            on: on.unwrap_or_default(),
        })
    }

    /// `attempts`: a whole number from 0 to `u32::MAX` (0 is kept for the validator to refuse).
    fn attempts(&mut self, retry: &Map<String, Value>, path: &str) -> Option<u32> {
        let value = retry.get("attempts");
        let whole = |n: &serde_json::Number| {
            n.as_u64().or_else(|| {
                // Written as 3.0: a whole number still.
                n.as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= f64::from(u32::MAX))
                    .map(|f| f as u64)
            })
        };
        let attempts = match value {
            Some(Value::Number(n)) => whole(n).and_then(|n| u32::try_from(n).ok()),
            _ => None,
        };
        if attempts.is_none() {
            let found = value.map_or_else(|| "nothing".to_owned(), shown);
            self.error(
                &child(path, "attempts"),
                format!(
                    "a retry policy needs `attempts`, a whole number (every attempt, the first included), found {found}"
                ),
            );
        }
        attempts
    }

    fn backoff(&mut self, b: &Map<String, Value>, path: &str) -> Backoff {
        self.unknown_keys(b, BACKOFF_KEYS, path, "a backoff");
        let d = Backoff::default();
        Backoff {
            initial: self.seconds(b, "initial", path).unwrap_or(d.initial),
            max: self.seconds(b, "max", path).unwrap_or(d.max),
            multiplier: self.number(b, "multiplier", path).unwrap_or(d.multiplier),
            jitter: self.number(b, "jitter", path).unwrap_or(d.jitter),
        }
    }
}

/// A value as a message shows it: a number as written, anything else by its kind.
fn shown(value: &Value) -> String {
    match value {
        Value::Number(n) => n.to_string(),
        other => kind(other).to_owned(),
    }
}

//! Durations as the workflow document writes them: seconds, a JSON number (fractions allowed).

use serde::{Deserialize, Deserializer, Serializer};
use std::time::Duration;

/// The longest duration a document may give, in seconds (about 31 years): larger values are
/// refused when loading, so every duration converts without overflow.
pub const MAX_SECONDS: f64 = 1e9;

/// `d` as seconds.
pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

/// Seconds from 0 to [`MAX_SECONDS`] as a duration.
pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let secs = f64::deserialize(d)?;
    from_secs(secs).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "{secs} is not a number of seconds from 0 to {MAX_SECONDS}"
        ))
    })
}

/// `secs` as a duration, when it is a number of seconds from 0 to [`MAX_SECONDS`].
pub fn from_secs(secs: f64) -> Option<Duration> {
    if (0.0..=MAX_SECONDS).contains(&secs) {
        Duration::try_from_secs_f64(secs).ok()
    } else {
        None
    }
}

/// An optional duration as seconds (`None` is skipped by the field's attributes, or `null`).
pub mod option {
    use super::*;

    /// `d` as seconds, or `null`.
    pub fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => super::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    /// Seconds or `null`.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
        match Option::<f64>::deserialize(d)? {
            None => Ok(None),
            Some(secs) => from_secs(secs).map(Some).ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "{secs} is not a number of seconds from 0 to {MAX_SECONDS}"
                ))
            }),
        }
    }
}

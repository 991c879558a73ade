//! When an event happened: [`EventTime`], milliseconds since the Unix epoch (UTC), written as
//! RFC 3339 with milliseconds (`2026-12-03T19:09:08.123Z`).
//!
//! The engine reads the clock once per event and keeps the number; the text is built only when
//! the event is written. Reading accepts any RFC 3339 date-time (`Z` or a numeric offset, any
//! number of fraction digits: kept to the millisecond), so an event written by another tool
//! reads back; a time before 1970 is refused.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A wall-clock instant, to the millisecond, UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventTime(u64);

impl EventTime {
    /// The instant `ms` milliseconds after 1970-01-01T00:00:00Z.
    pub const fn from_unix_ms(ms: u64) -> EventTime {
        EventTime(ms)
    }

    /// The system clock now (the epoch itself should the clock be set before it).
    pub fn now() -> EventTime {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        // Whole seconds and milliseconds, without `as_millis`'s 128-bit arithmetic (every event
        // reads the clock). u64 milliseconds last 584 million years.
        let ms = since
            .as_secs()
            .saturating_mul(1000)
            .saturating_add(u64::from(since.subsec_millis()));
        EventTime(ms)
    }

    /// Milliseconds since 1970-01-01T00:00:00Z.
    pub const fn unix_ms(self) -> u64 {
        self.0
    }

    /// Reads an RFC 3339 date-time (`YYYY-MM-DDTHH:MM:SS[.fff…](Z|±HH:MM)`; `t`, `z` and a space
    /// for `T` are accepted as RFC 3339 allows).
    pub fn parse(text: &str) -> Result<EventTime, EventTimeError> {
        parse_rfc3339(text.as_bytes()).ok_or_else(|| EventTimeError {
            text: text.chars().take(64).collect(),
        })
    }
}

/// A time that is not an RFC 3339 date-time at or after 1970-01-01T00:00:00Z.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{text}` is not an RFC 3339 UTC time such as 2026-12-03T19:09:08.123Z (at or after 1970)")]
pub struct EventTimeError {
    /// The text read (its first 64 characters).
    pub text: String,
}

/// How long an [`EventTime`]'s text is for the years 1970 to 9999 (`2026-12-03T19:09:08.123Z`).
pub const EVENT_TIME_LEN: usize = 24;

impl EventTime {
    /// The time's text as [`fmt::Display`] writes it, as bytes, for the years up to 9999
    /// (`None` after: their year takes more than four digits). No formatting machinery: a run
    /// writes one per event.
    pub fn rfc3339_bytes(self) -> Option<[u8; EVENT_TIME_LEN]> {
        let [y, m, d, h, min, s, ms] = self.fields();
        if y > 9999 {
            return None;
        }
        let mut out = *b"0000-00-00T00:00:00.000Z";
        let mut put = |at: usize, width: usize, mut n: u64| {
            for i in (at..at + width).rev() {
                // A digit: `n % 10` is below 10.
                out[i] = b'0' + (n % 10) as u8;
                n /= 10;
            }
        };
        put(0, 4, y);
        put(5, 2, m);
        put(8, 2, d);
        put(11, 2, h);
        put(14, 2, min);
        put(17, 2, s);
        put(20, 3, ms);
        Some(out)
    }

    /// Year, month, day, hour, minute, second and millisecond (UTC, proleptic Gregorian).
    fn fields(self) -> [u64; 7] {
        let ms = self.0;
        let secs = ms / 1000;
        let (days, rem) = (secs / 86_400, secs % 86_400);
        let (y, m, d) = civil_from_days(days);
        [y, m, d, rem / 3600, rem % 3600 / 60, rem % 60, ms % 1000]
    }
}

impl fmt::Display for EventTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [y, m, d, h, min, s, ms] = self.fields();
        write!(f, "{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{ms:03}Z")
    }
}

impl Serialize for EventTime {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for EventTime {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = EventTime;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an RFC 3339 time such as 2026-12-03T19:09:08.123Z")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<EventTime, E> {
                EventTime::parse(v).map_err(E::custom)
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

/// The proleptic Gregorian date `days` after 1970-01-01 (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

/// Days from 1970-01-01 to the proleptic Gregorian date (Hinnant's `days_from_civil`), for
/// years from 1970 (`None` before).
fn days_from_civil(y: u64, m: u64, d: u64) -> Option<u64> {
    let y = if m <= 2 { y.checked_sub(1)? } else { y };
    let era = y / 400;
    let yoe = y % 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    (era * 146_097 + doe).checked_sub(719_468)
}

fn digits(b: &[u8]) -> Option<u64> {
    b.iter().try_fold(0u64, |n, &c| {
        c.is_ascii_digit().then(|| n * 10 + u64::from(c - b'0'))
    })
}

fn days_in_month(y: u64, m: u64) -> u64 {
    match m {
        4 | 6 | 9 | 11 => 30,
        2 if y.is_multiple_of(4) && (!y.is_multiple_of(100) || y.is_multiple_of(400)) => 29,
        2 => 28,
        _ => 31,
    }
}

fn parse_rfc3339(b: &[u8]) -> Option<EventTime> {
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[13] != b':' || b[16] != b':' {
        return None;
    }
    if !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let (y, mo, d) = (digits(&b[0..4])?, digits(&b[5..7])?, digits(&b[8..10])?);
    let (h, mi, s) = (
        digits(&b[11..13])?,
        digits(&b[14..16])?,
        digits(&b[17..19])?,
    );
    if !(1..=12).contains(&mo) || d == 0 || d > days_in_month(y, mo) || h > 23 || mi > 59 {
        return None;
    }
    // 60: a leap second, which the Unix clock folds into the next.
    if s > 60 {
        return None;
    }
    let mut rest = &b[19..];
    let mut millis = 0;
    if let Some(fraction) = rest.strip_prefix(b".") {
        let n = fraction.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return None;
        }
        let kept = &fraction[..n.min(3)];
        millis = digits(kept)? * 10u64.pow(3 - kept.len() as u32);
        rest = &fraction[n..];
    }
    let offset_secs: i64 = match rest {
        [b'Z' | b'z'] => 0,
        [sign @ (b'+' | b'-'), oh @ .., b':', om1, om2] if oh.len() == 2 => {
            let (oh, om) = (digits(oh)?, digits(&[*om1, *om2])?);
            if oh > 23 || om > 59 {
                return None;
            }
            let secs = i64::try_from(oh * 3600 + om * 60).ok()?;
            if *sign == b'+' { secs } else { -secs }
        }
        _ => return None,
    };
    let local = days_from_civil(y, mo, d)? * 86_400 + h * 3600 + mi * 60 + s;
    let utc = i64::try_from(local).ok()?.checked_sub(offset_secs)?;
    let utc = u64::try_from(utc).ok()?;
    Some(EventTime(utc.checked_mul(1000)?.checked_add(millis)?))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap

    use super::*;

    #[test]
    fn times_are_written_as_utc_with_milliseconds() {
        let text = |ms| EventTime::from_unix_ms(ms).to_string();
        assert_eq!(text(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(text(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(text(1_735_689_599_999), "2024-12-31T23:59:59.999Z");
        assert_eq!(text(4_107_542_400_000), "2100-03-01T00:00:00.000Z");
    }

    #[test]
    fn the_time_bytes_are_the_displayed_text() {
        let step = 86_400_000 * 37 + 3_600_000 * 5 + 61_007;
        let mut ms = 0;
        while ms < 253_402_300_799_999 {
            let t = EventTime::from_unix_ms(ms);
            let bytes = t.rfc3339_bytes().unwrap();
            assert_eq!(std::str::from_utf8(&bytes).unwrap(), t.to_string());
            ms += step;
        }
        // The last millisecond of 9999 has its bytes; the year 10000 has none.
        let last = EventTime::from_unix_ms(253_402_300_799_999);
        assert_eq!(&last.rfc3339_bytes().unwrap(), b"9999-12-31T23:59:59.999Z");
        assert_eq!(
            EventTime::from_unix_ms(253_402_300_800_000).rfc3339_bytes(),
            None
        );
    }

    #[test]
    fn what_is_written_reads_back() {
        for ms in [0, 1, 951_782_400_123, 1_735_689_599_999, 4_107_542_400_000] {
            let t = EventTime::from_unix_ms(ms);
            assert_eq!(EventTime::parse(&t.to_string()), Ok(t));
        }
        // Every day of four years, at an odd hour.
        for day in 0..(4 * 366) {
            let t = EventTime::from_unix_ms(1_704_067_200_000 + day * 86_400_000 + 49_384_007);
            assert_eq!(EventTime::parse(&t.to_string()), Ok(t));
        }
    }

    #[test]
    fn other_rfc_3339_forms_read_as_the_same_instant() {
        let t = EventTime::parse("2026-12-03T19:09:08.123Z").unwrap();
        for same in [
            "2026-12-03T19:09:08.123456Z",
            "2026-12-03t19:09:08.1239z",
            "2026-12-03 20:09:08.123+01:00",
            "2026-12-03T14:39:08.123-04:30",
        ] {
            assert_eq!(EventTime::parse(same), Ok(t), "{same}");
        }
        assert_eq!(
            EventTime::parse("2026-12-03T19:09:08Z").unwrap().unix_ms() + 123,
            t.unix_ms()
        );
        assert_eq!(
            EventTime::parse("2026-12-03T19:09:08.5Z")
                .unwrap()
                .unix_ms()
                % 1000,
            500
        );
    }

    #[test]
    fn what_is_not_a_time_is_refused() {
        for bad in [
            "",
            "2026-12-03",
            "2026-12-03T19:09:08",
            "2026-12-03T19:09:08.Z",
            "2026-13-03T19:09:08Z",
            "2026-02-29T19:09:08Z",
            "2026-12-03T24:09:08Z",
            "2026-12-03T19:09:08+1:00",
            "2026-12-03T19:09:08.123Zjunk",
            "1969-12-31T23:59:59.999Z",
            "1970-01-01T00:30:00+01:00",
            "２026-12-03T19:09:08Z",
        ] {
            let e = EventTime::parse(bad).unwrap_err();
            assert!(e.to_string().contains("RFC 3339"), "{bad}: {e}");
        }
        assert!(EventTime::parse("2024-02-29T00:00:00Z").is_ok());
    }

    #[test]
    fn serde_writes_and_reads_the_text() {
        let t = EventTime::from_unix_ms(951_782_400_123);
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(json, "\"2000-02-29T00:00:00.123Z\"");
        assert_eq!(serde_json::from_str::<EventTime>(&json).unwrap(), t);
        let e = serde_json::from_str::<EventTime>("\"yesterday\"").unwrap_err();
        assert!(e.to_string().contains("RFC 3339"), "{e}");
        assert!(serde_json::from_str::<EventTime>("12").is_err());
    }
}

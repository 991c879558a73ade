//! Status timestamps (RFC 3339), decoded without chrono's general parser when they take the
//! shape A2A SDKs write: `2026-11-30T16:07:26.080042Z`, or with a `±hh:mm` offset.
//!
//! `a2a-lf` decodes `TaskStatus.timestamp` with chrono's `DateTime<FixedOffset>::from_str` (a
//! relaxed RFC 3339 parser: about 2,000 instructions per timestamp, two per streamed task). The
//! fast path here reads the one common shape in a single pass; every other string — lowercase
//! separators, a space instead of `T`, leap seconds, more than nine fraction digits, anything
//! invalid — goes to that same chrono parser, so what is accepted, rejected and produced stays
//! chrono's. `tests::the_fast_path_agrees_with_chrono` holds the two together.

use chrono::{DateTime, FixedOffset, NaiveDate, TimeZone, Utc};
use serde::de::{self, Deserializer, Visitor};
use std::fmt;

/// Parses `s` exactly like `a2a-lf` does (chrono, then converted to UTC).
pub(super) fn parse(s: &str) -> Result<DateTime<Utc>, chrono::ParseError> {
    match common_shape(s.as_bytes()) {
        Some(t) => Ok(t),
        None => s
            .parse::<DateTime<FixedOffset>>()
            .map(|t| t.with_timezone(&Utc)),
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.f{1,9}](Z|±HH:MM)` with a valid date and time; `None` for anything
/// else, which the caller hands to chrono.
fn common_shape(b: &[u8]) -> Option<DateTime<Utc>> {
    let (head, rest) = b.split_at_checked(19)?;
    let [
        y0,
        y1,
        y2,
        y3,
        b'-',
        m0,
        m1,
        b'-',
        d0,
        d1,
        b'T',
        h0,
        h1,
        b':',
        i0,
        i1,
        b':',
        s0,
        s1,
    ] = *head
    else {
        return None;
    };
    let year = number(&[y0, y1, y2, y3])?;
    let (month, day) = (number(&[m0, m1])?, number(&[d0, d1])?);
    let (hour, minute, second) = (number(&[h0, h1])?, number(&[i0, i1])?, number(&[s0, s1])?);
    let (nanos, zone) = match rest {
        [b'.', tail @ ..] => {
            let n = tail.iter().take_while(|c| c.is_ascii_digit()).count();
            if !(1..=9).contains(&n) {
                return None;
            }
            let (digits, zone) = tail.split_at(n);
            // n ≤ 9, so the scale is at most 10^8 and the product below 10^9.
            (number(digits)? * 10u32.pow(9 - n as u32), zone)
        }
        _ => (0, rest),
    };
    let offset = match *zone {
        [b'Z'] => 0,
        [sign @ (b'+' | b'-'), h0, h1, b':', m0, m1] => {
            let (h, m) = (number(&[h0, h1])?, number(&[m0, m1])?);
            if h > 23 || m > 59 {
                return None;
            }
            let seconds = i32::try_from(h * 3600 + m * 60).ok()?;
            if sign == b'-' { -seconds } else { seconds }
        }
        _ => return None,
    };
    if hour > 23 || minute > 59 || second > 59 {
        return None;
    }
    let local = NaiveDate::from_ymd_opt(i32::try_from(year).ok()?, month, day)?
        .and_hms_nano_opt(hour, minute, second, nanos)?;
    FixedOffset::east_opt(offset)?
        .from_local_datetime(&local)
        .single()
        .map(|t| t.with_timezone(&Utc))
}

/// The value of up to nine ASCII digits; `None` if any byte is not a digit.
fn number(digits: &[u8]) -> Option<u32> {
    digits.iter().try_fold(0u32, |acc, &c| {
        c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0'))
    })
}

/// `#[serde(deserialize_with)]` for an optional timestamp: `null` or absent is `None`, a string
/// is parsed by [`parse`], anything else is an error (as with chrono's own `Deserialize`).
pub(super) fn optional<'de, D: Deserializer<'de>>(d: D) -> Result<Option<DateTime<Utc>>, D::Error> {
    d.deserialize_option(OptionalTimestamp)
}

struct OptionalTimestamp;

impl<'de> Visitor<'de> for OptionalTimestamp {
    type Value = Option<DateTime<Utc>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an RFC 3339 timestamp or null")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
        parse(s).map(Some).map_err(E::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn chrono(s: &str) -> Option<DateTime<Utc>> {
        s.parse::<DateTime<FixedOffset>>()
            .ok()
            .map(|t| t.with_timezone(&Utc))
    }

    #[test]
    fn the_sdk_shapes_take_the_fast_path() {
        for s in [
            "2026-11-30T16:07:26.080042Z",
            "2026-11-30T03:19:07.161560+00:00",
            "2024-02-29T23:59:59Z",
            "0001-01-01T00:00:00.1-23:59",
        ] {
            let fast = common_shape(s.as_bytes());
            assert!(fast.is_some(), "{s}");
            assert_eq!(fast, chrono(s), "{s}");
        }
    }

    #[test]
    fn every_fraction_length_scales_like_chrono() {
        for n in 1..=9 {
            let s = format!("2026-11-30T16:07:26.{}Z", &"123456789"[..n]);
            let fast = common_shape(s.as_bytes());
            assert!(fast.is_some(), "{s}");
            assert_eq!(fast, chrono(&s), "{s}");
        }
    }

    #[test]
    fn other_shapes_go_to_chrono() {
        for s in [
            "2026-11-30t16:07:26Z",
            "2026-11-30 16:07:26Z",
            "2026-11-30T16:07:26z",
            "2016-12-31T23:59:60Z",
            "2026-11-30T16:07:26.1234567891Z",
            "2026-11-30T16:07:26.Z",
            "2026-02-30T16:07:26Z",
            "2026-11-30T24:00:00Z",
            "2026-11-30T16:07:26+24:00",
            "2026-11-30T16:07:26",
            "２026-11-30T16:07:26Z",
            "",
        ] {
            assert_eq!(common_shape(s.as_bytes()), None, "{s}");
            assert_eq!(parse(s).ok(), chrono(s), "{s}");
        }
    }

    #[test]
    fn decodes_like_chrono_serde() {
        #[derive(serde::Deserialize)]
        struct Lean(#[serde(deserialize_with = "optional")] Option<DateTime<Utc>>);
        #[derive(serde::Deserialize)]
        struct Reference(Option<DateTime<Utc>>);
        for json in [
            r#""2026-11-30T16:07:26.080042Z""#,
            r#""2026-11-30 16:07:26+01:00""#,
            "null",
            r#""not a time""#,
            "17",
        ] {
            let lean = serde_json::from_str::<Lean>(json).map(|l| l.0).ok();
            let reference = serde_json::from_str::<Reference>(json).map(|r| r.0).ok();
            assert_eq!(lean, reference, "{json}");
        }
    }

    proptest! {
        /// Strings built around the common shape, valid or not: the fast path either declines
        /// or gives chrono's value, and `parse` always gives chrono's answer.
        #[test]
        fn the_fast_path_agrees_with_chrono(
            year in 0u32..10_000, month in 0u32..14, day in 0u32..33,
            hour in 0u32..26, minute in 0u32..62, second in 0u32..62,
            fraction in proptest::option::weighted(0.8, "[0-9]{0,11}"),
            zone in prop_oneof![
                4 => Just("Z".to_string()),
                1 => Just("z".to_string()),
                1 => Just(String::new()),
                4 => (prop_oneof![Just('+'), Just('-')], 0u32..26, 0u32..62)
                    .prop_map(|(s, h, m)| format!("{s}{h:02}:{m:02}")),
            ],
            sep in prop_oneof![8 => Just('T'), 1 => Just('t'), 1 => Just(' ')],
        ) {
            let fraction = fraction.map(|f| format!(".{f}")).unwrap_or_default();
            let s = format!(
                "{year:04}-{month:02}-{day:02}{sep}{hour:02}:{minute:02}:{second:02}{fraction}{zone}"
            );
            let reference = chrono(&s);
            if let Some(fast) = common_shape(s.as_bytes()) {
                prop_assert_eq!(Some(fast), reference, "{}", s);
            }
            prop_assert_eq!(parse(&s).ok(), reference, "{}", s);
        }
    }
}

//! RFC 3339 UTC timestamps with microseconds, as the Python SDK emits them.

use std::time::{SystemTime, UNIX_EPOCH};

/// The current time as `YYYY-MM-DDTHH:MM:SS.ffffffZ`.
pub(crate) fn now_rfc3339() -> String {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    format_unix_micros(since.as_secs(), since.subsec_micros())
}

/// Formats seconds since the Unix epoch plus microseconds as an RFC 3339 UTC timestamp.
pub(crate) fn format_unix_micros(secs: u64, micros: u32) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to a proleptic Gregorian (year, month, day).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_known_instants() {
        assert_eq!(format_unix_micros(0, 0), "1970-01-01T00:00:00.000000Z");
        // 2026-11-30T03:07:45.744068Z
        assert_eq!(
            format_unix_micros(1_796_008_065, 744_068),
            "2026-11-30T03:07:45.744068Z"
        );
        // leap day 2024-02-29T12:00:00Z
        assert_eq!(
            format_unix_micros(1_709_208_000, 1),
            "2024-02-29T12:00:00.000001Z"
        );
    }
}

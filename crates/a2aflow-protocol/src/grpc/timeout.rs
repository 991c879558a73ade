//! The `grpc-timeout` header of a call, written straight into the call's metadata: the same
//! value tonic's `Request::set_timeout` writes (the most precise unit whose count fits the
//! spec's 8 digits), without its `format!` of a `u128`, its parse of the string back and its
//! second map insert on every call.

use std::time::Duration;

use http::{HeaderName, HeaderValue};

/// The header's name.
pub(super) const GRPC_TIMEOUT: HeaderName = HeaderName::from_static("grpc-timeout");

/// The largest count the spec allows (8 digits).
const MAX_COUNT: u128 = 99_999_999;

/// The header's value for `budget`.
pub(super) fn grpc_timeout(budget: Duration) -> HeaderValue {
    let secs = u128::from(budget.as_secs());
    let units: [(u128, u8); 6] = [
        (budget.as_nanos(), b'n'),
        (budget.as_micros(), b'u'),
        (budget.as_millis(), b'm'),
        (secs, b'S'),
        (secs / 60, b'M'),
        (secs / 3600, b'H'),
    ];
    // `secs / 3600` of a `Duration` (at most u64::MAX seconds) is ≈ 5.1e15: more than 8 digits
    // only for a budget of more than 11,415 years, which is then capped at the largest count.
    let (count, unit) = units
        .into_iter()
        .find(|(count, _)| *count <= MAX_COUNT)
        .unwrap_or((MAX_COUNT, b'H'));
    // At most 8 digits and the unit.
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(count).as_bytes();
    let mut text = [0u8; 9];
    // `count` is at most `MAX_COUNT`, 8 digits: with the unit it fills at most the 9 bytes.
    let len = digits.len().min(8);
    text[..len].copy_from_slice(&digits[..len]);
    text[len] = unit;
    match HeaderValue::from_bytes(&text[..=len]) {
        Ok(value) => value,
        // Digits and an ASCII letter are always a valid header value.
        Err(_) => HeaderValue::from_static("99999999H"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value tonic's own `set_timeout` writes.
    fn tonic_value(budget: Duration) -> String {
        let mut request = tonic::Request::new(());
        request.set_timeout(budget);
        request
            .metadata()
            .get("grpc-timeout")
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned()
    }

    #[test]
    fn the_value_is_tonics_for_every_unit() {
        let budgets = [
            Duration::ZERO,
            Duration::from_nanos(1),
            Duration::from_nanos(99_999_999),
            Duration::from_nanos(100_000_000),
            Duration::from_millis(500),
            Duration::from_secs(1),
            Duration::from_secs(30),
            Duration::from_secs(120),
            Duration::new(7, 123_456_789),
            Duration::from_secs(3_600),
            Duration::from_secs(99_999),
            Duration::from_secs(100_000_000),
            Duration::from_secs(99_999_999 * 60),
            Duration::from_secs(99_999_999 * 60 + 60),
            Duration::from_secs(99_999_999 * 3_600),
        ];
        for budget in budgets {
            assert_eq!(
                grpc_timeout(budget).to_str().unwrap(),
                tonic_value(budget),
                "{budget:?}"
            );
        }
    }

    #[test]
    fn a_budget_beyond_eight_digits_of_hours_is_capped() {
        assert_eq!(grpc_timeout(Duration::MAX), "99999999H");
    }
}

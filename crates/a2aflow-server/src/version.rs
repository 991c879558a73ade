//! The `A2A-Version` rule of the official Python SDK: a missing header means `0.3`; a version
//! whose major is 1 is served; anything else is refused with `VERSION_NOT_SUPPORTED`. The
//! query-parameter form is ignored, as the SDK ignores it.

use crate::wire_error::A2aError;

/// Checks the request's `A2A-Version` header.
pub(crate) fn check_version(headers: &http::HeaderMap) -> Result<(), A2aError> {
    let received = headers
        .get("a2a-version")
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .unwrap_or("0.3");
    let major = received.split('.').next().unwrap_or("");
    if major.parse::<u32>() == Ok(1) {
        Ok(())
    } else {
        Err(A2aError::version(received))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: Option<&str>) -> Result<(), String> {
        let mut headers = http::HeaderMap::new();
        if let Some(v) = value
            && let Ok(v) = http::HeaderValue::from_str(v)
        {
            headers.insert("a2a-version", v);
        }
        check_version(&headers).map_err(|e| e.message)
    }

    #[test]
    fn major_one_is_served_and_missing_means_0_3() {
        for ok in ["1.0", "1", "1.5"] {
            assert_eq!(with(Some(ok)), Ok(()), "{ok}");
        }
        assert_eq!(
            with(None),
            Err(
                "A2A version '0.3' is not supported by this handler. Expected version '1.0'."
                    .to_owned()
            )
        );
        for bad in ["0.3", "2.0", "garbage"] {
            assert!(with(Some(bad)).is_err(), "{bad}");
        }
    }
}

//! The A2A-T extension URIs, the metadata keys that sit beside them, and URI normalisation.
//!
//! Every A2A-T extension is identified by one canonical URI (version `v1`). The Negotiation-T
//! extension also has a legacy "NL" spelling that peers may still send: it is accepted wherever a
//! URI is read ([`normalize_extension_uri`], [`Extension::from_uri`]) and never emitted.

/// The common prefix of every A2A-T extension URI.
pub const EXTENSION_BASE: &str =
    "https://projects.tmforum.org/a2aproject/telecommunication/extensions/";

/// Task-T: a telecom task request (canonical URI).
pub const TASK_T_EXTENSION_URI: &str =
    "https://projects.tmforum.org/a2aproject/telecommunication/extensions/Task-T/v1";

/// Negotiation-T: negotiation proposals and replies (canonical URI, the only one ever emitted).
pub const NEGOTIATION_T_EXTENSION_URI: &str =
    "https://projects.tmforum.org/a2aproject/telecommunication/extensions/Negotiation-T/v1";

/// The legacy Negotiation-T spelling: accepted on read, normalised to
/// [`NEGOTIATION_T_EXTENSION_URI`], never emitted.
pub const NEGOTIATION_T_EXTENSION_URI_NL: &str =
    "https://projects.tmforum.org/a2aproject/telecommunication/extensions/Negotiation-T/NL/v1";

/// Authorization-T: one-shot authorization policy operations (canonical URI).
pub const AUTHORIZATION_T_EXTENSION_URI: &str =
    "https://projects.tmforum.org/a2aproject/telecommunication/extensions/Authorization-T/v1";

/// Notification-T: long-lived notification subscriptions (canonical URI).
pub const NOTIFICATION_T_EXTENSION_URI: &str =
    "https://projects.tmforum.org/a2aproject/telecommunication/extensions/Notification-T/v1";

/// Metadata key holding the template URI (`"Task-T/network-layer/.../v1"`) of the content.
pub const TEMPLATE_URI_KEY: &str = "templateUri";

/// Metadata key holding the Negotiation-T context object.
pub const NEGOTIATION_CONTEXT_KEY: &str = "negotiationContext";

/// The HTTP header listing the extension URIs a request activates (comma-separated).
pub const A2A_EXTENSIONS_HEADER: &str = "A2A-Extensions";

/// One of the four A2A-T extensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Extension {
    /// Task-T.
    TaskT,
    /// Negotiation-T.
    NegotiationT,
    /// Authorization-T.
    AuthorizationT,
    /// Notification-T.
    NotificationT,
}

impl Extension {
    /// All four extensions.
    pub const ALL: [Extension; 4] = [
        Extension::TaskT,
        Extension::NegotiationT,
        Extension::AuthorizationT,
        Extension::NotificationT,
    ];

    /// The canonical URI (the one to emit).
    pub const fn uri(self) -> &'static str {
        match self {
            Extension::TaskT => TASK_T_EXTENSION_URI,
            Extension::NegotiationT => NEGOTIATION_T_EXTENSION_URI,
            Extension::AuthorizationT => AUTHORIZATION_T_EXTENSION_URI,
            Extension::NotificationT => NOTIFICATION_T_EXTENSION_URI,
        }
    }

    /// The family name used as first segment of template URIs (`"Task-T"`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Extension::TaskT => "Task-T",
            Extension::NegotiationT => "Negotiation-T",
            Extension::AuthorizationT => "Authorization-T",
            Extension::NotificationT => "Notification-T",
        }
    }

    /// The extension a URI names: exact match on a canonical URI, or the Negotiation-T NL alias.
    /// Anything else (other versions, other casing, foreign spellings) is `None`.
    pub fn from_uri(uri: &str) -> Option<Self> {
        match uri {
            TASK_T_EXTENSION_URI => Some(Extension::TaskT),
            NEGOTIATION_T_EXTENSION_URI | NEGOTIATION_T_EXTENSION_URI_NL => {
                Some(Extension::NegotiationT)
            }
            AUTHORIZATION_T_EXTENSION_URI => Some(Extension::AuthorizationT),
            NOTIFICATION_T_EXTENSION_URI => Some(Extension::NotificationT),
            _ => None,
        }
    }
}

/// Maps the Negotiation-T NL alias to the canonical Negotiation-T URI; every other string is
/// returned unchanged. Use it on every URI read from a peer before comparing or re-emitting it.
pub fn normalize_extension_uri(uri: &str) -> &str {
    if uri == NEGOTIATION_T_EXTENSION_URI_NL {
        NEGOTIATION_T_EXTENSION_URI
    } else {
        uri
    }
}

/// The extension family named by a URI under [`EXTENSION_BASE`]: its first path segment
/// (`".../Negotiation-T/NL/v1"` → `"Negotiation-T"`, `".../NEGOTIATION-T"` → `"NEGOTIATION-T"`).
/// `None` for URIs outside the base (including `http://`) or with an empty first segment.
/// This is the lenient observability reading; use [`Extension::from_uri`] for decisions.
pub fn extension_name_from_uri(uri: &str) -> Option<&str> {
    let rest = uri.strip_prefix(EXTENSION_BASE)?;
    let name = rest.split('/').next().unwrap_or_default();
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_uri_is_exact_and_accepts_only_the_negotiation_alias() {
        for e in Extension::ALL {
            assert_eq!(Extension::from_uri(e.uri()), Some(e));
            assert_eq!(extension_name_from_uri(e.uri()), Some(e.name()));
        }
        assert_eq!(
            Extension::from_uri(NEGOTIATION_T_EXTENSION_URI_NL),
            Some(Extension::NegotiationT)
        );
        assert_eq!(
            Extension::from_uri(
                "https://projects.tmforum.org/a2aproject/telecommunication/extensions/Task-T/NL/v1"
            ),
            None
        );
        assert_eq!(
            Extension::from_uri(&TASK_T_EXTENSION_URI.to_uppercase()),
            None
        );
    }

    #[test]
    fn normalisation_rewrites_only_the_alias() {
        assert_eq!(
            normalize_extension_uri(NEGOTIATION_T_EXTENSION_URI_NL),
            NEGOTIATION_T_EXTENSION_URI
        );
        assert_eq!(
            normalize_extension_uri(TASK_T_EXTENSION_URI),
            TASK_T_EXTENSION_URI
        );
        assert_eq!(normalize_extension_uri("urn:x"), "urn:x");
    }

    #[test]
    fn extension_name_needs_the_base_and_a_segment() {
        assert_eq!(extension_name_from_uri(EXTENSION_BASE), None);
        assert_eq!(extension_name_from_uri("templateUri"), None);
        assert_eq!(
            extension_name_from_uri(&format!("{EXTENSION_BASE}X")),
            Some("X")
        );
    }
}

//! Which extensions a message activates, and what goes into `message.extensions` and the
//! `A2A-Extensions` header.
//!
//! Three words, used precisely:
//! - content **activates** a URI when the URI is in its `extensions` list;
//! - content **carries** a URI when the URI is a key of its metadata;
//! - content **uses** a URI when it does both.
//!
//! A card declaration alone never activates anything. All comparisons normalise the
//! Negotiation-T NL alias to the canonical URI, and only canonical URIs are emitted.

use serde_json::{Map, Value};

use crate::uri::{
    Extension, NEGOTIATION_T_EXTENSION_URI, NEGOTIATION_T_EXTENSION_URI_NL, normalize_extension_uri,
};

/// One extension an agent card declares (`capabilities.extensions[]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DeclaredExtension<'a> {
    /// The extension URI.
    pub uri: &'a str,
    /// Whether the agent requires every request to activate it.
    pub required: bool,
}

/// Why the extensions of outgoing content do not fit the target's card.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ActivationError {
    /// The card marks an extension required and the content does not activate it.
    #[error("Required extension not activated: {uri}")]
    RequiredNotActivated {
        /// The required URI (as the card spells it).
        uri: String,
    },
    /// An independent operation needs the card to declare the URI and the content to use it.
    #[error("Target capability and content must use {uri}")]
    NotUsed {
        /// The URI the operation needs.
        uri: String,
    },
    /// The content activates an A2A-T extension (or an operation needs one) the card does not
    /// declare.
    #[error("Target agent does not declare {name}")]
    NotDeclared {
        /// The canonical URI.
        uri: String,
        /// The extension's family name (`Authorization-T`, …), or the URI for a foreign one.
        name: String,
    },
}

/// A view of the extension-related parts of one message content: its `extensions` list and
/// its metadata.
#[derive(Clone, Copy, Debug)]
pub struct ContentExtensions<'a> {
    extensions: &'a [String],
    metadata: Option<&'a Map<String, Value>>,
}

impl<'a> ContentExtensions<'a> {
    /// A view over a content's `extensions` list and metadata.
    pub fn new(extensions: &'a [String], metadata: Option<&'a Map<String, Value>>) -> Self {
        ContentExtensions {
            extensions,
            metadata,
        }
    }

    /// `uri` is in the `extensions` list.
    pub fn activates(&self, uri: &str) -> bool {
        let uri = normalize_extension_uri(uri);
        self.extensions
            .iter()
            .any(|e| normalize_extension_uri(e) == uri)
    }

    /// `uri` is a metadata key (for Negotiation-T, the NL alias key counts too).
    pub fn carries(&self, uri: &str) -> bool {
        self.metadata.is_some_and(|m| metadata_carries(m, uri))
    }

    /// `uri` is both activated and carried.
    pub fn uses(&self, uri: &str) -> bool {
        self.activates(uri) && self.carries(uri)
    }
}

/// `uri` is a key of `metadata` (for Negotiation-T, the NL alias key counts too). Use it on each
/// metadata layer of a response to see whether the peer sent Negotiation-T content at all.
pub fn metadata_carries(metadata: &Map<String, Value>, uri: &str) -> bool {
    let uri = normalize_extension_uri(uri);
    metadata.contains_key(uri)
        || (uri == NEGOTIATION_T_EXTENSION_URI
            && metadata.contains_key(NEGOTIATION_T_EXTENSION_URI_NL))
}

/// `declared` contains `uri` (alias-normalised).
pub fn declares(declared: &[DeclaredExtension<'_>], uri: &str) -> bool {
    let uri = normalize_extension_uri(uri);
    declared
        .iter()
        .any(|d| normalize_extension_uri(d.uri) == uri)
}

/// What to put on the wire for one outgoing message.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct ExtensionPlan {
    /// `message.extensions`: the content's activated URIs, canonical, duplicates removed, in the
    /// content's order.
    pub message_extensions: Vec<String>,
    /// The `A2A-Extensions` header's URIs: the card-declared URIs the content activates or
    /// carries, canonical, sorted, duplicates removed; empty when there are none. They stay a
    /// list until the transport writes the header.
    pub header: Vec<String>,
}

/// Computes [`ExtensionPlan`] for sending `content` to an agent whose card declares `declared`.
/// Fails with [`ActivationError::RequiredNotActivated`] (the first such URI, in card order) when
/// the card requires an extension the content does not activate.
pub fn plan_extensions(
    declared: &[DeclaredExtension<'_>],
    content: ContentExtensions<'_>,
) -> Result<ExtensionPlan, ActivationError> {
    if let Some(missing) = declared
        .iter()
        .find(|d| d.required && !content.activates(d.uri))
    {
        return Err(ActivationError::RequiredNotActivated {
            uri: missing.uri.to_owned(),
        });
    }
    let mut message_extensions: Vec<String> = Vec::with_capacity(content.extensions.len());
    for uri in content
        .extensions
        .iter()
        .map(|e| normalize_extension_uri(e))
    {
        if !message_extensions.iter().any(|e| e == uri) {
            message_extensions.push(uri.to_owned());
        }
    }
    let mut header_uris: Vec<&str> = declared
        .iter()
        .map(|d| normalize_extension_uri(d.uri))
        .filter(|uri| content.activates(uri) || content.carries(uri))
        .collect();
    header_uris.sort_unstable();
    header_uris.dedup();
    Ok(ExtensionPlan {
        message_extensions,
        header: header_uris.into_iter().map(str::to_owned).collect(),
    })
}

/// The one check and plan of outgoing content for an agent whose card declares `declared`, for
/// the workflow client and the independent operations alike:
/// 1. for an independent operation (`operation` is its URI), the card declares it
///    ([`ActivationError::NotDeclared`]) and the content uses it ([`ActivationError::NotUsed`]);
/// 2. every A2A-T extension the content activates is declared ([`ActivationError::NotDeclared`],
///    the first in content order);
/// 3. [`plan_extensions`] ([`ActivationError::RequiredNotActivated`]).
pub fn activate(
    declared: &[DeclaredExtension<'_>],
    content: ContentExtensions<'_>,
    operation: Option<&str>,
) -> Result<ExtensionPlan, ActivationError> {
    if let Some(uri) = operation {
        if !declares(declared, uri) {
            return Err(not_declared(uri));
        }
        require_use(declared, content, uri)?;
    }
    if let Some(uri) = content
        .extensions
        .iter()
        .find(|uri| Extension::from_uri(uri).is_some() && !declares(declared, uri))
    {
        return Err(not_declared(uri));
    }
    plan_extensions(declared, content)
}

fn not_declared(uri: &str) -> ActivationError {
    let uri = normalize_extension_uri(uri);
    ActivationError::NotDeclared {
        uri: uri.to_owned(),
        name: Extension::from_uri(uri).map_or_else(|| uri.to_owned(), |e| e.name().to_owned()),
    }
}

/// The check of an independent operation (Authorization-T, Notification-T): the card declares
/// `uri` and the content uses it (activates and carries it).
pub fn require_use(
    declared: &[DeclaredExtension<'_>],
    content: ContentExtensions<'_>,
    uri: &str,
) -> Result<(), ActivationError> {
    if declares(declared, uri) && content.uses(uri) {
        Ok(())
    } else {
        Err(ActivationError::NotUsed {
            uri: normalize_extension_uri(uri).to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::uri::{
        AUTHORIZATION_T_EXTENSION_URI, NOTIFICATION_T_EXTENSION_URI, TASK_T_EXTENSION_URI,
    };
    use serde_json::json;

    fn md(keys: &[&str]) -> Map<String, Value> {
        keys.iter().map(|k| ((*k).to_owned(), json!("x"))).collect()
    }

    #[test]
    fn task_t_with_negotiation_allowed() {
        // Reference example (a): Task-T metadata, both URIs activated, no Negotiation-T metadata.
        let declared = [
            DeclaredExtension {
                uri: TASK_T_EXTENSION_URI,
                required: true,
            },
            DeclaredExtension {
                uri: NEGOTIATION_T_EXTENSION_URI,
                required: false,
            },
            DeclaredExtension {
                uri: NOTIFICATION_T_EXTENSION_URI,
                required: false,
            },
        ];
        let ext = vec![
            TASK_T_EXTENSION_URI.to_owned(),
            NEGOTIATION_T_EXTENSION_URI.to_owned(),
        ];
        let metadata = md(&[TASK_T_EXTENSION_URI, "templateUri"]);
        let content = ContentExtensions::new(&ext, Some(&metadata));
        assert!(content.activates(NEGOTIATION_T_EXTENSION_URI));
        assert!(!content.carries(NEGOTIATION_T_EXTENSION_URI));
        assert!(content.uses(TASK_T_EXTENSION_URI));
        let plan = plan_extensions(&declared, content).expect("required Task-T is activated");
        assert_eq!(plan.message_extensions, ext);
        assert_eq!(
            plan.header,
            [NEGOTIATION_T_EXTENSION_URI, TASK_T_EXTENSION_URI]
        );
    }

    #[test]
    fn required_but_not_activated_is_an_error_even_when_carried() {
        let declared = [
            DeclaredExtension {
                uri: NOTIFICATION_T_EXTENSION_URI,
                required: false,
            },
            DeclaredExtension {
                uri: TASK_T_EXTENSION_URI,
                required: true,
            },
        ];
        let metadata = md(&[TASK_T_EXTENSION_URI]);
        let err = plan_extensions(&declared, ContentExtensions::new(&[], Some(&metadata)));
        assert_eq!(
            err.map_err(|e| e.to_string()),
            Err(format!(
                "Required extension not activated: {TASK_T_EXTENSION_URI}"
            ))
        );
    }

    #[test]
    fn header_lists_only_declared_and_normalises_the_alias() {
        let declared = [
            DeclaredExtension {
                uri: NEGOTIATION_T_EXTENSION_URI_NL,
                required: true,
            },
            DeclaredExtension {
                uri: AUTHORIZATION_T_EXTENSION_URI,
                required: false,
            },
        ];
        // Activated twice (alias + canonical), carried Authorization-T only as metadata,
        // Task-T activated but undeclared.
        let ext = vec![
            NEGOTIATION_T_EXTENSION_URI_NL.to_owned(),
            TASK_T_EXTENSION_URI.to_owned(),
            NEGOTIATION_T_EXTENSION_URI.to_owned(),
        ];
        let metadata = md(&[AUTHORIZATION_T_EXTENSION_URI]);
        let plan = plan_extensions(&declared, ContentExtensions::new(&ext, Some(&metadata)))
            .expect("alias satisfies the required declaration");
        assert_eq!(
            plan.message_extensions,
            vec![
                NEGOTIATION_T_EXTENSION_URI.to_owned(),
                TASK_T_EXTENSION_URI.to_owned()
            ]
        );
        assert_eq!(
            plan.header,
            [AUTHORIZATION_T_EXTENSION_URI, NEGOTIATION_T_EXTENSION_URI]
        );
        let plain = plan_extensions(&[], ContentExtensions::new(&[], None)).expect("plain");
        assert_eq!(plain, ExtensionPlan::default());
    }

    #[test]
    fn carrying_accepts_the_alias_key_only_for_negotiation() {
        let alias = md(&[NEGOTIATION_T_EXTENSION_URI_NL]);
        assert!(metadata_carries(&alias, NEGOTIATION_T_EXTENSION_URI));
        assert!(metadata_carries(&alias, NEGOTIATION_T_EXTENSION_URI_NL));
        assert!(!metadata_carries(&alias, TASK_T_EXTENSION_URI));
        assert!(!ContentExtensions::new(&[], None).carries(NEGOTIATION_T_EXTENSION_URI));
    }

    #[test]
    fn independent_operations_need_declaration_activation_and_metadata() {
        let uri = AUTHORIZATION_T_EXTENSION_URI;
        let declared = [DeclaredExtension {
            uri,
            required: false,
        }];
        let ext = vec![uri.to_owned()];
        let metadata = md(&[uri]);
        assert_eq!(
            require_use(
                &declared,
                ContentExtensions::new(&ext, Some(&metadata)),
                uri
            ),
            Ok(())
        );
        let not_used = Err(ActivationError::NotUsed {
            uri: uri.to_owned(),
        });
        assert_eq!(
            require_use(&[], ContentExtensions::new(&ext, Some(&metadata)), uri),
            not_used
        );
        assert_eq!(
            require_use(&declared, ContentExtensions::new(&[], Some(&metadata)), uri),
            not_used
        );
        assert_eq!(
            require_use(&declared, ContentExtensions::new(&ext, None), uri),
            not_used
        );
        assert_eq!(
            not_used.map_err(|e| e.to_string()),
            Err(format!("Target capability and content must use {uri}"))
        );
    }

    #[test]
    fn activate_is_the_one_check_for_workflow_sends_and_operations() {
        let declared = [DeclaredExtension {
            uri: AUTHORIZATION_T_EXTENSION_URI,
            required: false,
        }];
        let auth = vec![AUTHORIZATION_T_EXTENSION_URI.to_owned()];
        let metadata = md(&[AUTHORIZATION_T_EXTENSION_URI]);
        let used = ContentExtensions::new(&auth, Some(&metadata));
        let plan = activate(&declared, used, Some(AUTHORIZATION_T_EXTENSION_URI)).expect("used");
        assert_eq!(plan.header, [AUTHORIZATION_T_EXTENSION_URI]);
        // The operation's URI undeclared, then declared but not used.
        let err = activate(&[], used, Some(AUTHORIZATION_T_EXTENSION_URI)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Target agent does not declare Authorization-T"
        );
        let err = activate(
            &declared,
            ContentExtensions::new(&auth, None),
            Some(AUTHORIZATION_T_EXTENSION_URI),
        );
        assert!(matches!(err, Err(ActivationError::NotUsed { .. })));
        // An activated A2A-T extension the card does not declare, for both kinds of send; a
        // foreign URI is not A2A-T's business.
        let also_task = vec![
            AUTHORIZATION_T_EXTENSION_URI.to_owned(),
            "urn:other".to_owned(),
            TASK_T_EXTENSION_URI.to_owned(),
        ];
        let content = ContentExtensions::new(&also_task, Some(&metadata));
        for operation in [None, Some(AUTHORIZATION_T_EXTENSION_URI)] {
            assert_eq!(
                activate(&declared, content, operation),
                Err(ActivationError::NotDeclared {
                    uri: TASK_T_EXTENSION_URI.to_owned(),
                    name: "Task-T".to_owned(),
                })
            );
        }
    }
}

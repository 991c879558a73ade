//! `templateUri` values (`"<Extension>/<path>/.../<version>"`) and the Negotiation-T template
//! addressing rules (which template answers which performative).
//!
//! Parsing borrows the input: a [`TemplateUri`] is a checked view, not a copy.

use crate::context::Performative;

/// A parsed template URI such as `Task-T/network-layer/ran-energy-saving/v1`: at least three
/// `/`-separated segments, each non-blank and free of `\` and `..`. Surrounding whitespace of the
/// input is ignored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TemplateUri<'a> {
    /// The trimmed input.
    raw: &'a str,
    /// Byte index of the first `/`.
    first_slash: usize,
    /// Byte index of the last `/`.
    last_slash: usize,
}

impl<'a> TemplateUri<'a> {
    /// Parses a template URI; `None` if it has fewer than three segments or any segment is blank
    /// or contains `\` or `..`.
    pub fn parse(input: &'a str) -> Option<Self> {
        let raw = input.trim();
        let first_slash = raw.find('/')?;
        let last_slash = raw.rfind('/')?;
        if first_slash == last_slash {
            return None;
        }
        let simple = |s: &str| !s.trim().is_empty() && !s.contains('\\') && !s.contains("..");
        if !raw.split('/').all(simple) {
            return None;
        }
        Some(TemplateUri {
            raw,
            first_slash,
            last_slash,
        })
    }

    /// The whole URI (trimmed).
    pub fn as_str(&self) -> &'a str {
        self.raw
    }

    /// The first segment, e.g. `"Task-T"`.
    pub fn extension_name(&self) -> &'a str {
        &self.raw[..self.first_slash]
    }

    /// The middle segments joined by `/`, e.g. `"network-layer/ran-energy-saving"`.
    pub fn path(&self) -> &'a str {
        &self.raw[self.first_slash + 1..self.last_slash]
    }

    /// The middle segments, in order (at least one).
    pub fn path_segments(&self) -> impl Iterator<Item = &'a str> + use<'a> {
        self.path().split('/')
    }

    /// The last segment, e.g. `"v1"`.
    pub fn version(&self) -> &'a str {
        &self.raw[self.last_slash + 1..]
    }
}

/// The three negotiation types; their template segments are `<type>-negotiation`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NegotiationType {
    /// `information-negotiation`: missing information is requested.
    Information,
    /// `target-negotiation`: the intent is clarified.
    Target,
    /// `feasibility-negotiation`: feasibility is evaluated.
    Feasibility,
}

impl NegotiationType {
    /// The wire-style name: `"INFORMATION"`, `"TARGET"`, `"FEASIBILITY"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            NegotiationType::Information => "INFORMATION",
            NegotiationType::Target => "TARGET",
            NegotiationType::Feasibility => "FEASIBILITY",
        }
    }

    /// The template path segment, e.g. `"target-negotiation"`.
    pub const fn template_segment(self) -> &'static str {
        match self {
            NegotiationType::Information => "information-negotiation",
            NegotiationType::Target => "target-negotiation",
            NegotiationType::Feasibility => "feasibility-negotiation",
        }
    }

    fn from_template_segment(segment: &str) -> Option<Self> {
        match segment {
            "information-negotiation" => Some(NegotiationType::Information),
            "target-negotiation" => Some(NegotiationType::Target),
            "feasibility-negotiation" => Some(NegotiationType::Feasibility),
            _ => None,
        }
    }
}

/// What a Negotiation-T template URI addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct NegotiationReference {
    /// The negotiation type; `None` for the type-independent `common/abort` template.
    pub negotiation_type: Option<NegotiationType>,
    /// The performative the template serves.
    pub performative: Performative,
}

/// Whether `template` is a Negotiation-T v1 template for `expected`:
/// `Negotiation-T/<type>-negotiation/<segment>/v1` (PROPOSE → `propose`, ACCEPT and REJECT →
/// `accept-reject`), or exactly `Negotiation-T/common/abort/v1` for ABORT. `None` otherwise.
pub fn negotiation_reference(
    template: &TemplateUri<'_>,
    expected: Performative,
) -> Option<NegotiationReference> {
    if template.extension_name() != "Negotiation-T" || template.version() != "v1" {
        return None;
    }
    let (kind, segment) = template.path().split_once('/')?;
    if segment.contains('/') || segment != expected.template_segment() {
        return None;
    }
    let negotiation_type = match expected {
        Performative::Abort if kind == "common" => None,
        Performative::Abort => return None,
        _ => Some(NegotiationType::from_template_segment(kind)?),
    };
    Some(NegotiationReference {
        negotiation_type,
        performative: expected,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_splits_and_trims() {
        let t = TemplateUri::parse(" Task-T/network-layer/ran-energy-saving/v1 ").expect("valid");
        assert_eq!(t.as_str(), "Task-T/network-layer/ran-energy-saving/v1");
        assert_eq!(t.extension_name(), "Task-T");
        assert_eq!(
            t.path_segments().collect::<Vec<_>>(),
            ["network-layer", "ran-energy-saving"]
        );
        assert_eq!(t.version(), "v1");
        for bad in [
            "", "a/b", "a//b/c", "a/../c", "a/b\\x/c", "a/ /c", "/a/b", "a/b/",
        ] {
            assert_eq!(TemplateUri::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn references_follow_the_performative() {
        let r = |s, p| negotiation_reference(&TemplateUri::parse(s).expect("valid"), p);
        assert_eq!(
            r(
                "Negotiation-T/feasibility-negotiation/propose/v1",
                Performative::Propose
            ),
            Some(NegotiationReference {
                negotiation_type: Some(NegotiationType::Feasibility),
                performative: Performative::Propose
            })
        );
        assert_eq!(
            r("Negotiation-T/common/propose/v1", Performative::Propose),
            None
        );
        assert_eq!(
            r("Negotiation-T/common/abort/extra/v1", Performative::Abort),
            None
        );
        assert_eq!(
            r(
                "Negotiation-T/information-negotiation/v1",
                Performative::Propose
            ),
            None
        );
    }
}

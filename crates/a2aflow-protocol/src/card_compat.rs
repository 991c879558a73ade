//! Agent cards as real agents publish them: the older security-scheme shapes (A2A 0.2/0.3 and
//! plain OpenAPI) normalised to their A2A 1.0 equivalents before the card is decoded into
//! a2a-lf's [`AgentCard`].
//!
//! | published (legacy) | A2A 1.0 |
//! |---|---|
//! | `{"type": "http", "scheme": S, "bearerFormat": F}` (OpenAPI) | `{"httpAuthSecurityScheme": {"scheme": S, "bearerFormat": F}}` |
//! | `{"scheme": S}` (no `type`) | `{"httpAuthSecurityScheme": {"scheme": S}}` |
//! | `{"type": "apiKey", "in": L, "name": N}` | `{"apiKeySecurityScheme": {"location": L, "name": N}}` |
//! | `{"type": "oauth2", "flows": F, "oauth2MetadataUrl": M}` | `{"oauth2SecurityScheme": {"flows": F, "oauth2MetadataUrl": M}}` |
//! | `{"type": "openIdConnect", "openIdConnectUrl": U}` | `{"openIdConnectSecurityScheme": {"openIdConnectUrl": U}}` |
//! | `{"type": "mutualTLS"}` | `{"mtlsSecurityScheme": {}}` |
//! | top-level `"security": [{"name": [scopes]}]` and no `securityRequirements` | `"securityRequirements": [{"schemes": {"name": {"list": [scopes]}}}]` |
//!
//! `type` compares case-insensitively; a `description` is kept. A scheme that already has an
//! A2A 1.0 member (`apiKeySecurityScheme`, …) is left as it is, legacy siblings included (the
//! Python SDK's hybrid cards). Anything else fails with `a2a.invalid_response` and a message that
//! names the scheme and what is missing: an unknown `type`, an `http` scheme without `scheme`, an
//! `apiKey` without `in` or `name`, an `oauth2` scheme without `flows`, an `openIdConnect` scheme
//! without `openIdConnectUrl`, a scheme that is not an object.
//!
//! After decoding, each interface keeps the URL the card published: a2a-lf drops the `http://`
//! of a `GRPC` interface, which would turn the card's plaintext `http://host:port` into a
//! `host:port` reached over TLS ([`keep_published_urls`]).

use a2aflow_model::a2a::AgentCard;
use serde_json::{Map, Value, json};

use crate::error::TransportError;

/// The A2A 1.0 members of a `SecurityScheme` (a oneof).
const V1_MEMBERS: &[&str] = &[
    "apiKeySecurityScheme",
    "httpAuthSecurityScheme",
    "oauth2SecurityScheme",
    "openIdConnectSecurityScheme",
    "mtlsSecurityScheme",
];

/// Decodes an agent card after normalising its legacy shapes (see the module table). A card that
/// is still not an A2A 1.0 card is `a2a.invalid_response`.
pub fn decode_agent_card(card: Value) -> Result<AgentCard, TransportError> {
    agent_card_from_value(card).map_err(TransportError::InvalidResponse)
}

/// [`decode_agent_card`] with the reason as text (for callers that wrap it in their own words).
pub fn agent_card_from_value(mut card: Value) -> Result<AgentCard, String> {
    normalize_agent_card(&mut card)?;
    let published = published_urls(&card);
    let mut decoded: AgentCard = serde_json::from_value(card)
        .map_err(|e| format!("the body is not a valid AgentCard: {e}"))?;
    keep_published_urls(&mut decoded, published.iter().map(Option::as_deref));
    Ok(decoded)
}

/// The `url` of each of the document's `supportedInterfaces`, in order.
fn published_urls(card: &Value) -> Vec<Option<String>> {
    let Some(Value::Array(interfaces)) = card.get("supportedInterfaces") else {
        return Vec::new();
    };
    interfaces
        .iter()
        .map(|i| i.get("url").and_then(Value::as_str).map(str::to_owned))
        .collect()
}

/// Puts back the interface URLs as the card published them (`published`, in the card's order).
/// a2a-lf's decoders drop the `http://` of a `GRPC` interface (`http://h:1` becomes `h:1`), and
/// a gRPC URL without a scheme is reached over TLS unless the user configured the agent at a
/// plain http URL: the card's own word that the interface is plaintext would be lost, and a
/// plaintext agent met with a TLS handshake.
pub fn keep_published_urls<'a>(
    card: &mut AgentCard,
    published: impl IntoIterator<Item = Option<&'a str>>,
) {
    for (interface, url) in card.supported_interfaces.iter_mut().zip(published) {
        if let Some(url) = url
            && interface.url != url
        {
            url.clone_into(&mut interface.url);
        }
    }
}

/// Rewrites the legacy security shapes of a card document in place; the error says which scheme
/// cannot be mapped and why. A document that is not an object is left to the decoder.
pub fn normalize_agent_card(card: &mut Value) -> Result<(), String> {
    let Some(card) = card.as_object_mut() else {
        return Ok(());
    };
    if let Some(Value::Object(schemes)) = card.get_mut("securitySchemes") {
        for (name, scheme) in schemes.iter_mut() {
            normalize_scheme(name, scheme)?;
        }
    }
    if !card.contains_key("securityRequirements")
        && let Some(legacy) = card.get("security")
    {
        let requirements = legacy_requirements(legacy)?;
        card.insert("securityRequirements".into(), requirements);
    }
    Ok(())
}

fn normalize_scheme(name: &str, scheme: &mut Value) -> Result<(), String> {
    let Some(object) = scheme.as_object() else {
        return Err(format!(
            "the agent card's security scheme `{name}` is not an object"
        ));
    };
    if V1_MEMBERS.iter().any(|m| object.contains_key(*m)) {
        return Ok(());
    }
    let kind = match object.get("type") {
        Some(Value::String(t)) => t.to_ascii_lowercase(),
        Some(_) => {
            return Err(format!(
                "the agent card's security scheme `{name}` has a `type` that is not a string"
            ));
        }
        None if object.contains_key("scheme") => "http".to_owned(),
        None => {
            return Err(format!(
                "the agent card's security scheme `{name}` has neither an A2A 1.0 member ({}) nor a legacy `type`",
                V1_MEMBERS.join(", ")
            ));
        }
    };
    let field = |key: &str, what: &str| -> Result<Value, String> {
        match object.get(key) {
            Some(v) if !v.is_null() => Ok(v.clone()),
            _ => Err(format!(
                "the agent card's security scheme `{name}` (type {what}) has no `{key}`"
            )),
        }
    };
    let mut inner = Map::new();
    let member = match kind.as_str() {
        "http" => {
            inner.insert("scheme".into(), field("scheme", "http")?);
            copy(object, &mut inner, "bearerFormat");
            "httpAuthSecurityScheme"
        }
        "apikey" => {
            inner.insert("location".into(), field("in", "apiKey")?);
            inner.insert("name".into(), field("name", "apiKey")?);
            "apiKeySecurityScheme"
        }
        "oauth2" => {
            inner.insert("flows".into(), field("flows", "oauth2")?);
            copy(object, &mut inner, "oauth2MetadataUrl");
            "oauth2SecurityScheme"
        }
        "openidconnect" => {
            inner.insert(
                "openIdConnectUrl".into(),
                field("openIdConnectUrl", "openIdConnect")?,
            );
            "openIdConnectSecurityScheme"
        }
        "mutualtls" => "mtlsSecurityScheme",
        _ => {
            return Err(format!(
                "the agent card's security scheme `{name}` has type `{}`, which has no A2A 1.0 equivalent (known: apiKey, http, oauth2, openIdConnect, mutualTLS)",
                escape(
                    object
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                )
            ));
        }
    };
    copy(object, &mut inner, "description");
    *scheme = json!({ member: inner });
    Ok(())
}

/// A peer-chosen name shown in a message: control characters escaped, at most 64 characters.
fn escape(text: &str) -> String {
    text.chars().take(64).flat_map(char::escape_debug).collect()
}

fn copy(from: &Map<String, Value>, to: &mut Map<String, Value>, key: &str) {
    if let Some(v) = from.get(key).filter(|v| !v.is_null()) {
        to.insert(key.to_owned(), v.clone());
    }
}

/// The 0.3 `security` list (`[{"name": [scopes]}]`) as 1.0 `securityRequirements`.
fn legacy_requirements(legacy: &Value) -> Result<Value, String> {
    let bad = || {
        "the agent card's legacy `security` is not a list of {scheme: [scopes]} objects".to_owned()
    };
    let Value::Array(items) = legacy else {
        return Err(bad());
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let Value::Object(requirement) = item else {
            return Err(bad());
        };
        let mut schemes = Map::new();
        for (name, scopes) in requirement {
            if !scopes.is_array() {
                return Err(bad());
            }
            schemes.insert(name.clone(), json!({ "list": scopes }));
        }
        out.push(json!({ "schemes": schemes }));
    }
    Ok(Value::Array(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2aflow_model::a2a::{OAuthFlows, SecurityScheme};

    fn card_with(schemes: Value) -> Value {
        json!({
            "name": "legacy", "description": "d", "version": "1",
            "supportedInterfaces": [{"url": "https://h/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {}, "defaultInputModes": [], "defaultOutputModes": [], "skills": [],
            "securitySchemes": schemes,
        })
    }

    fn one(scheme: Value) -> Result<SecurityScheme, String> {
        let card = decode_agent_card(card_with(json!({ "s": scheme }))).map_err(|e| {
            assert_eq!(e.code_str(), "a2a.invalid_response");
            e.to_failure().message
        })?;
        Ok(card
            .security_schemes
            .unwrap_or_default()
            .remove("s")
            .unwrap())
    }

    #[test]
    fn a_grpc_interface_keeps_the_scheme_the_card_published() {
        let card = json!({
            "name": "a", "description": "d", "version": "1",
            "supportedInterfaces": [
                {"url": "http://h:1", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
                {"url": "https://h:2", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
                {"url": "h:3", "protocolBinding": "grpc", "protocolVersion": "1.0"},
                {"url": "http://h/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
            ],
            "capabilities": {}, "defaultInputModes": [], "defaultOutputModes": [], "skills": []
        });
        let urls: Vec<String> = agent_card_from_value(card)
            .unwrap()
            .supported_interfaces
            .into_iter()
            .map(|i| i.url)
            .collect();
        assert_eq!(urls, ["http://h:1", "https://h:2", "h:3", "http://h/rpc"]);
    }

    #[test]
    fn bare_scheme_bearer_is_http_auth() {
        let SecurityScheme::HttpAuth(h) = one(json!({"scheme": "bearer"})).unwrap() else {
            panic!("not http auth")
        };
        assert_eq!(h.scheme, "bearer");
    }

    #[test]
    fn openapi_http_bearer_keeps_format_and_description() {
        let s = one(
            json!({"type": "http", "scheme": "bearer", "bearerFormat": "JWT", "description": "d"}),
        );
        let SecurityScheme::HttpAuth(h) = s.unwrap() else {
            panic!("not http auth")
        };
        assert_eq!(
            (
                h.scheme.as_str(),
                h.bearer_format.as_deref(),
                h.description.as_deref()
            ),
            ("bearer", Some("JWT"), Some("d"))
        );
    }

    #[test]
    fn api_key_in_and_name_become_location_and_name() {
        let SecurityScheme::ApiKey(k) =
            one(json!({"type": "apiKey", "in": "header", "name": "X-API-Key"})).unwrap()
        else {
            panic!("not an api key")
        };
        assert_eq!(
            (k.location.as_str(), k.name.as_str()),
            ("header", "X-API-Key")
        );
    }

    #[test]
    fn oauth2_open_id_connect_and_mutual_tls_map() {
        let s = one(
            json!({"type": "oauth2", "flows": {"clientCredentials": {"tokenUrl": "https://idp/t", "scopes": {}}}}),
        );
        let SecurityScheme::OAuth2(o) = s.unwrap() else {
            panic!("not oauth2")
        };
        assert!(
            matches!(o.flows, OAuthFlows::ClientCredentials(ref f) if f.token_url == "https://idp/t")
        );
        let s = one(
            json!({"type": "openIdConnect", "openIdConnectUrl": "https://idp/.well-known/openid-configuration"}),
        );
        assert!(matches!(s.unwrap(), SecurityScheme::OpenIdConnect(_)));
        assert!(matches!(
            one(json!({"type": "mutualTLS"})).unwrap(),
            SecurityScheme::MutualTls(_)
        ));
    }

    #[test]
    fn a2a_1_0_members_and_hybrid_siblings_are_left_alone() {
        let s = one(
            json!({"apiKeySecurityScheme": {"location": "header", "name": "k"}, "in": "query", "name": "other", "type": "apiKey"}),
        );
        let SecurityScheme::ApiKey(k) = s.unwrap() else {
            panic!("not an api key")
        };
        assert_eq!((k.location.as_str(), k.name.as_str()), ("header", "k"));
    }

    #[test]
    fn unmappable_shapes_fail_with_a_precise_message() {
        for (scheme, expected) in [
            (
                json!({"type": "digest"}),
                "`s` has type `digest`, which has no A2A 1.0 equivalent",
            ),
            (json!({"type": "http"}), "`s` (type http) has no `scheme`"),
            (
                json!({"type": "apiKey", "name": "k"}),
                "`s` (type apiKey) has no `in`",
            ),
            (
                json!({"type": "apiKey", "in": "header"}),
                "`s` (type apiKey) has no `name`",
            ),
            (
                json!({"type": "oauth2"}),
                "`s` (type oauth2) has no `flows`",
            ),
            (
                json!({"type": "openIdConnect"}),
                "`s` (type openIdConnect) has no `openIdConnectUrl`",
            ),
            (
                json!({"description": "?"}),
                "`s` has neither an A2A 1.0 member",
            ),
            (json!("bearer"), "`s` is not an object"),
            (json!({"type": 7}), "`s` has a `type` that is not a string"),
        ] {
            let message = one(scheme).unwrap_err();
            assert!(message.contains(expected), "{message}");
        }
    }

    #[test]
    fn legacy_security_list_becomes_security_requirements() {
        let mut doc = card_with(json!({"bearer": {"type": "http", "scheme": "bearer"}}));
        doc["security"] = json!([{"bearer": ["read"]}]);
        let card = decode_agent_card(doc.clone()).unwrap();
        let requirements = card.security_requirements.unwrap();
        assert_eq!(requirements.len(), 1);
        assert_eq!(requirements[0]["bearer"], ["read"]);
        // securityRequirements, when present, wins over the legacy list.
        doc["securityRequirements"] = json!([]);
        let card = decode_agent_card(doc.clone()).unwrap();
        assert!(card.security_requirements.unwrap_or_default().is_empty());
        doc.as_object_mut().unwrap().remove("securityRequirements");
        doc["security"] = json!({"bearer": []});
        assert!(decode_agent_card(doc).is_err());
    }
}

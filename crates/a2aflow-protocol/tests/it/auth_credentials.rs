//! The credentials file: both forms, value resolution from the environment and `.env`, `enc:`
//! values, and every malformed case failing at load with a message that holds no secret.

use crate::support::Scratch;

use a2aflow_model::{ErrorCode, Failure};
use a2aflow_protocol::auth::{
    CredentialKey, CredentialSource, Credentials, Environment, LoginEncoding, LoginField,
    encrypt_secret,
};
use serde_json::{Value, json};

const KEY_HEX: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
const OTHER_KEY_HEX: &str = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";

fn load(doc: Value, env: &Environment) -> Result<Credentials, Failure> {
    Credentials::from_value(&doc, env)
}

fn no_env() -> Environment {
    Environment::default()
}

fn static_token(c: &Credentials, agent: &str, scheme: &str) -> String {
    match &c.for_agent(agent).unwrap().scheme(scheme).unwrap().source {
        CredentialSource::Static(s) => s.expose().to_owned(),
        other => panic!("not static: {other:?}"),
    }
}

#[test]
fn agent_keyed_form_with_every_credential_kind() {
    let doc = json!({
        "Agent A": {
            "bearerAuth": {"token": "tok-a"},
            "apiKey": {"api_key": "key-a", "auth_header": "X-API-Key"},
            "custom": {"headers": {"X-Tenant": "t-1"}},
            "oauth": {"client_id": "cid", "client_secret": "csec", "token_url": "https://idp.example/token", "scopes": ["a", "b"]},
            "basic": {"username": "u", "password": "p"},
            "login": {"login_url": "https://idp.example/login", "request_fields": {"userName": "u", "value": "p", "n": 3},
                      "token_field": "data.session", "token_ttl": 120, "content_type": "application/x-www-form-urlencoded"}
        }
    });
    let c = load(doc, &no_env()).unwrap();
    let a = c.for_agent("Agent A").unwrap();
    assert_eq!(
        a.scheme_names().collect::<Vec<_>>(),
        ["apiKey", "basic", "bearerAuth", "custom", "login", "oauth"]
    );
    assert_eq!(static_token(&c, "Agent A", "bearerAuth"), "tok-a");
    assert_eq!(static_token(&c, "Agent A", "apiKey"), "key-a");
    assert_eq!(
        a.scheme("apiKey").unwrap().auth_header.as_ref().unwrap(),
        "x-api-key"
    );
    let custom = a.scheme("custom").unwrap();
    assert!(matches!(custom.source, CredentialSource::HeadersOnly));
    assert_eq!(custom.headers[0].0, "x-tenant");
    assert_eq!(custom.headers[0].1.expose(), "t-1");
    match &a.scheme("oauth").unwrap().source {
        CredentialSource::OAuth2(o) => {
            assert_eq!(o.client_id.expose(), "cid");
            assert_eq!(o.client_secret.expose(), "csec");
            assert_eq!(o.token_url.as_deref(), Some("https://idp.example/token"));
            assert_eq!(
                o.scopes.as_deref(),
                Some(&["a".to_owned(), "b".to_owned()][..])
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        &a.scheme("basic").unwrap().source,
        CredentialSource::Basic { username, password } if username.expose() == "u" && password.expose() == "p"
    ));
    match &a.scheme("login").unwrap().source {
        CredentialSource::Login(l) => {
            assert_eq!(l.encoding, LoginEncoding::Form);
            assert_eq!(l.method, http::Method::POST);
            assert_eq!(l.token_field.as_deref(), Some("data.session"));
            assert_eq!(l.token_ttl, Some(120));
            let names: Vec<&str> = l.fields.iter().map(|(k, _)| k.as_str()).collect();
            assert_eq!(names, ["userName", "value", "n"]);
            assert!(matches!(&l.fields[2].1, LoginField::Literal(v) if v == &json!(3)));
        }
        other => panic!("{other:?}"),
    }
    assert!(c.for_agent("Agent B").is_none());
}

#[test]
fn login_with_username_and_password_fields() {
    let doc = json!({"A": {"s": {"login_url": "https://idp.example/t", "username": "u", "password": "p",
                                 "username_field": "user", "password_field": "pass", "method": "put"}}});
    let c = load(doc, &no_env()).unwrap();
    match &c.for_agent("A").unwrap().scheme("s").unwrap().source {
        CredentialSource::Login(l) => {
            assert_eq!(l.method, http::Method::PUT);
            assert_eq!(l.encoding, LoginEncoding::Json);
            let fields: Vec<(&str, &str)> = l
                .fields
                .iter()
                .map(|(k, v)| match v {
                    LoginField::Text(s) => (k.as_str(), s.expose()),
                    _ => panic!(),
                })
                .collect();
            assert_eq!(fields, [("user", "u"), ("pass", "p")]);
        }
        other => panic!("{other:?}"),
    }
    let e = load(
        json!({"A": {"s": {"login_url": "https://idp.example/t", "username": "u"}}}),
        &no_env(),
    )
    .unwrap_err();
    assert!(e.is(ErrorCode::ConfigInvalidCredentials));
    assert!(
        e.message
            .contains("Authentication username and password are required for A"),
        "{}",
        e.message
    );
}

#[test]
fn profiles_are_copied_and_overridden_per_agent_without_mutating_the_source() {
    let doc = json!({
        "profiles": {"shared": {"bearer": {"login_url": "https://idp.example/t",
                                            "request_fields": {"username": "shared-user", "value": "pw"}}}},
        "agents": {
            "agent-a": {"profile": "shared"},
            "agent-b": {"profile": "shared", "overrides": {"bearer": {"request_fields": {"username": "agent-b-user"}}}}
        }
    });
    let before = doc.clone();
    let c = Credentials::from_value(&doc, &no_env()).unwrap();
    assert_eq!(doc, before);
    let user = |agent: &str| match &c.for_agent(agent).unwrap().scheme("bearer").unwrap().source {
        CredentialSource::Login(l) => {
            let mut out = Vec::new();
            for (k, v) in &l.fields {
                if let LoginField::Text(s) = v {
                    out.push(format!("{k}={}", s.expose()));
                }
            }
            out
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(user("agent-a"), ["username=shared-user", "value=pw"]);
    assert_eq!(user("agent-b"), ["username=agent-b-user", "value=pw"]);
}

#[test]
fn malformed_documents_fail_with_the_reference_messages() {
    let cases: Vec<(Value, &str)> = vec![
        (json!([1, 2]), "root must be an object"),
        (
            json!({"A": "x"}),
            "Credential binding for A must be an object",
        ),
        (
            json!({"profiles": {}}),
            "requires object fields: profiles and agents",
        ),
        (
            json!({"profiles": {}, "agents": []}),
            "requires object fields: profiles and agents",
        ),
        (
            json!({"profiles": {}, "agents": {"A": 1}}),
            "Credential binding for A must be an object",
        ),
        (
            json!({"profiles": {}, "agents": {"A": {"profile": " "}}}),
            "Credential profile for A must not be blank",
        ),
        (
            json!({"profiles": {}, "agents": {"A": {"profile": "p"}}}),
            "Unknown credential profile 'p' for agent A",
        ),
        (
            json!({"profiles": {"p": {}}, "agents": {"A": {"profile": "p", "overrides": 3}}}),
            "Credential overrides for A must be an object",
        ),
        (json!({"A": {"s": {"tokn": "x"}}}), "unknown field `tokn`"),
        (json!({"A": {"s": {}}}), "configures no credential"),
        (
            json!({"A": {"s": {"token": "a", "client_id": "b", "client_secret": "c"}}}),
            "set only one of",
        ),
        (
            json!({"A": {"s": {"token": "  "}}}),
            "`token` must not be blank",
        ),
        (
            json!({"A": {"s": {"client_id": "x"}}}),
            "`client_secret` is required",
        ),
        (
            json!({"A": {"s": {"token": "x", "token_url": "https://i/t"}}}),
            "need `client_id`",
        ),
        (
            json!({"A": {"s": {"token": "x", "request_fields": {}}}}),
            "needs `login_url`",
        ),
        (
            json!({"A": {"s": {"login_url": "not a url", "username": "u", "password": "p"}}}),
            "absolute http(s) URL",
        ),
        (
            json!({"A": {"s": {"token": "x", "auth_header": "bad header"}}}),
            "invalid header",
        ),
        (
            json!({"A": {"s": {"token": "x", "auth_header_prefix": "T "}}}),
            "needs `auth_header`",
        ),
        (
            json!({"A": {"s": {"login_url": "https://i/t", "username": "u", "password": "p", "content_type": "text/plain"}}}),
            "content_type",
        ),
    ];
    for (doc, expected) in cases {
        let e = load(doc.clone(), &no_env()).unwrap_err();
        assert!(e.is(ErrorCode::ConfigInvalidCredentials), "{doc}: {e}");
        assert!(e.message.contains(expected), "{doc}: {}", e.message);
    }
}

#[test]
fn file_errors_fail_at_load() {
    let s = Scratch::new("a2aflow-cred");
    let e = Credentials::from_file(s.0.join("missing.json"), &no_env()).unwrap_err();
    assert!(e.is(ErrorCode::ConfigInvalidCredentials));
    assert!(
        e.message.starts_with("Credentials file not found: "),
        "{}",
        e.message
    );

    let bad = s.file(
        "bad.json",
        "{\"A\": {\"s\": {\"token\": \"very-secret-in-broken-json\"",
    );
    let e = Credentials::from_file(&bad, &no_env()).unwrap_err();
    assert!(e.is(ErrorCode::ConfigInvalidCredentials));
    assert!(
        e.message.starts_with("Failed to load credentials from "),
        "{}",
        e.message
    );
    assert!(!e.message.contains("very-secret-in-broken-json"));

    let good = s.file("good.json", r#"{"A": {"s": {"token": "t"}}}"#);
    let c = Credentials::from_file(&good, &no_env()).unwrap();
    assert_eq!(static_token(&c, "A", "s"), "t");
}

#[test]
fn wrong_value_types_never_echo_the_value() {
    let e = load(
        json!({"A": {"s": {"token": ["distinctive-secret-value-42"]}}}),
        &no_env(),
    )
    .unwrap_err();
    assert!(e.is(ErrorCode::ConfigInvalidCredentials));
    assert!(
        !e.message.contains("distinctive-secret-value-42"),
        "{}",
        e.message
    );
    assert!(!format!("{e:?}").contains("distinctive-secret-value-42"));
}

#[test]
fn values_come_from_the_environment() {
    let env = Environment::from_pairs([("AGENT_A_TOKEN", "from-env"), ("TENANT", "t-9")]);
    let doc =
        json!({"A": {"s": {"token": "env:AGENT_A_TOKEN", "headers": {"X-Tenant": "env:TENANT"}}}});
    let c = load(doc, &env).unwrap();
    assert_eq!(static_token(&c, "A", "s"), "from-env");
    assert_eq!(
        c.for_agent("A").unwrap().scheme("s").unwrap().headers[0]
            .1
            .expose(),
        "t-9"
    );

    let e = load(json!({"A": {"s": {"token": "env:NOT_SET_ANYWHERE"}}}), &env).unwrap_err();
    assert!(e.is(ErrorCode::ConfigMissingEnv), "{e}");
    assert!(e.message.contains("NOT_SET_ANYWHERE"));
    assert_eq!(e.details["variable"], "NOT_SET_ANYWHERE");
}

#[test]
fn dot_env_file_completes_but_never_overrides_the_environment() {
    let s = Scratch::new("a2aflow-cred");
    let path = s.file(
        ".env",
        "# credentials\nAGENT_TOKEN=\"from-file\"\nALREADY=from-file\nBAD-KEY=x\n1NUM=x\nSPACED KEY=x\nQUOTED='single'\n",
    );
    let env = Environment::from_pairs([("ALREADY", "from-process")])
        .with_env_file(&path)
        .unwrap();
    assert_eq!(env.get("AGENT_TOKEN"), Some("from-file"));
    assert_eq!(env.get("ALREADY"), Some("from-process"));
    assert_eq!(env.get("QUOTED"), Some("single"));
    assert_eq!(env.get("BAD-KEY"), None);
    assert_eq!(env.len(), 3);
    let c = load(json!({"A": {"s": {"token": "env:AGENT_TOKEN"}}}), &env).unwrap();
    assert_eq!(static_token(&c, "A", "s"), "from-file");

    let e = Environment::default()
        .with_env_file(s.0.join("missing.env"))
        .unwrap_err();
    assert!(e.is(ErrorCode::ConfigInvalid));
}

#[test]
fn enc_values_round_trip_with_the_key_from_the_environment() {
    let key = CredentialKey::from_hex(KEY_HEX).unwrap();
    let enc_pw = encrypt_secret("p@ss&中文", &key).unwrap();
    let enc_tok = encrypt_secret("tok-from-env-enc", &key).unwrap();
    assert_eq!(enc_pw.split(':').count(), 3);
    let env = Environment::from_pairs([("A2AT_CRED_KEY", KEY_HEX), ("TOK", enc_tok.as_str())]);
    let doc = json!({"A": {
        "s": {"login_url": "https://idp.example/t", "request_fields": {"user": "u", "password": enc_pw}},
        "t": {"token": "env:TOK"}
    }});
    let c = load(doc, &env).unwrap();
    match &c.for_agent("A").unwrap().scheme("s").unwrap().source {
        CredentialSource::Login(l) => match &l.fields[1].1 {
            LoginField::Text(s) => assert_eq!(s.expose(), "p@ss&中文"),
            other => panic!("{other:?}"),
        },
        other => panic!("{other:?}"),
    }
    assert_eq!(static_token(&c, "A", "t"), "tok-from-env-enc");
}

#[test]
fn enc_values_fail_closed() {
    let key = CredentialKey::from_hex(KEY_HEX).unwrap();
    let enc = encrypt_secret("the-real-password", &key).unwrap();
    let doc = |v: &str| json!({"A": {"s": {"token": v}}});

    // No key at all (eager: fails at load, not at the first send).
    let e = load(doc(&enc), &no_env()).unwrap_err();
    assert!(e.is(ErrorCode::ConfigDecrypt), "{e}");
    assert!(e.message.contains("not configured"), "{}", e.message);
    assert_eq!(e.details["agent"], "A");

    // Wrong key.
    let env = Environment::from_pairs([("A2AT_CRED_KEY", OTHER_KEY_HEX)]);
    let e = load(doc(&enc), &env).unwrap_err();
    assert!(e.is(ErrorCode::ConfigDecrypt));
    assert!(
        e.message.contains("Credential decryption failed"),
        "{}",
        e.message
    );

    // Tampered ciphertext: flip one base64 character of the sealed part.
    let (head, sealed) = enc.rsplit_once(':').unwrap();
    let mut chars: Vec<char> = sealed.chars().collect();
    chars[2] = if chars[2] == 'A' { 'B' } else { 'A' };
    let tampered = format!("{head}:{}", chars.into_iter().collect::<String>());
    let env = Environment::from_pairs([("A2AT_CRED_KEY", KEY_HEX)]);
    let e = load(doc(&tampered), &env).unwrap_err();
    assert!(e.is(ErrorCode::ConfigDecrypt));

    // Malformed key.
    let env = Environment::from_pairs([("A2AT_CRED_KEY", "not-a-256-bit-key")]);
    let e = load(doc(&enc), &env).unwrap_err();
    assert!(e.is(ErrorCode::ConfigDecrypt));
    assert!(e.message.contains("64 hexadecimal"));

    // A malformed key does not matter when nothing is encrypted.
    assert!(load(doc("plain"), &env).is_ok());

    // Wrong format.
    let env = Environment::from_pairs([("A2AT_CRED_KEY", KEY_HEX)]);
    let e = load(doc("enc:only-one-part"), &env).unwrap_err();
    assert!(
        e.message.contains("expected enc:<iv>:<ciphertext>"),
        "{}",
        e.message
    );
}

#[test]
fn debug_output_of_loaded_credentials_holds_no_secret() {
    let env = Environment::from_pairs([("SEC", "env-secret-zz81")]);
    let doc = json!({"A": {
        "a": {"token": "static-secret-zz81"},
        "b": {"client_id": "client-id-zz81", "client_secret": "client-secret-zz81", "token_url": "https://i/t"},
        "c": {"login_url": "https://i/l", "request_fields": {"password": "login-secret-zz81"}},
        "d": {"headers": {"X-K": "env:SEC"}},
        "e": {"username": "user-zz81", "password": "basic-secret-zz81"}
    }});
    let c = load(doc, &env).unwrap();
    let shown = format!("{c:?} {c:#?} {env:?}");
    assert!(!shown.contains("zz81"), "{shown}");
    assert!(shown.contains("***"));
}

#[test]
fn decrypts_a_value_made_by_an_independent_implementation() {
    // Produced with Python `cryptography`'s AESGCM (the primitive of the reference Python engine):
    // key KEY_HEX, IV 00 01 … 0b, no associated data, plaintext "p@ss&中文".
    let key = CredentialKey::from_hex(KEY_HEX).unwrap();
    let value = "enc:AAECAwQFBgcICQoL:ZljGRWatdRsvregulkZGo1mAKng1tdHQdKQE";
    assert_eq!(
        a2aflow_protocol::auth::decrypt_secret(value, &key)
            .unwrap()
            .expose(),
        "p@ss&中文"
    );
}

#[test]
fn an_explicit_key_wins_for_one_snapshot_without_touching_others() {
    let key = CredentialKey::from_hex(KEY_HEX).unwrap();
    let enc = encrypt_secret("explicit-key-secret", &key).unwrap();
    let global = Environment::from_pairs([("A2AT_CRED_KEY", OTHER_KEY_HEX)]);
    let explicit = global.clone().with_var("A2AT_CRED_KEY", KEY_HEX);
    let doc = json!({"A": {"s": {"token": enc}}});
    assert_eq!(
        static_token(&load(doc.clone(), &explicit).unwrap(), "A", "s"),
        "explicit-key-secret"
    );
    assert_eq!(global.get("A2AT_CRED_KEY"), Some(OTHER_KEY_HEX));
    assert!(load(doc, &global).unwrap_err().is(ErrorCode::ConfigDecrypt));
}

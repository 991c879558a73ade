//! Text from the network made safe for a terminal.
//!
//! Card fields, agent messages, artifacts, error messages and workflow names loaded from a service
//! are controlled by a peer. Written raw, an escape sequence in them could clear the screen, set
//! the window title, rewrite earlier lines (CR) or reorder what is shown (bidirectional
//! overrides). Every text-mode print of such text goes through this module:
//!
//! - [`inline`] for one-line fields: every C0 control (tab and newline included), DEL, every C1
//!   control (U+0080–U+009F), the zero-width characters and the bidirectional controls (U+061C,
//!   U+200B–U+200F, U+202A–U+202E, U+2060, U+2066–U+2069, U+FEFF) become a visible escape: `\x1b`, `\x7f`, `\u{9b}`, `\u{202e}`;
//! - [`block`] for message and artifact text: the same, except that newlines and tabs are kept
//!   (each new line starts with the given indent, so a message cannot fake a line of its own at
//!   the left margin);
//! - [`json`] for JSON documents: the same characters become JSON `\uXXXX` escapes, which leaves
//!   the document's value unchanged (outside strings JSON holds only ASCII structure).
//!
//! Which characters are hidden is defined once, in `a2aflow::model::names`; this module only
//! decides how they are shown.

use a2aflow::model::names;

/// Whether `c` must not reach a terminal as it is: a control character or an invisible one
/// (zero-width, bidirectional), as the model defines them for names.
fn is_dangerous(c: char) -> bool {
    names::is_control_character(c) || names::is_invisible_character(c)
}

/// The visible form of a dangerous character.
fn escape_into(out: &mut String, c: char) {
    let n = c as u32;
    if n < 0x80 {
        out.push_str(&format!("\\x{n:02x}"));
    } else {
        out.push_str(&format!("\\u{{{n:x}}}"));
    }
}

/// One line of peer-controlled text: every control character shown as a visible escape.
pub fn inline(text: &str) -> String {
    if !text.chars().any(is_dangerous) {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_dangerous(c) {
            escape_into(&mut out, c);
        } else {
            out.push(c);
        }
    }
    out
}

/// Multi-line peer-controlled text: newlines and tabs kept, each continuation line prefixed with
/// `indent`; every other control character shown as a visible escape.
pub fn block(text: &str, indent: &str) -> String {
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => {
                out.push('\n');
                out.push_str(indent);
            }
            '\t' => out.push('\t'),
            c if is_dangerous(c) => escape_into(&mut out, c),
            c => out.push(c),
        }
    }
    out
}

/// A serialised JSON document with every dangerous character serde leaves raw (DEL, C1,
/// bidirectional controls) written as a `\uXXXX` escape; the JSON value is unchanged.
pub fn json(document: &str) -> String {
    if !document.chars().any(is_dangerous) {
        return document.to_owned();
    }
    let mut out = String::with_capacity(document.len() + 8);
    for c in document.chars() {
        // serde already escaped C0 inside strings; a raw newline here is pretty-printing.
        if is_dangerous(c) && !matches!(c, '\n' | '\t') {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap

    use super::*;

    #[test]
    fn inline_shows_every_control_and_bidi_character_as_an_escape() {
        let hostile = "a\u{1b}]0;pwned\u{7}b\u{1b}[2Jc\rd\ne\tf\u{7f}g\u{9b}h\u{202e}i\u{2066}j";
        let safe = inline(hostile);
        assert_eq!(
            safe,
            "a\\x1b]0;pwned\\x07b\\x1b[2Jc\\x0dd\\x0ae\\x09f\\x7fg\\u{9b}h\\u{202e}i\\u{2066}j"
        );
        assert!(!safe.chars().any(is_dangerous), "{safe:?}");
        assert_eq!(inline("plain – ünïcode ✔"), "plain – ünïcode ✔");
    }

    #[test]
    fn block_keeps_lines_and_tabs_indented_and_escapes_the_rest() {
        assert_eq!(
            block("one\ntwo\tcols\r\u{1b}[1A", "    "),
            "one\n    two\tcols\\x0d\\x1b[1A"
        );
    }

    #[test]
    fn json_escapes_keep_the_value() {
        let value = serde_json::json!({"name": "x\u{1b}[2J\u{9b}\u{7f}\u{202e}y"});
        let text = serde_json::to_string_pretty(&value).unwrap();
        let safe = json(&text);
        assert!(
            !safe.chars().any(|c| is_dangerous(c) && c != '\n'),
            "{safe:?}"
        );
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, value);
    }
}

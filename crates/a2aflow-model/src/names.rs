//! Characters a name must not hold, characters it should not hold, and a visible rendering of
//! both for messages and graph output.
//!
//! Names and ids (workflow id and name, step names, subtask agents and child workflows, `next`
//! targets, `contextFrom` entries) reach terminals, logs, events and graph files. A **control
//! character** (C0 U+0000–U+001F, DEL U+007F, C1 U+0080–U+009F: newlines, tabs, escapes) in one
//! breaks those outputs and is a `workflow.invalid_name` error of [`crate::validate()`]. An
//! **invisible character** (zero-width U+200B–U+200D, BOM U+FEFF, word joiner U+2060, the bidi
//! marks U+200E, U+200F, U+061C and the bidi embeddings, overrides and isolates U+202A–U+202E,
//! U+2066–U+2069) makes two different names look alike or reorders what a reader sees; the loader
//! warns about it (`workflow.invisible_character`). Free text (descriptions, conditions) may hold
//! either; writers escape it with [`visible`].

use std::borrow::Cow;

/// A control character: C0 (U+0000–U+001F), DEL (U+007F) or C1 (U+0080–U+009F).
pub fn is_control_character(c: char) -> bool {
    c.is_control()
}

/// An invisible character: zero-width space, non-joiner and joiner, BOM, word joiner, the bidi
/// marks, embeddings, overrides and isolates.
pub fn is_invisible_character(c: char) -> bool {
    matches!(
        c,
        '\u{200B}'..='\u{200F}'
            | '\u{061C}'
            | '\u{FEFF}'
            | '\u{2060}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2066}'..='\u{2069}'
    )
}

/// The first character of `s` that [`is_control_character`] or [`is_invisible_character`]
/// matches, with its character index (0-based).
pub fn first_hidden(s: &str, hidden: fn(char) -> bool) -> Option<(usize, char)> {
    s.chars().enumerate().find(|&(_, c)| hidden(c))
}

/// `s` with every control and invisible character written as `\u{XXXX}`, so that it shows in
/// one line of text and cannot reorder or hide anything. Borrowed when there is nothing to
/// escape.
pub fn visible(s: &str) -> Cow<'_, str> {
    let hidden = |c: char| is_control_character(c) || is_invisible_character(c);
    if !s.chars().any(hidden) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if hidden(c) {
            out.push_str(&format!("\\u{{{:04X}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_c0_del_and_c1() {
        for c in [
            '\0', '\n', '\t', '\u{1b}', '\u{1f}', '\u{7f}', '\u{80}', '\u{9f}',
        ] {
            assert!(is_control_character(c), "{c:?}");
        }
        for c in [' ', 'a', '\u{a0}', '\u{200B}', 'é'] {
            assert!(!is_control_character(c), "{c:?}");
        }
    }

    #[test]
    fn invisible_characters_are_zero_width_and_bidi_controls() {
        for c in [
            '\u{200B}', '\u{200C}', '\u{200D}', '\u{200E}', '\u{200F}', '\u{061C}', '\u{FEFF}',
            '\u{2060}', '\u{202A}', '\u{202E}', '\u{2066}', '\u{2069}',
        ] {
            assert!(is_invisible_character(c), "{c:?}");
        }
        for c in [
            ' ', '\n', 'a', '\u{2010}', '\u{2065}', '\u{206A}', '\u{2029}',
        ] {
            assert!(!is_invisible_character(c), "{c:?}");
        }
    }

    #[test]
    fn visible_escapes_only_what_is_hidden() {
        assert!(matches!(visible("plain name é"), Cow::Borrowed(_)));
        assert_eq!(
            visible("a\nb\u{1b}[31m\u{202E}c\u{200B}"),
            "a\\u{000A}b\\u{001B}[31m\\u{202E}c\\u{200B}"
        );
        assert_eq!(
            first_hidden("ab\u{7f}", is_control_character),
            Some((2, '\u{7f}'))
        );
        assert_eq!(first_hidden("ab", is_invisible_character), None);
    }
}

//! Where each value of a JSON text starts: a map from JSON pointer to line and column.
//!
//! `serde_json::Value` forgets positions, so the loader scans the text once more (only after
//! `serde_json` accepted it) and records, for every member and element, where its key and its
//! value begin. Problems found on the `Value` are then located by their JSON pointer.

use crate::problem::{Position, pointer_token};
use std::collections::HashMap;

/// Positions of the keys and values of one JSON text, by JSON pointer.
#[derive(Debug, Clone, Default)]
pub struct SourceMap {
    /// Byte offset where each value starts.
    values: HashMap<String, usize>,
    /// Byte offset where each object member's key starts.
    keys: HashMap<String, usize>,
    /// Pointers of members whose key repeats an earlier key of the same object (serde_json keeps
    /// the last value), in text order.
    duplicates: Vec<String>,
    /// Byte offset of the start of every line.
    line_starts: Vec<usize>,
    text: String,
}

/// Deepest nesting the scanner follows; `serde_json` refuses deeper text anyway (limit 128).
const MAX_DEPTH: usize = 256;

impl SourceMap {
    /// Scans `text`. Text that is not valid JSON gives a map with whatever was recognised before
    /// the first surprise (never a panic).
    pub fn new(text: &str) -> Self {
        let mut map = SourceMap {
            text: text.to_owned(),
            line_starts: std::iter::once(0)
                .chain(text.match_indices('\n').map(|(i, _)| i + 1))
                .collect(),
            ..SourceMap::default()
        };
        let mut scanner = Scanner {
            text,
            bytes: text.as_bytes(),
            at: 0,
        };
        let mut path = String::new();
        // The scan stops quietly at the first byte it does not understand.
        let _ = scanner.value(&mut path, &mut map, 0);
        map
    }

    /// Members whose key appears more than once in the same object, in text order (the value
    /// that counts is the last one).
    pub fn duplicate_keys(&self) -> &[String] {
        &self.duplicates
    }

    /// Where the value at `pointer` starts, if the text has it.
    pub fn value_position(&self, pointer: &str) -> Option<Position> {
        self.values.get(pointer).map(|&at| self.position(at))
    }

    /// Where the key of the member at `pointer` starts, if the text has it.
    pub fn key_position(&self, pointer: &str) -> Option<Position> {
        self.keys.get(pointer).map(|&at| self.position(at))
    }

    /// The best position for a problem at `pointer`: the value, else the key, else the nearest
    /// enclosing value (a missing member is located at its parent object).
    pub fn locate(&self, pointer: &str) -> Option<Position> {
        let mut p = pointer;
        loop {
            if let Some(pos) = self.value_position(p).or_else(|| self.key_position(p)) {
                return Some(pos);
            }
            match p.rfind('/') {
                Some(i) => p = &p[..i],
                None => return None,
            }
        }
    }

    fn position(&self, at: usize) -> Position {
        let line = match self.line_starts.binary_search(&at) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        let start = self.line_starts.get(line).copied().unwrap_or(0);
        let column = self
            .text
            .get(start..at)
            .map_or(at - start, |s| s.chars().count())
            + 1;
        Position {
            line: line + 1,
            column,
        }
    }
}

struct Scanner<'a> {
    text: &'a str,
    bytes: &'a [u8],
    at: usize,
}

/// The scan met something that is not JSON; it stops there.
struct Stop;

impl Scanner<'_> {
    fn skip_ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.at) {
            self.at += 1;
        }
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn expect(&mut self, b: u8) -> Result<(), Stop> {
        self.skip_ws();
        if self.peek() == Some(b) {
            self.at += 1;
            Ok(())
        } else {
            Err(Stop)
        }
    }

    fn value(&mut self, path: &mut String, map: &mut SourceMap, depth: usize) -> Result<(), Stop> {
        if depth > MAX_DEPTH {
            return Err(Stop);
        }
        self.skip_ws();
        map.values.insert(path.clone(), self.at);
        match self.peek().ok_or(Stop)? {
            b'{' => self.object(path, map, depth),
            b'[' => self.array(path, map, depth),
            b'"' => self.string().map(|_| ()),
            _ => {
                // number, true, false, null: runs until a delimiter
                while let Some(b) = self.peek() {
                    if matches!(b, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    self.at += 1;
                }
                Ok(())
            }
        }
    }

    /// Scans a string and returns its decoded value.
    fn string(&mut self) -> Result<String, Stop> {
        let start = self.at;
        self.at += 1; // opening quote
        loop {
            match self.peek().ok_or(Stop)? {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    break;
                }
                _ => self.at += 1,
            }
        }
        let raw = self.text.get(start..self.at).ok_or(Stop)?;
        serde_json::from_str::<String>(raw).map_err(|_| Stop)
    }

    fn object(&mut self, path: &mut String, map: &mut SourceMap, depth: usize) -> Result<(), Stop> {
        self.at += 1; // {
        self.skip_ws();
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(());
        }
        let mut seen = std::collections::HashSet::new();
        loop {
            self.skip_ws();
            if self.peek() != Some(b'"') {
                return Err(Stop);
            }
            let key_at = self.at;
            let key = self.string()?;
            let len = path.len();
            path.push('/');
            path.push_str(&pointer_token(&key));
            // With duplicate keys serde_json keeps the last one; so does this map.
            if !seen.insert(key) {
                map.duplicates.push(path.clone());
            }
            map.keys.insert(path.clone(), key_at);
            self.expect(b':')?;
            self.value(path, map, depth + 1)?;
            path.truncate(len);
            self.skip_ws();
            match self.peek().ok_or(Stop)? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return Err(Stop),
            }
        }
    }

    fn array(&mut self, path: &mut String, map: &mut SourceMap, depth: usize) -> Result<(), Stop> {
        self.at += 1; // [
        self.skip_ws();
        if self.peek() == Some(b']') {
            self.at += 1;
            return Ok(());
        }
        let mut index = 0usize;
        loop {
            let len = path.len();
            path.push('/');
            path.push_str(&index.to_string());
            self.value(path, map, depth + 1)?;
            path.truncate(len);
            index += 1;
            self.skip_ws();
            match self.peek().ok_or(Stop)? {
                b',' => self.at += 1,
                b']' => {
                    self.at += 1;
                    return Ok(());
                }
                _ => return Err(Stop),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(line: usize, column: usize) -> Option<Position> {
        Some(Position { line, column })
    }

    #[test]
    fn values_and_keys_are_located() {
        let text =
            "{\n  \"steps\": [\n    {\"name\": \"a\", \"next\": [{\"step\": \"b\"}]}\n  ]\n}";
        let map = SourceMap::new(text);
        assert_eq!(map.value_position(""), pos(1, 1));
        assert_eq!(map.key_position("/steps"), pos(2, 3));
        assert_eq!(map.value_position("/steps"), pos(2, 12));
        assert_eq!(map.value_position("/steps/0"), pos(3, 5));
        assert_eq!(map.value_position("/steps/0/name"), pos(3, 14));
        assert_eq!(map.value_position("/steps/0/next/0/step"), pos(3, 37));
        // a missing member is located at its parent
        assert_eq!(map.locate("/steps/0/next/0/condition"), pos(3, 28));
        assert_eq!(map.locate("/nope"), pos(1, 1));
    }

    #[test]
    fn columns_count_characters_and_keys_are_decoded() {
        let text = "{\"désc\": \"é\", \"a\\/b\": 1}";
        let map = SourceMap::new(text);
        assert_eq!(map.value_position("/désc"), pos(1, 10));
        assert_eq!(map.key_position("/a~1b"), pos(1, 15));
        assert_eq!(map.value_position("/a~1b"), pos(1, 23));
    }

    #[test]
    fn duplicate_keys_are_listed() {
        let map = SourceMap::new(r#"{"a": 1, "b": {"c": 1, "c": 2}, "a": 3}"#);
        assert_eq!(map.duplicate_keys(), ["/b/c", "/a"]);
        assert_eq!(map.value_position("/a"), pos(1, 38));
    }

    #[test]
    fn garbage_never_panics() {
        for text in ["", "{", "{\"a\"", "[1,", "\"\\", "{\"a\":[{]}", "]]]"] {
            let map = SourceMap::new(text);
            let _ = map.locate("/a/0");
        }
    }
}

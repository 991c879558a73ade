//! Content bytes of what an agent sends back, for the reducer's size caps: text, raw bytes and
//! URLs by length, structured data and metadata by their serialized JSON length, plus names.
//! Each object is measured once, when it arrives; what is already assembled is never walked
//! again.

use a2aflow_model::a2a::{Artifact, Message, Part, PartContent};
use serde_json::{Map, Value};
use std::collections::HashMap;

/// Counts the bytes written to it.
struct Counter(usize);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 = self.0.saturating_add(buf.len());
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The serialized JSON length of `v`.
pub(crate) fn json(v: &Value) -> usize {
    let mut c = Counter(0);
    // Writing a `Value` to a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut c, v);
    c.0
}

/// Keys and serialized values of a JSON map.
pub(crate) fn json_map(m: &Map<String, Value>) -> usize {
    m.iter().fold(0, |n, (k, v)| {
        n.saturating_add(k.len()).saturating_add(json(v))
    })
}

/// Keys and serialized values of an A2A metadata map.
fn metadata(m: Option<&HashMap<String, Value>>) -> usize {
    m.map_or(0, |m| {
        m.iter().fold(0, |n, (k, v)| {
            n.saturating_add(k.len()).saturating_add(json(v))
        })
    })
}

fn opt(s: Option<&String>) -> usize {
    s.map_or(0, String::len)
}

/// One part: its content, file name, media type and metadata.
pub(crate) fn part(p: &Part) -> usize {
    let content = match &p.content {
        PartContent::Text(s) | PartContent::Url(s) => s.len(),
        PartContent::Raw(b) => b.len(),
        PartContent::Data(v) => json(v),
    };
    content
        .saturating_add(opt(p.filename.as_ref()))
        .saturating_add(opt(p.media_type.as_ref()))
        .saturating_add(metadata(p.metadata.as_ref()))
}

fn parts(ps: &[Part]) -> usize {
    ps.iter().fold(0, |n, p| n.saturating_add(part(p)))
}

/// One artifact (or chunk): its parts, name, description and metadata.
pub(crate) fn artifact(a: &Artifact) -> usize {
    parts(&a.parts)
        .saturating_add(opt(a.name.as_ref()))
        .saturating_add(opt(a.description.as_ref()))
        .saturating_add(metadata(a.metadata.as_ref()))
}

/// One message: its parts and metadata.
pub(crate) fn message(m: &Message) -> usize {
    parts(&m.parts).saturating_add(metadata(m.metadata.as_ref()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_is_counted_by_length_and_data_by_its_json() {
        assert_eq!(part(&Part::text("hello")), 5);
        assert_eq!(part(&Part::data(json!({"a": 1}))), r#"{"a":1}"#.len());
        let mut p = Part::text("x");
        p.media_type = Some("text/plain".into());
        p.metadata = Some(HashMap::from([("k".to_owned(), json!("vv"))]));
        assert_eq!(part(&p), 1 + "text/plain".len() + 1 + 4);
    }
}

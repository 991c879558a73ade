//! The direct path of [`super::load_workflow_str`]: one streaming pass over the text, with no
//! `Value` tree of the whole document and no source map.
//!
//! Each step's edges are read straight into [`Edge`]s; its other members are parsed into a
//! `Value` of their own and read by the same [`Cx`] code as the full path, then dropped, so the
//! loader holds one step's members at a time besides the workflow it builds. The direct path gives an answer only for a document that loads without a single
//! problem: the first error or warning (or anything it does not handle itself: a parse error, a
//! repeated key, an escaped key) makes it give up, and the caller loads the document again by the
//! full path, which finds every problem with its path, line and column exactly as before.

use super::{Cx, LoadOptions, Loaded, Names, child};
use crate::definition::{Edge, Step, Workflow};
use crate::names::{first_hidden, is_invisible_character};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use std::collections::HashSet;
use std::fmt;

/// The members of one workflow object as streamed: `steps` already read, the rest as values.
#[derive(Default)]
struct Parts {
    /// Every member except `steps` (and, at the top, `data`).
    members: Map<String, Value>,
    /// `steps`, when present (`null` reads as no steps).
    steps: Option<Vec<Step>>,
    /// The top-level `data` member read as a workflow (a possible wrapper's content).
    data: Option<Box<Parts>>,
}

/// The direct path met something it leaves to the full path.
fn give_up<E: de::Error>() -> E {
    E::custom("left to the full loader")
}

/// Loads `text` when it has no problem at all; `None` otherwise (load it by the full path then).
pub(super) fn load(text: &str, options: LoadOptions) -> Option<Loaded> {
    let mut cx = Cx::new(options);
    let mut de = serde_json::Deserializer::from_str(text);
    let top = WorkflowSeed {
        cx: &mut cx,
        path: String::new(),
        top: true,
    }
    .deserialize(&mut de)
    .ok()?;
    de.end().ok()?;
    if !keys_are_plain_and_unique(text) {
        return None;
    }
    // The wrapper rule of `load_workflow_value`: a top-level object without `steps` whose `data`
    // is an object is unwrapped. A `data` member beside `steps` is an unknown key (a warning).
    let (root, parts) = match top.data {
        Some(inner) if top.steps.is_none() => ("/data", *inner),
        Some(_) => return None,
        None => ("", top),
    };
    let (id, name, description, callable_by) = cx.head(&parts.members, root);
    if cx.has_problems() {
        return None;
    }
    Some(Loaded {
        workflow: Workflow {
            id,
            name,
            description,
            steps: parts.steps.unwrap_or_default(),
            callable_by,
        },
        warnings: Vec::new(),
        root: root.to_owned(),
    })
}

/// Reads a workflow object member by member; `steps` is streamed.
struct WorkflowSeed<'c> {
    cx: &'c mut Cx,
    path: String,
    /// At the document's top, where a `data` member may be a wrapper's content.
    top: bool,
}

impl<'de> DeserializeSeed<'de> for WorkflowSeed<'_> {
    type Value = Parts;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Parts, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for WorkflowSeed<'_> {
    type Value = Parts;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a workflow object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Parts, A::Error> {
        let mut parts = Parts::default();
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "steps" => {
                    parts.steps = Some(map.next_value_seed(StepsSeed {
                        cx: &mut *self.cx,
                        path: child(&self.path, "steps"),
                    })?);
                }
                "data" if self.top => {
                    let inner = map.next_value_seed(WorkflowSeed {
                        cx: &mut *self.cx,
                        path: "/data".to_owned(),
                        top: false,
                    })?;
                    parts.data = Some(Box::new(inner));
                }
                _ => {
                    let value: Value = map.next_value()?;
                    parts.members.insert(key, value);
                }
            }
        }
        Ok(parts)
    }
}

/// Reads the `steps` list one step at a time.
struct StepsSeed<'c> {
    cx: &'c mut Cx,
    path: String,
}

impl<'de> DeserializeSeed<'de> for StepsSeed<'_> {
    type Value = Vec<Step>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<Step>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StepsSeed<'_> {
    type Value = Vec<Step>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of steps")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Vec<Step>, E> {
        Ok(Vec::new())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Step>, A::Error> {
        let mut steps = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some((obj, next)) = seq.next_element_seed(StepSeed {
            names: &mut self.cx.names,
        })? {
            // More steps than the limit is the full path's `workflow.too_large`.
            if steps.len() >= self.cx.max_steps {
                return Err(give_up());
            }
            let path = format!("{}/{}", self.path, steps.len());
            let step = self.cx.step_with(&obj, &path, Some(next));
            if self.cx.has_problems() {
                return Err(give_up());
            }
            steps.push(step);
        }
        Ok(steps)
    }
}

/// Reads one step object: its edges typed, every other member as a value.
struct StepSeed<'n> {
    names: &'n mut Names,
}

impl<'de> DeserializeSeed<'de> for StepSeed<'_> {
    type Value = (Map<String, Value>, Vec<Edge>);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for StepSeed<'_> {
    type Value = (Map<String, Value>, Vec<Edge>);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a step object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut members = Map::new();
        let mut next = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            if key == "next" {
                next = map.next_value_seed(EdgesSeed {
                    names: &mut *self.names,
                })?;
            } else {
                members.insert(key, map.next_value()?);
            }
        }
        Ok((members, next))
    }
}

/// Reads a step's `next` list (`null` is no edges).
struct EdgesSeed<'n> {
    names: &'n mut Names,
}

impl<'de> DeserializeSeed<'de> for EdgesSeed<'_> {
    type Value = Vec<Edge>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Vec<Edge>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for EdgesSeed<'_> {
    type Value = Vec<Edge>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of edges")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Vec<Edge>, E> {
        Ok(Vec::new())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<Edge>, A::Error> {
        let mut edges = Vec::new();
        while let Some(edge) = seq.next_element_seed(EdgeSeed {
            names: &mut *self.names,
        })? {
            edges.push(edge);
        }
        edges.shrink_to_fit();
        Ok(edges)
    }
}

/// Reads one edge as [`Cx::edge`] would, giving up where it would find a problem: a key other
/// than `step` and `condition`, a value that is neither a string nor `null`, a step name with
/// an invisible character. The target's name is looked up in the document's [`Names`] straight
/// from the text (no `String` per edge).
struct EdgeSeed<'n> {
    names: &'n mut Names,
}

impl<'de> DeserializeSeed<'de> for EdgeSeed<'_> {
    type Value = Edge;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Edge, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EdgeSeed<'_> {
    type Value = Edge;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an edge object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Edge, A::Error> {
        let mut edge = Edge::default();
        while let Some(key) = map.next_key_seed(EdgeKeySeed)? {
            match key {
                EdgeKey::Step => {
                    edge.step = map.next_value_seed(TargetName {
                        names: &mut *self.names,
                    })?;
                }
                EdgeKey::Condition => {
                    edge.condition = map.next_value_seed(TargetName {
                        names: &mut *self.names,
                    })?;
                }
                EdgeKey::Other => return Err(give_up()),
            }
        }
        if first_hidden(&edge.step, is_invisible_character).is_some() {
            return Err(give_up());
        }
        Ok(edge)
    }
}

/// A key of an edge object.
enum EdgeKey {
    Step,
    Condition,
    Other,
}

/// Reads a key of an edge object without allocating.
struct EdgeKeySeed;

impl<'de> DeserializeSeed<'de> for EdgeKeySeed {
    type Value = EdgeKey;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<EdgeKey, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for EdgeKeySeed {
    type Value = EdgeKey;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an edge key")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<EdgeKey, E> {
        Ok(match key {
            "step" => EdgeKey::Step,
            "condition" => EdgeKey::Condition,
            _ => EdgeKey::Other,
        })
    }
}

/// An edge's target name or condition (`null` is the empty text), shared through the
/// document's [`Names`].
struct TargetName<'n> {
    names: &'n mut Names,
}

impl<'de> DeserializeSeed<'de> for TargetName<'_> {
    type Value = crate::SharedStr;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl Visitor<'_> for TargetName<'_> {
    type Value = crate::SharedStr;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a step name or null")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Self::Value, E> {
        Ok(self.names.get(name))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(self.names.get(""))
    }
}

/// Objects with more keys than this get a hash set for the repeat check (smaller ones are
/// searched in place).
const SMALL_OBJECT: usize = 16;

/// One open object of the key scan: where its keys start on the shared stack.
struct OpenObject<'t> {
    first_key: usize,
    large: Option<HashSet<&'t str>>,
}

/// True when no object of the (valid JSON) `text` repeats a key and no key is written with an
/// escape. A repeated key is the full path's `workflow.duplicate_key` warning; an escaped key is
/// left to it because two spellings may decode to the same key. Anything unexpected is `false`.
fn keys_are_plain_and_unique(text: &str) -> bool {
    let bytes = text.as_bytes();
    let mut keys: Vec<&str> = Vec::new();
    // `None` marks an open list.
    let mut open: Vec<Option<OpenObject<'_>>> = Vec::new();
    let mut expect_key = false;
    let mut at = 0;
    while at < bytes.len() {
        match bytes[at] {
            b'{' => {
                open.push(Some(OpenObject {
                    first_key: keys.len(),
                    large: None,
                }));
                expect_key = true;
            }
            b'[' => {
                open.push(None);
                expect_key = false;
            }
            b'}' | b']' => {
                if let Some(Some(object)) = open.pop() {
                    keys.truncate(object.first_key);
                }
                expect_key = false;
            }
            b',' => expect_key = matches!(open.last(), Some(Some(_))),
            b':' => expect_key = false,
            b'"' => {
                let start = at + 1;
                let mut end = start;
                let mut escaped = false;
                loop {
                    match bytes.get(end) {
                        None => return false,
                        Some(b'\\') => {
                            escaped = true;
                            end += 2;
                        }
                        Some(b'"') => break,
                        Some(_) => end += 1,
                    }
                }
                if expect_key {
                    let Some(key) = text.get(start..end) else {
                        return false;
                    };
                    let Some(Some(object)) = open.last_mut() else {
                        return false;
                    };
                    if escaped || !first_time(&mut keys, object, key) {
                        return false;
                    }
                    expect_key = false;
                }
                at = end;
            }
            _ => {}
        }
        at += 1;
    }
    true
}

/// Records `key` for `object`; false when the object already had it.
fn first_time<'t>(keys: &mut Vec<&'t str>, object: &mut OpenObject<'t>, key: &'t str) -> bool {
    if let Some(set) = &mut object.large {
        return set.insert(key);
    }
    let mine = &keys[object.first_key..];
    if mine.contains(&key) {
        return false;
    }
    if mine.len() >= SMALL_OBJECT {
        let mut set: HashSet<&str> = keys.drain(object.first_key..).collect();
        set.insert(key);
        object.large = Some(set);
        return true;
    }
    keys.push(key);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_scan_finds_repeats_at_any_depth_and_any_size() {
        assert!(keys_are_plain_and_unique(
            r#"{"a":{"a":1,"b":[{"a":2},{"a":3}]},"b":"{\"a\":1,\"a\":2}"}"#
        ));
        assert!(!keys_are_plain_and_unique(
            r#"{"a":1,"b":{"c":[{"d":1,"d":2}]}}"#
        ));
        assert!(!keys_are_plain_and_unique(r#"{"a":1,"b":2,"a":3}"#));
        assert!(!keys_are_plain_and_unique(r#"{"a\u0062":1}"#));
        let many: Vec<String> = (0..100).map(|i| format!("\"k{i}\":{i}")).collect();
        let unique = format!("{{{}}}", many.join(","));
        assert!(keys_are_plain_and_unique(&unique));
        let repeated = format!("{{{},\"k3\":0}}", many.join(","));
        assert!(!keys_are_plain_and_unique(&repeated));
        assert!(!keys_are_plain_and_unique("{\"a"));
    }
}

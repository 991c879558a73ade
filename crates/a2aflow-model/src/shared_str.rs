//! [`SharedStr`]: an immutable string shared by reference count, for the names a run hands to
//! every task (the workflow id, a step's name, a subtask's agent, skill and description, the
//! run's execution id) and an edge's target and condition. The kernel holds one per name and
//! clones it per task, where an owned `String` was copied.
//!
//! It is one pointer wide (an [`arcstr::ArcStr`]: the count, the length and the text in one
//! allocation), where an `Arc<str>` is two: an [`crate::Edge`] is 16 bytes, and every carrier
//! that holds names is 8 bytes smaller per name. The empty string is a static: making, cloning
//! and dropping it touches no allocation and no count.
//!
//! It reads like a `&str` (`Deref<Target = str>`, `as_str()`), compares with `str`, `&str` and
//! `String` both ways, formats (`Display`, `Debug`) as the string it holds, and serialises as a
//! plain JSON string: a carrier's JSON shape does not change when a field becomes shared.

use arcstr::ArcStr;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::borrow::{Borrow, Cow};
use std::fmt;
use std::ops::Deref;
use std::str::FromStr;
use std::sync::Arc;

/// An immutable, cheaply cloned string (one pointer to its count, length and text): cloning it
/// counts a reference, it never copies the text. See the [module documentation](self).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SharedStr(ArcStr);

impl SharedStr {
    /// The string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True when `a` and `b` share one allocation (a clone of the same name), not only equal
    /// text. Two empty strings always do (the one static empty string).
    pub fn ptr_eq(a: &SharedStr, b: &SharedStr) -> bool {
        ArcStr::ptr_eq(&a.0, &b.0)
    }
}

impl Default for SharedStr {
    /// The empty string (a static: no allocation).
    fn default() -> Self {
        SharedStr(ArcStr::new())
    }
}

impl Deref for SharedStr {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for SharedStr {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for SharedStr {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SharedStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl fmt::Debug for SharedStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl From<&str> for SharedStr {
    /// A copy of `s` (the empty string allocates nothing: see [`SharedStr::default`]).
    fn from(s: &str) -> Self {
        SharedStr(ArcStr::from(s))
    }
}

impl From<&String> for SharedStr {
    fn from(s: &String) -> Self {
        SharedStr::from(s.as_str())
    }
}

impl From<String> for SharedStr {
    fn from(s: String) -> Self {
        SharedStr::from(s.as_str())
    }
}

impl From<Box<str>> for SharedStr {
    fn from(s: Box<str>) -> Self {
        SharedStr::from(&*s)
    }
}

impl From<Cow<'_, str>> for SharedStr {
    fn from(s: Cow<'_, str>) -> Self {
        SharedStr::from(&*s)
    }
}

impl From<SharedStr> for String {
    fn from(s: SharedStr) -> Self {
        String::from(&*s.0)
    }
}

impl From<&SharedStr> for String {
    fn from(s: &SharedStr) -> Self {
        String::from(&*s.0)
    }
}

impl FromStr for SharedStr {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(SharedStr::from(s))
    }
}

/// `PartialEq` both ways between [`SharedStr`] and a string type, by text.
macro_rules! eq_both_ways {
    ($($other:ty),*) => {$(
        impl PartialEq<$other> for SharedStr {
            fn eq(&self, other: &$other) -> bool {
                *self.0 == **other
            }
        }

        impl PartialEq<SharedStr> for $other {
            fn eq(&self, other: &SharedStr) -> bool {
                **self == *other.0
            }
        }
    )*};
}

eq_both_ways!(&str, String, Cow<'_, str>, Arc<str>);

impl PartialEq<str> for SharedStr {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<SharedStr> for str {
    fn eq(&self, other: &SharedStr) -> bool {
        *self == *other.0
    }
}

impl Serialize for SharedStr {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SharedStr {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Text;

        impl serde::de::Visitor<'_> for Text {
            type Value = SharedStr;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<SharedStr, E> {
                Ok(SharedStr::from(v))
            }
        }

        deserializer.deserialize_str(Text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{BTreeSet, HashMap};

    #[test]
    fn it_compares_formats_and_reads_like_the_string_it_holds() {
        let s = SharedStr::from("agent-a");
        assert_eq!(s, "agent-a");
        assert_eq!("agent-a", s);
        assert_eq!(s, *"agent-a");
        assert_eq!(*"agent-a", s);
        assert_eq!(s, String::from("agent-a"));
        assert_eq!(String::from("agent-a"), s);
        assert_eq!(s, Cow::Borrowed("agent-a"));
        assert_ne!(s, "agent-b");
        assert_ne!("agent-b", s);
        assert_eq!(format!("{s}"), "agent-a");
        assert_eq!(format!("[{s:>9}]"), "[  agent-a]");
        assert_eq!(format!("{s:?}"), "\"agent-a\"");
        assert_eq!(format!("{:?}", SharedStr::from("a\"b\n")), r#""a\"b\n""#);
        assert_eq!(s.len(), 7);
        assert!(s.starts_with("agent"));
        assert_eq!(s.as_str(), "agent-a");
        let matched = match s.as_str() {
            "agent-a" => 1,
            _ => 2,
        };
        assert_eq!(matched, 1);
        assert_eq!(String::from(s.clone()), "agent-a");
        assert!(SharedStr::default().is_empty());
        // Every empty string is the one static empty string: none allocates.
        assert!(SharedStr::ptr_eq(
            &SharedStr::from(""),
            &SharedStr::from(String::new())
        ));
        assert_eq!("x".parse::<SharedStr>().unwrap(), "x");
    }

    #[test]
    fn clones_share_one_allocation_and_equal_text_is_equal() {
        let a = SharedStr::from(String::from("step"));
        let b = a.clone();
        assert!(SharedStr::ptr_eq(&a, &b));
        let c = SharedStr::from("step");
        assert!(!SharedStr::ptr_eq(&a, &c));
        assert_eq!(a, c);
        assert_eq!(
            std::mem::size_of::<SharedStr>(),
            std::mem::size_of::<usize>()
        );
        assert_eq!(
            std::mem::size_of::<Option<SharedStr>>(),
            std::mem::size_of::<usize>()
        );
        assert_eq!(
            std::mem::size_of::<crate::Edge>(),
            2 * std::mem::size_of::<usize>()
        );
    }

    #[test]
    fn it_hashes_and_orders_as_str_so_maps_look_up_by_str() {
        let mut by_name: HashMap<SharedStr, u32> = HashMap::new();
        by_name.insert("b".into(), 2);
        by_name.insert("a".into(), 1);
        assert_eq!(by_name.get("a"), Some(&1));
        assert_eq!(by_name.get("b"), Some(&2));
        assert_eq!(by_name.get("c"), None);
        let set: BTreeSet<SharedStr> = ["c", "a", "b"].into_iter().map(SharedStr::from).collect();
        let order: Vec<&str> = set.iter().map(SharedStr::as_str).collect();
        assert_eq!(order, ["a", "b", "c"]);
    }

    #[test]
    fn it_serialises_as_a_plain_string_and_reads_one_back() {
        let s = SharedStr::from("run-1:step \"q\":0");
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(json, r#""run-1:step \"q\":0""#);
        let back: SharedStr = serde_json::from_str(&json).unwrap();
        assert_eq!(back, s);
        let value: SharedStr = serde_json::from_value(serde_json::json!("v")).unwrap();
        assert_eq!(value, "v");
        let wrong = serde_json::from_str::<SharedStr>("42").unwrap_err();
        assert!(wrong.to_string().contains("a string"), "{wrong}");
    }
}

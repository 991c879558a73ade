//! [`EventBody`]: an event's `data`, held as the typed payload the engine built or as the JSON a
//! store, a host or a peer gave, and turned into a `serde_json::Value` only when a reader looks.

use crate::event::EventKind;
use crate::event_data::{EventPayload, PayloadError};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, OnceLock};

/// The `data` of an [`crate::Event`].
///
/// An event the engine emits holds its typed [`EventPayload`] (shared, in an `Arc`): serialising
/// it writes the JSON straight from the payload (the same bytes as serialising
/// [`EventPayload::to_data`]), and a sink that only counts events never builds any JSON. An
/// event read back from text, or built by a host from a `Value` (`json!(…).into()`), holds that
/// JSON.
///
/// Every reader of the JSON keeps working through `Deref<Target = Value>`
/// (`event.data["step"]`, `.get(..)`, `.is_null()`): the first such read builds the `Value`
/// from the payload once and keeps it. Two bodies are equal when their JSON is. A mutable
/// borrow (`DerefMut`: `event.data["x"] = …`) turns the body into its JSON form for good: the
/// typed payload is dropped, and the changed JSON is the data from then on.
#[derive(Clone, Default)]
pub struct EventBody {
    /// The typed payload, when the engine built this body and no one changed it since.
    typed: Option<Arc<EventPayload>>,
    /// The JSON: given (an untyped body), or built on the first read of a typed one.
    json: OnceLock<Arc<Value>>,
}

/// `Value::Null`, for a body without data.
static NULL: Value = Value::Null;

impl EventBody {
    /// A body holding the typed payload (its JSON is built only when read).
    pub fn typed(payload: impl Into<Arc<EventPayload>>) -> EventBody {
        EventBody {
            typed: Some(payload.into()),
            json: OnceLock::new(),
        }
    }

    /// A body holding `value` as its JSON.
    pub fn json(value: Value) -> EventBody {
        EventBody {
            typed: None,
            json: OnceLock::from(Arc::new(value)),
        }
    }

    /// The typed payload, when this body holds one (an event the engine emitted, unchanged).
    pub fn payload(&self) -> Option<&EventPayload> {
        self.typed.as_deref()
    }

    /// The typed payload, taken out of the body (still shared with any clone of it), when the
    /// body holds one.
    pub fn into_payload(self) -> Option<Arc<EventPayload>> {
        self.typed
    }

    /// The typed payload of an event of `kind`: the one held, when it is of that kind, or else
    /// the JSON read as that kind's payload.
    pub fn payload_of(&self, kind: EventKind) -> Result<EventPayload, PayloadError> {
        match self.payload() {
            Some(p) if p.kind() == kind => Ok(p.clone()),
            _ => EventPayload::from_data(kind, self.value()),
        }
    }

    /// True when the JSON is `null` (no data: the field is left out of the event's text).
    /// Does not build the JSON of a typed body (a payload is never `null`).
    pub fn is_null(&self) -> bool {
        self.typed.is_none() && self.value().is_null()
    }

    /// The JSON, built from the typed payload on the first call.
    pub fn value(&self) -> &Value {
        if let Some(v) = self.json.get() {
            return v;
        }
        let Some(typed) = &self.typed else {
            // A default body: neither a payload nor JSON.
            return &NULL;
        };
        self.json.get_or_init(|| Arc::new(data_of(typed)))
    }

    /// The JSON, taken out of the body.
    pub fn into_value(self) -> Value {
        self.value();
        match self.json.into_inner() {
            Some(v) => Arc::try_unwrap(v).unwrap_or_else(|shared| (*shared).clone()),
            None => Value::Null,
        }
    }
}

/// The JSON of a payload. Serialising a payload fails only for a map with non-string keys,
/// which no payload type has (their maps are `Map<String, Value>`); a reader then sees `null`,
/// as the kernel's sink did before payloads were kept typed.
fn data_of(payload: &EventPayload) -> Value {
    payload.to_data().unwrap_or(Value::Null)
}

impl Deref for EventBody {
    type Target = Value;

    fn deref(&self) -> &Value {
        self.value()
    }
}

impl DerefMut for EventBody {
    fn deref_mut(&mut self) -> &mut Value {
        let json = match self.json.take() {
            Some(v) => v,
            None => Arc::new(self.typed.as_deref().map_or(Value::Null, data_of)),
        };
        self.typed = None;
        self.json = OnceLock::from(json);
        // Invariant: `json` was set on the line above, and `&mut self` keeps anyone else from
        // taking it in between.
        #[allow(clippy::expect_used)]
        let json = self.json.get_mut().expect("the JSON was set just above");
        Arc::make_mut(json)
    }
}

impl From<Value> for EventBody {
    fn from(value: Value) -> Self {
        EventBody::json(value)
    }
}

impl From<EventPayload> for EventBody {
    fn from(payload: EventPayload) -> Self {
        EventBody::typed(payload)
    }
}

impl From<Arc<EventPayload>> for EventBody {
    fn from(payload: Arc<EventPayload>) -> Self {
        EventBody::typed(payload)
    }
}

impl PartialEq for EventBody {
    fn eq(&self, other: &Self) -> bool {
        match (&self.typed, &other.typed) {
            (Some(a), Some(b)) if Arc::ptr_eq(a, b) => true,
            _ => self.value() == other.value(),
        }
    }
}

impl PartialEq<Value> for EventBody {
    fn eq(&self, other: &Value) -> bool {
        self.value() == other
    }
}

impl std::fmt::Debug for EventBody {
    /// The JSON's `Debug`, as the field read before it was typed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.value(), f)
    }
}

impl Serialize for EventBody {
    /// Straight from the typed payload when the body holds one (no `Value` tree), else the JSON.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match (&self.typed, self.json.get()) {
            (Some(p), _) => p.serialize(s),
            (None, Some(v)) => v.serialize(s),
            (None, None) => Value::Null.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for EventBody {
    /// Into the JSON form.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Value::deserialize(d).map(EventBody::json)
    }
}

impl PartialEq<EventBody> for Value {
    fn eq(&self, other: &EventBody) -> bool {
        self == other.value()
    }
}

//! The closed metadata vocabulary of the delegation records, in a2aflow's own namespace.
//!
//! Adding a key means changing this table, both schemas in `schemas/`, the guide and the
//! agreement test (`tests/delegation_schema.rs`) in the same commit; that test fails otherwise.

/// Prefixes a key name with the namespace; the one place the namespace literal is written.
macro_rules! namespaced {
    ($name:literal) => {
        concat!("a2aflow/", $name)
    };
}

/// The namespace every delegation metadata key lives in.
pub const METADATA_NAMESPACE: &str = namespaced!("");

/// Which records a metadata key may appear on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KeyScope {
    /// The request message and the task record.
    Both,
    /// The task record only.
    Task,
}

macro_rules! metadata_keys {
    ($( $(#[doc = $doc:literal])* $variant:ident, $konst:ident => $name:literal, $scope:ident; )*) => {
        /// The full metadata keys as string constants (`a2aflow/kind`, …).
        pub mod keys {
            $( $(#[doc = $doc])* pub const $konst: &str = namespaced!($name); )*
        }

        /// One key of the closed delegation metadata vocabulary.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[non_exhaustive]
        pub enum MetadataKey {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl MetadataKey {
            /// Every key, in the seed's order.
            pub const ALL: &'static [MetadataKey] = &[ $( MetadataKey::$variant, )* ];

            /// The full key, namespace included (`a2aflow/executionId`).
            pub const fn as_str(self) -> &'static str {
                match self { $( MetadataKey::$variant => keys::$konst, )* }
            }

            /// The key without its namespace (`executionId`).
            pub const fn name(self) -> &'static str {
                match self { $( MetadataKey::$variant => $name, )* }
            }

            /// Which records the key may appear on.
            pub const fn scope(self) -> KeyScope {
                match self { $( MetadataKey::$variant => KeyScope::$scope, )* }
            }

            /// Parses a full key (namespace included).
            pub fn parse(key: &str) -> Option<MetadataKey> {
                Self::ALL.iter().copied().find(|k| k.as_str() == key)
            }
        }
    };
}

metadata_keys! {
    /// Which record this is: `delegation_request` or `delegation_task`.
    Kind, KIND => "kind", Both;
    /// The child execution this task stands for (absent on a refusal and on a request).
    ExecutionId, EXECUTION_ID => "executionId", Task;
    /// The execution that made the call.
    ParentExecutionId, PARENT_EXECUTION_ID => "parentExecutionId", Both;
    /// The first execution of the tree; null when the caller is the root.
    RootExecutionId, ROOT_EXECUTION_ID => "rootExecutionId", Both;
    /// The workflow asked to run, or that ran.
    FlowId, FLOW_ID => "flowId", Both;
    /// That workflow's name at call time, for reading.
    FlowName, FLOW_NAME => "flowName", Both;
    /// Distance from the root: 0 is the root, 1 a direct child.
    Depth, DEPTH => "depth", Both;
    /// The execution status the task state was mapped from.
    Status, STATUS => "status", Task;
    /// Estimated cost of the child so far, in USD.
    Cost, COST => "cost", Task;
    /// Total tokens the child has spent so far.
    Tokens, TOKENS => "tokens", Task;
    /// Console link to the execution.
    ConsoleUrl, CONSOLE_URL => "consoleUrl", Both;
    /// Which rule declined the call; present only on a refusal.
    RefusalReason, REFUSAL_REASON => "refusalReason", Task;
}

impl MetadataKey {
    /// True when the key may appear on a request message.
    pub const fn allowed_on_request(self) -> bool {
        matches!(self.scope(), KeyScope::Both)
    }
}

/// Keys every request message carries.
pub const REQUEST_REQUIRED: &[MetadataKey] = &[
    MetadataKey::Kind,
    MetadataKey::ParentExecutionId,
    MetadataKey::FlowId,
    MetadataKey::Depth,
];

/// Keys every task record that is not a refusal carries.
pub const TASK_REQUIRED: &[MetadataKey] = &[
    MetadataKey::Kind,
    MetadataKey::FlowId,
    MetadataKey::Depth,
    MetadataKey::Status,
    MetadataKey::ExecutionId,
];

/// Keys every refused task record (`TASK_STATE_REJECTED`) carries.
pub const REFUSED_TASK_REQUIRED: &[MetadataKey] = &[
    MetadataKey::Kind,
    MetadataKey::FlowId,
    MetadataKey::Depth,
    MetadataKey::Status,
    MetadataKey::RefusalReason,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_namespaced_unique_and_parses_back() {
        assert_eq!(METADATA_NAMESPACE, "a2aflow/");
        let mut seen = std::collections::HashSet::new();
        for &key in MetadataKey::ALL {
            assert_eq!(key.as_str(), format!("{METADATA_NAMESPACE}{}", key.name()));
            assert!(seen.insert(key.as_str()), "duplicate key {}", key.as_str());
            assert_eq!(MetadataKey::parse(key.as_str()), Some(key));
        }
        assert_eq!(MetadataKey::ALL.len(), 12);
        assert_eq!(MetadataKey::parse("preloop.ai/kind"), None);
        assert_eq!(MetadataKey::parse("kind"), None);
    }

    #[test]
    fn request_keys_are_the_both_scoped_ones() {
        let on_request: Vec<&str> = MetadataKey::ALL
            .iter()
            .filter(|k| k.allowed_on_request())
            .map(|k| k.name())
            .collect();
        assert_eq!(
            on_request,
            [
                "kind",
                "parentExecutionId",
                "rootExecutionId",
                "flowId",
                "flowName",
                "depth",
                "consoleUrl"
            ]
        );
        assert!(REQUEST_REQUIRED.iter().all(|k| k.allowed_on_request()));
    }
}

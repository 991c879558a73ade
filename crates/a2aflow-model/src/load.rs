//! Loading a workflow document (the PSOP format) from text or from a `serde_json::Value`.
//!
//! What the loader accepts (see `docs/guide/workflows.md` for the full table):
//!
//! * an optional orchestration-center wrapper: a top-level object with a `data` object and no
//!   `steps` member is unwrapped (its sibling members such as `code`/`msg` belong to the wrapper
//!   and are ignored); problem paths still start at the document root (`/data/steps/0/...`);
//! * keys in snake_case and camelCase: `context_from`/`contextFrom`, `callable_by`/`callableBy`;
//!   `subtasks` with the alias `tasks`; the step type under `step_type`, `stepType` or `type`;
//! * when a document gives the same thing under several aliases, the first of this precedence
//!   wins: `step_type` > `stepType` > `type`; `subtasks` > `tasks`; `context_from` >
//!   `contextFrom`; `callable_by` > `callableBy`. Every alias present is still type-checked, and
//!   an alias that is shadowed with a *different* value gives a warning;
//! * step type values case-insensitively, with or without one `_` between the words:
//!   `AllSuccess`, `ALL_SUCCESS`, `all_success`, `anysuccess`, `Self_Loop`, … Anything else is a
//!   `workflow.unknown_enum_value` error, never a silent default;
//! * `contextFrom` as a string or a list of strings: `"*"` or `["*"]` is
//!   [`ContextFrom::AllAncestors`], absent or `null` is [`ContextFrom::Predecessors`], any other
//!   list (including `[]`, and including `"*"` mixed with names, which
//!   [`crate::validate()`] reports) is [`ContextFrom::Steps`] exactly as written;
//! * `layer` (a number), accepted and ignored by scheduling;
//! * a subtask naming `workflow` (a child workflow id) instead of `agent`;
//! * `null` wherever a member may be absent.
//!
//! A value of the wrong type is a `workflow.invalid_document` error; a key the format does not
//! know is a `workflow.unknown_key` warning (an error with [`LoadOptions::strict`]). Every problem
//! is reported at once, each with its JSON pointer and, when loaded from text, line and column.
//! Loading does not validate the graph: run [`crate::validate()`] on the result.

mod direct;
mod policy;

use crate::SharedStr;
use crate::definition::{ContextFrom, Edge, Step, StepType, Subtask, Workflow};
use crate::error_code::{ErrorCode, Failure};
use crate::names::{first_hidden, is_invisible_character, visible};
use crate::problem::{Position, Problem, pointer_token, problems_to_failure, write_problems};
use crate::source_map::SourceMap;
use crate::validate::ValidationErrors;
use serde_json::{Map, Value};

/// How strictly to load, and how much.
///
/// The limits bound what one document may cost before a byte of it is parsed: the document's
/// size ([`LoadOptions::max_document_bytes`], checked before parsing) and its step count
/// ([`LoadOptions::max_steps`], checked before any step is read). Both are
/// `workflow.too_large` errors. The defaults are far above any hand-written workflow and keep a
/// hostile one cheap (see `docs/guide/workflows.md`, "Limits"); change them with
/// [`LoadOptions::with_max_document_bytes`] and [`LoadOptions::with_max_steps`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadOptions {
    /// Unknown keys are errors instead of warnings.
    pub strict: bool,
    /// The largest document accepted, in bytes of JSON text.
    pub max_document_bytes: usize,
    /// The most steps a workflow may have.
    pub max_steps: usize,
}

impl LoadOptions {
    /// The default [`LoadOptions::max_document_bytes`]: 4 MiB.
    pub const DEFAULT_MAX_DOCUMENT_BYTES: usize = 4 * 1024 * 1024;
    /// The default [`LoadOptions::max_steps`]: 10,000.
    pub const DEFAULT_MAX_STEPS: usize = 10_000;
    /// Unknown keys are errors; default limits.
    pub const STRICT: LoadOptions = LoadOptions {
        strict: true,
        max_document_bytes: Self::DEFAULT_MAX_DOCUMENT_BYTES,
        max_steps: Self::DEFAULT_MAX_STEPS,
    };
    /// Unknown keys are warnings (the default); default limits.
    pub const LENIENT: LoadOptions = LoadOptions {
        strict: false,
        ..Self::STRICT
    };

    /// The same options with another document size limit (bytes).
    #[must_use]
    pub const fn with_max_document_bytes(mut self, bytes: usize) -> Self {
        self.max_document_bytes = bytes;
        self
    }

    /// The same options with another step count limit.
    #[must_use]
    pub const fn with_max_steps(mut self, steps: usize) -> Self {
        self.max_steps = steps;
        self
    }
}

impl Default for LoadOptions {
    /// [`LoadOptions::LENIENT`].
    fn default() -> Self {
        Self::LENIENT
    }
}

/// A loaded workflow and the warnings found on the way.
///
/// It keeps nothing of the text it was loaded from: [`Loaded::locate`] is given the text again
/// when validation problems have to be placed in it.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The workflow (not yet validated: see [`crate::validate()`]).
    pub workflow: Workflow,
    /// Problems that did not stop loading: unknown keys when not strict, aliases shadowed with a
    /// different value, keys repeated in one object (text only).
    pub warnings: Vec<Problem>,
    /// JSON pointer of the workflow object inside the document (`""` or `"/data"`).
    root: String,
}

impl Loaded {
    /// JSON pointer of the workflow object inside the document: `""`, or `"/data"` when the
    /// document was wrapped.
    pub fn root_pointer(&self) -> &str {
        &self.root
    }

    /// Rewrites validation problems (whose paths are relative to the workflow) into document
    /// pointers, and, given `text` (the text this workflow was loaded from; `None` for one
    /// loaded from a value), adds line and column. The text is scanned for positions only when
    /// there is a problem to place; a text other than the one loaded gives wrong positions.
    pub fn locate(&self, text: Option<&str>, errors: &mut ValidationErrors) {
        if errors.problems.is_empty() {
            return;
        }
        let map = text.map(SourceMap::new);
        for p in &mut errors.problems {
            p.path = format!("{}{}", self.root, p.path);
            if let Some(map) = &map {
                // Validation speaks the canonical keys; the text may use an alias.
                let spelled = [("/contextFrom", "/context_from"), ("/subtasks", "/tasks")]
                    .iter()
                    .filter(|(canonical, _)| p.path.contains(canonical))
                    .map(|(canonical, alias)| p.path.replace(canonical, alias))
                    .find(|alias_path| map.value_position(alias_path).is_some());
                p.position = map.locate(spelled.as_deref().unwrap_or(&p.path));
            }
        }
    }
}

/// The document could not be loaded; every problem found is listed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub struct LoadErrors {
    /// The problems that stop loading, in document order.
    pub problems: Vec<Problem>,
    /// Warnings found as well (never empty of meaning: fix them too).
    pub warnings: Vec<Problem>,
}

impl std::fmt::Display for LoadErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write_problems(f, "cannot load workflow", &self.problems)
    }
}

impl LoadErrors {
    /// One [`Failure`]: the first problem's code, all messages, the problems as details.
    pub fn to_failure(&self) -> Failure {
        problems_to_failure(
            ErrorCode::WorkflowInvalidDocument,
            "cannot load workflow",
            &self.problems,
        )
    }
}

/// One problem that stops loading, as the error of a load.
fn stop(problem: Problem) -> LoadErrors {
    LoadErrors {
        problems: vec![problem],
        warnings: Vec::new(),
    }
}

/// A `workflow.too_large` problem for a document of more than `limit` bytes.
fn too_many_bytes(limit: usize) -> Problem {
    Problem::new(
        ErrorCode::WorkflowTooLarge,
        "",
        format!(
            "the workflow document is larger than the limit of {limit} bytes; split the workflow or raise the limit (LoadOptions::max_document_bytes)"
        ),
    )
}

/// The position of byte `offset` of `text` (which must be a char boundary): 1-based line and
/// column, columns counting characters.
fn position_of(text: &str, offset: usize) -> Position {
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Position {
        line: before.matches('\n').count() + 1,
        column: before[line_start..].chars().count() + 1,
    }
}

const BOM: &str = "\u{feff}";

/// A hint for a document that is not JSON but looks like YAML (a `---` start, a `- ` list item
/// or a `key:` line first): only JSON is accepted.
fn yaml_hint(text: &str) -> &'static str {
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'));
    let yaml = first.is_some_and(|l| {
        l.starts_with("---")
            || l.starts_with("- ")
            || l.split_once(':').is_some_and(|(key, _)| {
                !key.is_empty()
                    && key
                        .chars()
                        .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | ' '))
            })
    });
    if yaml {
        "; it looks like YAML, and only JSON is accepted (convert it to JSON first)"
    } else {
        ""
    }
}

fn bom_problem() -> Problem {
    let mut p = Problem::new(
        ErrorCode::WorkflowInvalidEncoding,
        "",
        "the workflow document starts with a UTF-8 byte order mark (BOM); only JSON in UTF-8 without a BOM is accepted, so save the file without it",
    );
    p.position = Some(Position { line: 1, column: 1 });
    p
}

/// Loads a workflow from the bytes of a file or a body: the size limit is checked first, then
/// the encoding (UTF-8 without a byte order mark; anything else is a `workflow.invalid_encoding`
/// problem at the first offending byte), then the text is loaded as by [`load_workflow_str`].
pub fn load_workflow_bytes(bytes: &[u8], options: LoadOptions) -> Result<Loaded, LoadErrors> {
    if bytes.len() > options.max_document_bytes {
        return Err(stop(too_many_bytes(options.max_document_bytes)));
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => return Err(stop(not_utf8(bytes, e))),
    };
    load_workflow_str(text, options)
}

fn not_utf8(bytes: &[u8], e: std::str::Utf8Error) -> Problem {
    let at = e.valid_up_to();
    let hint = if bytes.starts_with(&[0xff, 0xfe]) || bytes.starts_with(&[0xfe, 0xff]) {
        " (it looks like UTF-16)"
    } else {
        ""
    };
    // The prefix up to the error is valid UTF-8 by definition of `valid_up_to`.
    let valid = std::str::from_utf8(&bytes[..at]).unwrap_or_default();
    let mut p = Problem::new(
        ErrorCode::WorkflowInvalidEncoding,
        "",
        format!(
            "the workflow document is not valid UTF-8{hint}: byte 0x{:02x} at offset {at} does not start a UTF-8 character; save the file as UTF-8 (without a BOM)",
            bytes[at]
        ),
    );
    p.position = Some(position_of(valid, at));
    p
}

/// Loads a workflow from JSON text. Problems carry line and column. A text longer than
/// [`LoadOptions::max_document_bytes`] or starting with a byte order mark is refused before
/// parsing.
pub fn load_workflow_str(text: &str, options: LoadOptions) -> Result<Loaded, LoadErrors> {
    if text.len() > options.max_document_bytes {
        return Err(stop(too_many_bytes(options.max_document_bytes)));
    }
    if text.starts_with(BOM) {
        return Err(stop(bom_problem()));
    }
    // A document without a single problem loads in one streaming pass; any other is loaded
    // again below, where every problem is found and located.
    if let Some(loaded) = direct::load(text, options) {
        return Ok(loaded);
    }
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            let mut p = Problem::new(
                ErrorCode::WorkflowInvalidDocument,
                "",
                format!(
                    "the workflow document is not valid JSON: {e}{}",
                    yaml_hint(text)
                ),
            );
            if e.line() > 0 {
                p.position = Some(Position {
                    line: e.line(),
                    column: e.column().max(1),
                });
            }
            return Err(LoadErrors {
                problems: vec![p],
                warnings: Vec::new(),
            });
        }
    };
    let map = SourceMap::new(text);
    let locate = |problems: &mut Vec<Problem>| {
        for p in problems.iter_mut() {
            p.position = if p.code == ErrorCode::WorkflowUnknownKey {
                map.key_position(&p.path).or_else(|| map.locate(&p.path))
            } else {
                map.locate(&p.path)
            };
        }
    };
    let duplicates: Vec<Problem> = map
        .duplicate_keys()
        .iter()
        .map(|path| {
            let key = path.rsplit('/').next().unwrap_or_default();
            let key = visible(key);
            Problem::new(
                ErrorCode::WorkflowDuplicateKey,
                path.clone(),
                format!("key `{key}` appears more than once in the same object; only the last one counts, so remove the others"),
            )
        })
        .collect();
    match load_workflow_value(&value, options) {
        Ok(mut loaded) => {
            loaded.warnings.splice(0..0, duplicates);
            locate(&mut loaded.warnings);
            Ok(loaded)
        }
        Err(mut errors) => {
            errors.warnings.splice(0..0, duplicates);
            locate(&mut errors.problems);
            locate(&mut errors.warnings);
            Err(errors)
        }
    }
}

/// Loads a workflow from an already parsed JSON value. Problems carry no position.
pub fn load_workflow_value(value: &Value, options: LoadOptions) -> Result<Loaded, LoadErrors> {
    let mut cx = Cx::new(options);
    let (root, doc) = match value {
        Value::Object(top) if !top.contains_key("steps") => match top.get("data") {
            Some(inner @ Value::Object(_)) => ("/data".to_owned(), inner),
            _ => (String::new(), value),
        },
        _ => (String::new(), value),
    };
    let workflow = match doc {
        Value::Object(obj) => cx.workflow(obj, &root),
        other => {
            cx.error(
                &root,
                format!(
                    "the workflow document must be a JSON object, found {}",
                    kind(other)
                ),
            );
            Workflow::default()
        }
    };
    if cx.errors.is_empty() {
        Ok(Loaded {
            workflow,
            warnings: cx.warnings,
            root,
        })
    } else {
        Err(LoadErrors {
            problems: cx.errors,
            warnings: cx.warnings,
        })
    }
}

/// Parses a step type value: case-insensitive, with or without one `_` between the words.
pub fn parse_step_type(text: &str) -> Option<StepType> {
    let lower = text.to_ascii_lowercase();
    let squashed = lower.replacen('_', "", 1);
    let one_underscore_at_word_break = match lower.find('_') {
        None => true,
        Some(i) => matches!(
            (&lower[..i], &lower[i + 1..]),
            ("all" | "any", "success") | ("self", "loop")
        ),
    };
    if !one_underscore_at_word_break {
        return None;
    }
    match squashed.as_str() {
        "allsuccess" => Some(StepType::AllSuccess),
        "anysuccess" => Some(StepType::AnySuccess),
        "selfloop" => Some(StepType::SelfLoop),
        _ => None,
    }
}

const WORKFLOW_KEYS: &[&str] = &[
    "id",
    "name",
    "description",
    "steps",
    "callable_by",
    "callableBy",
];
const STEP_KEYS: &[&str] = &[
    "name",
    "subtasks",
    "tasks",
    "next",
    "step_type",
    "stepType",
    "type",
    "context_from",
    "contextFrom",
    "layer",
    "timeout",
];
const SUBTASK_KEYS: &[&str] = &[
    "agent",
    "skill",
    "description",
    "workflow",
    "retry",
    "timeout",
];
const EDGE_KEYS: &[&str] = &["step", "condition"];

/// The loader's working state: problems so far, and the edges' texts.
struct Cx {
    strict: bool,
    max_steps: usize,
    errors: Vec<Problem>,
    warnings: Vec<Problem>,
    names: Names,
}

/// The edges' texts of one document, each held once: every [`Edge`] to the same step shares its
/// name's [`SharedStr`], every equal condition another.
#[derive(Default)]
struct Names {
    set: std::collections::HashSet<SharedStr>,
}

impl Names {
    /// The shared name equal to `name` (the empty text, most edges' condition, allocates
    /// nothing: see [`SharedStr::default`]).
    fn get(&mut self, name: &str) -> SharedStr {
        if name.is_empty() {
            return SharedStr::default();
        }
        if let Some(shared) = self.set.get(name) {
            return shared.clone();
        }
        let shared = SharedStr::from(name);
        self.set.insert(shared.clone());
        shared
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn child(path: &str, key: &str) -> String {
    format!("{path}/{}", pointer_token(key))
}

impl Cx {
    fn new(options: LoadOptions) -> Self {
        Cx {
            strict: options.strict,
            max_steps: options.max_steps,
            errors: Vec::new(),
            warnings: Vec::new(),
            names: Names::default(),
        }
    }

    /// True once any error or warning was found.
    fn has_problems(&self) -> bool {
        !self.errors.is_empty() || !self.warnings.is_empty()
    }

    fn error(&mut self, path: &str, message: String) {
        self.errors.push(Problem::new(
            ErrorCode::WorkflowInvalidDocument,
            path,
            message,
        ));
    }

    fn unknown_keys(&mut self, obj: &Map<String, Value>, known: &[&str], path: &str, what: &str) {
        for key in obj.keys() {
            if known.contains(&key.as_str()) {
                continue;
            }
            let p = Problem::new(
                ErrorCode::WorkflowUnknownKey,
                child(path, key),
                format!(
                    "unknown key `{}` in {what} (known keys: {})",
                    visible(key),
                    known.join(", ")
                ),
            );
            if self.strict {
                self.errors.push(p);
            } else {
                self.warnings.push(p);
            }
        }
    }

    /// The members present under any of `aliases`, in precedence order; warns when a shadowed
    /// alias says something different from the winner.
    fn aliased<'v>(
        &mut self,
        obj: &'v Map<String, Value>,
        aliases: &[&'static str],
        path: &str,
    ) -> Vec<(&'static str, &'v Value)> {
        let present: Vec<(&'static str, &'v Value)> = aliases
            .iter()
            .filter_map(|&k| obj.get(k).map(|v| (k, v)))
            .collect();
        if let Some(&(winner, wv)) = present.first() {
            for &(k, v) in &present[1..] {
                if v != wv {
                    self.warnings.push(Problem::new(
                        ErrorCode::WorkflowShadowedAlias,
                        child(path, k),
                        format!("`{k}` is ignored because `{winner}` is also given with a different value; keep one of them"),
                    ));
                }
            }
        }
        present
    }

    /// A string member that is a name or id: [`Cx::string`], and a warning when it holds an
    /// invisible character.
    fn name(&mut self, obj: &Map<String, Value>, key: &str, path: &str) -> Option<String> {
        let value = self.string(obj, key, path);
        // The path is only formatted for a name that needs the warning.
        if let Some(v) = value
            .as_deref()
            .filter(|v| first_hidden(v, is_invisible_character).is_some())
        {
            self.invisible(v, key, &child(path, key));
        }
        value
    }

    /// A `workflow.invisible_character` warning when the name `value` (member `key` at `path`)
    /// holds an invisible character.
    fn invisible(&mut self, value: &str, key: &str, path: &str) {
        if let Some((at, c)) = first_hidden(value, is_invisible_character) {
            self.warnings.push(Problem::new(
                ErrorCode::WorkflowInvisibleCharacter,
                path,
                format!(
                    "`{key}` '{}' contains the invisible character U+{:04X} (character {}), so it looks like a name it is not; remove it",
                    visible(value),
                    u32::from(c),
                    at + 1
                ),
            ));
        }
    }

    /// A string member; `null` and absence give `None`.
    fn string(&mut self, obj: &Map<String, Value>, key: &str, path: &str) -> Option<String> {
        match obj.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                self.error(
                    &child(path, key),
                    format!("`{key}` must be a string, found {}", kind(other)),
                );
                None
            }
        }
    }

    fn string_list(&mut self, v: &Value, key: &str, path: &str) -> Option<Vec<String>> {
        match v {
            Value::Null => None,
            Value::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::String(s) => out.push(s.clone()),
                        other => self.error(
                            &format!("{path}/{i}"),
                            format!("`{key}` entries must be strings, found {}", kind(other)),
                        ),
                    }
                }
                Some(out)
            }
            other => {
                self.error(
                    path,
                    format!("`{key}` must be a list of strings, found {}", kind(other)),
                );
                None
            }
        }
    }

    /// A list of objects; `null` and absence give an empty list.
    fn object_list<'v>(
        &mut self,
        v: Option<&'v Value>,
        key: &str,
        path: &str,
    ) -> Vec<(String, &'v Map<String, Value>)> {
        match v {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .filter_map(|(i, item)| {
                    let p = format!("{path}/{i}");
                    match item {
                        Value::Object(o) => Some((p, o)),
                        other => {
                            self.error(
                                &p,
                                format!("`{key}` entries must be objects, found {}", kind(other)),
                            );
                            None
                        }
                    }
                })
                .collect(),
            Some(other) => {
                self.error(
                    path,
                    format!("`{key}` must be a list, found {}", kind(other)),
                );
                Vec::new()
            }
        }
    }

    fn workflow(&mut self, obj: &Map<String, Value>, path: &str) -> Workflow {
        let (id, name, description, callable_by) = self.head(obj, path);
        let steps_path = child(path, "steps");
        let steps = match obj.get("steps") {
            Some(Value::Array(items)) if items.len() > self.max_steps => {
                self.errors.push(Problem::new(
                    ErrorCode::WorkflowTooLarge,
                    steps_path,
                    format!(
                        "the workflow has {} steps, more than the limit of {}; split the workflow or raise the limit (LoadOptions::max_steps)",
                        items.len(),
                        self.max_steps
                    ),
                ));
                Vec::new()
            }
            steps => self.steps(steps, &steps_path),
        };
        Workflow {
            id,
            name,
            description,
            steps,
            callable_by,
        }
    }

    /// The workflow's members other than `steps`, and its unknown keys: id, name, description
    /// and `callable_by`.
    fn head(
        &mut self,
        obj: &Map<String, Value>,
        path: &str,
    ) -> (String, String, String, Option<Vec<String>>) {
        self.unknown_keys(obj, WORKFLOW_KEYS, path, "the workflow");
        let id = self.name(obj, "id", path).unwrap_or_default();
        let name = self.name(obj, "name", path).unwrap_or_default();
        let description = self.string(obj, "description", path).unwrap_or_default();
        let mut callable_by = None;
        for (i, (key, v)) in self
            .aliased(obj, &["callable_by", "callableBy"], path)
            .into_iter()
            .enumerate()
        {
            let list = self.string_list(v, key, &child(path, key));
            if i == 0 {
                callable_by = list;
            }
        }
        (id, name, description, callable_by)
    }

    fn steps(&mut self, steps: Option<&Value>, steps_path: &str) -> Vec<Step> {
        self.object_list(steps, "steps", steps_path)
            .into_iter()
            .map(|(p, o)| self.step(o, &p))
            .collect()
    }

    fn step(&mut self, obj: &Map<String, Value>, path: &str) -> Step {
        self.step_with(obj, path, None)
    }

    /// A step; `next`, when given, holds its edges already read (and `obj` lacks them).
    fn step_with(&mut self, obj: &Map<String, Value>, path: &str, next: Option<Vec<Edge>>) -> Step {
        self.unknown_keys(obj, STEP_KEYS, path, "a step");
        let name = self.name(obj, "name", path).unwrap_or_default();

        let mut subtasks = Vec::new();
        for (i, (key, v)) in self
            .aliased(obj, &["subtasks", "tasks"], path)
            .into_iter()
            .enumerate()
        {
            let list: Vec<Subtask> = self
                .object_list(Some(v), key, &child(path, key))
                .into_iter()
                .map(|(p, o)| self.subtask(o, &p))
                .collect();
            if i == 0 {
                subtasks = list;
            }
        }

        let next = match next {
            Some(next) => next,
            None => self
                .object_list(obj.get("next"), "next", &child(path, "next"))
                .into_iter()
                .map(|(p, o)| self.edge(o, &p))
                .collect(),
        };

        let mut step_type = StepType::default();
        for (i, (key, v)) in self
            .aliased(obj, &["step_type", "stepType", "type"], path)
            .into_iter()
            .enumerate()
        {
            let parsed = self.step_type(v, key, &child(path, key), &name);
            if i == 0 {
                step_type = parsed.unwrap_or_default();
            }
        }

        let mut context_from = ContextFrom::default();
        for (i, (key, v)) in self
            .aliased(obj, &["context_from", "contextFrom"], path)
            .into_iter()
            .enumerate()
        {
            let parsed = self.context_from(v, key, &child(path, key));
            if i == 0 {
                context_from = parsed;
            }
        }

        let layer = match obj.get("layer") {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) => match (n.as_i64(), n.as_f64()) {
                (Some(i), _) => Some(i),
                (None, Some(f)) if f.fract() == 0.0 => {
                    // Integral but outside i64 (or written as 1.0): accepted; kept only when it fits.
                    if f >= i64::MIN as f64 && f <= i64::MAX as f64 {
                        Some(f as i64)
                    } else {
                        None
                    }
                }
                _ => {
                    self.error(
                        &child(path, "layer"),
                        format!("`layer` must be a whole number, found {n}"),
                    );
                    None
                }
            },
            Some(other) => {
                self.error(
                    &child(path, "layer"),
                    format!("`layer` must be a whole number, found {}", kind(other)),
                );
                None
            }
        };

        let timeout = self.seconds(obj, "timeout", path);
        Step {
            name,
            subtasks,
            next,
            step_type,
            context_from,
            layer,
            timeout,
        }
    }

    fn step_type(&mut self, v: &Value, key: &str, path: &str, step: &str) -> Option<StepType> {
        match v {
            Value::Null => None,
            Value::String(s) => {
                let parsed = parse_step_type(s);
                if parsed.is_none() {
                    self.errors.push(
                        Problem::new(
                            ErrorCode::WorkflowUnknownEnumValue,
                            path,
                            format!(
                                "step '{}' has unknown step type '{}': use AllSuccess, AnySuccess or SelfLoop (any case, ALL_SUCCESS style also accepted)",
                                visible(step),
                                visible(s)
                            ),
                        )
                        .with_steps([step]),
                    );
                }
                parsed
            }
            other => {
                self.error(
                    path,
                    format!("`{key}` must be a string, found {}", kind(other)),
                );
                None
            }
        }
    }

    fn context_from(&mut self, v: &Value, key: &str, path: &str) -> ContextFrom {
        match v {
            Value::Null => ContextFrom::Predecessors,
            Value::String(s) => {
                self.invisible(s, key, path);
                ContextFrom::from_names(vec![s.clone()])
            }
            Value::Array(_) => {
                let names = self.string_list(v, key, path);
                for (i, s) in names.iter().flatten().enumerate() {
                    self.invisible(s, key, &format!("{path}/{i}"));
                }
                names.map_or(ContextFrom::Predecessors, ContextFrom::from_names)
            }
            other => {
                self.error(
                    path,
                    format!(
                        "`{key}` must be a string or a list of strings, found {}",
                        kind(other)
                    ),
                );
                ContextFrom::Predecessors
            }
        }
    }

    fn subtask(&mut self, obj: &Map<String, Value>, path: &str) -> Subtask {
        self.unknown_keys(obj, SUBTASK_KEYS, path, "a subtask");
        Subtask {
            agent: self.name(obj, "agent", path).unwrap_or_default(),
            skill: self.string(obj, "skill", path).unwrap_or_default(),
            description: self.string(obj, "description", path).unwrap_or_default(),
            workflow: self.name(obj, "workflow", path),
            retry: self.retry(obj, path),
            timeout: self.seconds(obj, "timeout", path),
        }
    }

    fn edge(&mut self, obj: &Map<String, Value>, path: &str) -> Edge {
        self.unknown_keys(obj, EDGE_KEYS, path, "a `next` entry");
        let step = self.name(obj, "step", path).unwrap_or_default();
        Edge {
            step: self.names.get(&step),
            condition: {
                let condition = self.string(obj, "condition", path).unwrap_or_default();
                self.names.get(&condition)
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn load(text: &str) -> Loaded {
        load_workflow_str(text, LoadOptions::default()).unwrap()
    }

    fn errors(text: &str, options: LoadOptions) -> Vec<Problem> {
        load_workflow_str(text, options).unwrap_err().problems
    }

    #[test]
    fn snake_and_camel_case_load_the_same_workflow() {
        let snake = load(
            r#"{"id":"w","name":"n","description":"d","callable_by":["p"],"steps":[
                {"name":"a","subtasks":[{"agent":"x","skill":"s","description":"do"}],
                 "next":[{"step":"b","condition":"ok?"}],"step_type":"ANY_SUCCESS","layer":0},
                {"name":"b","tasks":[{"agent":"y"}],"context_from":["a"]}]}"#,
        );
        let camel = load(
            r#"{"id":"w","name":"n","description":"d","callableBy":["p"],"steps":[
                {"name":"a","subtasks":[{"agent":"x","skill":"s","description":"do"}],
                 "next":[{"step":"b","condition":"ok?"}],"stepType":"AnySuccess","layer":0},
                {"name":"b","subtasks":[{"agent":"y"}],"contextFrom":"a"}]}"#,
        );
        assert!(snake.warnings.is_empty(), "{:?}", snake.warnings);
        assert!(camel.warnings.is_empty(), "{:?}", camel.warnings);
        assert_eq!(snake.workflow, camel.workflow);
        let w = snake.workflow;
        assert_eq!(w.callable_by, Some(vec!["p".to_owned()]));
        assert_eq!(w.steps[0].step_type, StepType::AnySuccess);
        assert_eq!(w.steps[0].layer, Some(0));
        assert_eq!(&*w.steps[0].next[0].condition, "ok?");
        assert_eq!(w.steps[1].subtasks[0].agent, "y");
        assert_eq!(
            w.steps[1].context_from,
            ContextFrom::Steps(vec!["a".into()])
        );
    }

    #[test]
    fn s_val_18_type_fallback_and_default() {
        let w = load(r#"{"steps":[{"name":"a","type":"AnySuccess"},{"name":"b"}]}"#).workflow;
        assert_eq!(w.steps[0].step_type, StepType::AnySuccess);
        assert_eq!(w.steps[1].step_type, StepType::AllSuccess);
    }

    #[test]
    fn step_type_values_are_case_insensitive() {
        for (text, want) in [
            ("AllSuccess", StepType::AllSuccess),
            ("ALL_SUCCESS", StepType::AllSuccess),
            ("all_success", StepType::AllSuccess),
            ("allsuccess", StepType::AllSuccess),
            ("AnySuccess", StepType::AnySuccess),
            ("any_SUCCESS", StepType::AnySuccess),
            ("SelfLoop", StepType::SelfLoop),
            ("SELF_LOOP", StepType::SelfLoop),
        ] {
            assert_eq!(parse_step_type(text), Some(want), "{text}");
        }
        for bad in [
            "",
            "All",
            "AllSucces",
            "ALL__SUCCESS",
            "_ALLSUCCESS",
            "AL_LSUCCESS",
            "ALL-SUCCESS",
            "ALL SUCCESS",
        ] {
            assert_eq!(parse_step_type(bad), None, "{bad}");
        }
    }

    #[test]
    fn step_type_precedence_is_step_type_then_step_type_camel_then_type() {
        let loaded = load(
            r#"{"steps":[{"name":"a","type":"SelfLoop","stepType":"AnySuccess","step_type":"AllSuccess"}]}"#,
        );
        assert_eq!(loaded.workflow.steps[0].step_type, StepType::AllSuccess);
        let paths: Vec<_> = loaded.warnings.iter().map(|w| w.path.as_str()).collect();
        assert_eq!(paths, ["/steps/0/stepType", "/steps/0/type"]);
        assert!(
            loaded
                .warnings
                .iter()
                .all(|w| w.code == ErrorCode::WorkflowShadowedAlias)
        );
        assert!(
            loaded.warnings[0]
                .message
                .contains("`step_type` is also given")
        );
        // the same value under two aliases is no warning
        let same = load(r#"{"steps":[{"name":"a","type":"SelfLoop","step_type":"SELF_LOOP"}]}"#);
        assert_eq!(
            same.warnings.len(),
            1,
            "different spellings differ as values"
        );
        let identical =
            load(r#"{"steps":[{"name":"a","type":"SelfLoop","step_type":"SelfLoop"}]}"#);
        assert!(identical.warnings.is_empty());
    }

    #[test]
    fn unknown_step_type_is_an_error_with_path_and_position() {
        let text = "{\"steps\": [\n  {\"name\": \"a\", \"stepType\": \"Sometimes\"}\n]}";
        let problems = errors(text, LoadOptions::default());
        assert_eq!(problems.len(), 1);
        let p = &problems[0];
        assert_eq!(p.code, ErrorCode::WorkflowUnknownEnumValue);
        assert_eq!(p.path, "/steps/0/stepType");
        assert_eq!(p.steps, ["a"]);
        assert_eq!(
            p.position,
            Some(Position {
                line: 2,
                column: 29
            })
        );
        assert!(p.message.contains("'Sometimes'"), "{}", p.message);
    }

    #[test]
    fn s_val_20_context_from_forms() {
        let w = load(
            r#"{"steps":[
              {"name":"a","context_from":"prev_step"},
              {"name":"b","context_from":["a","b"]},
              {"name":"c","context_from":["*"]},
              {"name":"d","context_from":"*"},
              {"name":"e","context_from":[]},
              {"name":"f","context_from":null},
              {"name":"g"},
              {"name":"h","contextFrom":["*","a"]}]}"#,
        )
        .workflow;
        let cf: Vec<_> = w.steps.iter().map(|s| s.context_from.clone()).collect();
        assert_eq!(
            cf,
            [
                ContextFrom::Steps(vec!["prev_step".into()]),
                ContextFrom::Steps(vec!["a".into(), "b".into()]),
                ContextFrom::AllAncestors,
                ContextFrom::AllAncestors,
                ContextFrom::Steps(vec![]),
                ContextFrom::Predecessors,
                ContextFrom::Predecessors,
                ContextFrom::Steps(vec!["*".into(), "a".into()]),
            ]
        );
    }

    #[test]
    fn s_val_21_wrong_types_fail_clearly_all_at_once() {
        let problems = errors(
            r#"{"name":42,"steps":["not-an-object",{"name":"a","next":[null],"subtasks":{"agent":"x"},"context_from":7,"layer":"top"}]}"#,
            LoadOptions::default(),
        );
        let got: Vec<_> = problems
            .iter()
            .map(|p| (p.code, p.path.as_str(), p.message.as_str()))
            .collect();
        let code = ErrorCode::WorkflowInvalidDocument;
        assert_eq!(
            got,
            [
                (code, "/name", "`name` must be a string, found a number"),
                (
                    code,
                    "/steps/0",
                    "`steps` entries must be objects, found a string"
                ),
                (
                    code,
                    "/steps/1/subtasks",
                    "`subtasks` must be a list, found an object"
                ),
                (
                    code,
                    "/steps/1/next/0",
                    "`next` entries must be objects, found null"
                ),
                (
                    code,
                    "/steps/1/context_from",
                    "`context_from` must be a string or a list of strings, found a number"
                ),
                (
                    code,
                    "/steps/1/layer",
                    "`layer` must be a whole number, found a string"
                ),
            ]
        );
    }

    #[test]
    fn s_val_07_null_outgoing_edge_is_rejected() {
        let problems = errors(
            r#"{"steps":[{"name":"start","subtasks":[{"agent":"a"}],"next":[null]}]}"#,
            LoadOptions::default(),
        );
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].code, ErrorCode::WorkflowInvalidDocument);
        assert_eq!(problems[0].path, "/steps/0/next/0");
        assert_eq!(
            problems[0].message,
            "`next` entries must be objects, found null"
        );
        assert_eq!(
            problems[0].position,
            Some(Position {
                line: 1,
                column: 62
            })
        );
    }

    #[test]
    fn unknown_keys_are_warnings_by_default_and_errors_when_strict() {
        let text = "{\"steps\":[{\"name\":\"a\",\"subtasks\":[{\"agent\":\"x\",\"colour\":\"red\"}]}],\n \"version\": 2}";
        let loaded = load(text);
        let got: Vec<_> = loaded
            .warnings
            .iter()
            .map(|p| (p.code, p.path.as_str(), p.position))
            .collect();
        assert_eq!(
            got,
            [
                (
                    ErrorCode::WorkflowUnknownKey,
                    "/version",
                    Some(Position { line: 2, column: 2 })
                ),
                (
                    ErrorCode::WorkflowUnknownKey,
                    "/steps/0/subtasks/0/colour",
                    Some(Position {
                        line: 1,
                        column: 48
                    })
                ),
            ]
        );
        let strict = errors(text, LoadOptions::STRICT);
        assert_eq!(strict.len(), 2);
        assert!(
            strict
                .iter()
                .all(|p| p.code == ErrorCode::WorkflowUnknownKey)
        );
        assert!(
            strict[0]
                .message
                .contains("unknown key `version` in the workflow")
        );
    }

    #[test]
    fn data_wrapper_is_unwrapped_and_paths_keep_the_prefix() {
        let loaded =
            load(r#"{"code":0,"msg":"ok","data":{"id":"w","steps":[{"name":"a","extra":1}]}}"#);
        assert_eq!(loaded.workflow.id, "w");
        assert_eq!(loaded.root_pointer(), "/data");
        assert_eq!(loaded.warnings[0].path, "/data/steps/0/extra");
        // a document with its own steps is never unwrapped
        let plain = load(r#"{"steps":[],"data":{"steps":[{"name":"x"}]}}"#);
        assert!(plain.workflow.steps.is_empty());
        assert_eq!(plain.warnings[0].path, "/data");
    }

    #[test]
    fn child_workflow_and_nulls_are_accepted() {
        let w = load(
            r#"{"id":null,"steps":[{"name":"a","subtasks":[{"workflow":"child","agent":null}],"next":null,"layer":1.0}]}"#,
        )
        .workflow;
        assert_eq!(w.steps[0].subtasks[0].workflow.as_deref(), Some("child"));
        assert_eq!(w.steps[0].subtasks[0].agent, "");
        assert_eq!(w.steps[0].layer, Some(1));
        assert!(w.steps[0].next.is_empty());
    }

    #[test]
    fn syntax_errors_carry_line_and_column() {
        let problems = errors("{\n  \"steps\": [,]\n}", LoadOptions::default());
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].code, ErrorCode::WorkflowInvalidDocument);
        assert_eq!(
            problems[0].position,
            Some(Position {
                line: 2,
                column: 13
            })
        );
        assert!(
            problems[0]
                .message
                .starts_with("the workflow document is not valid JSON")
        );
    }

    #[test]
    fn a_yaml_document_is_told_that_only_json_is_accepted() {
        for yaml in [
            "id: w\nsteps:\n  - name: a\n",
            "---\nid: w\n",
            "# a comment\n- name: a\n",
        ] {
            let e = load_workflow_str(yaml, LoadOptions::default()).unwrap_err();
            assert_eq!(e.problems[0].code, ErrorCode::WorkflowInvalidDocument);
            assert!(
                e.problems[0].message.ends_with(
                    "it looks like YAML, and only JSON is accepted (convert it to JSON first)"
                ),
                "{yaml:?}: {}",
                e.problems[0].message
            );
        }
        // Broken JSON gets no YAML hint.
        let e = load_workflow_str("{\"steps\": [}", LoadOptions::default()).unwrap_err();
        assert!(
            !e.problems[0].message.contains("YAML"),
            "{}",
            e.problems[0].message
        );
    }

    #[test]
    fn duplicate_keys_in_text_are_warnings() {
        let loaded = load("{\"steps\":[{\"name\":\"a\",\n \"name\":\"b\"}]}");
        assert_eq!(loaded.workflow.steps[0].name, "b");
        assert_eq!(loaded.warnings.len(), 1);
        let w = &loaded.warnings[0];
        assert_eq!(w.code, ErrorCode::WorkflowDuplicateKey);
        assert_eq!(w.path, "/steps/0/name");
        assert_eq!(w.position, Some(Position { line: 2, column: 9 }));
        assert!(w.message.starts_with("key `name` appears more than once"));
    }

    #[test]
    fn non_object_documents_are_rejected() {
        for v in [json!([]), json!("x"), json!(null), json!(1)] {
            let e = load_workflow_value(&v, LoadOptions::default()).unwrap_err();
            assert_eq!(e.problems[0].code, ErrorCode::WorkflowInvalidDocument);
            assert_eq!(e.problems[0].path, "");
        }
    }

    #[test]
    fn s_val_14_empty_steps_parse() {
        let loaded = load(r#"{"name":"empty","steps":[]}"#);
        assert_eq!(loaded.workflow.name, "empty");
        assert!(loaded.workflow.steps.is_empty());
    }

    #[test]
    fn validation_problems_are_located_in_the_text() {
        let text = r#"{"data": {"steps": [
  {"name": "a", "subtasks": [{"agent": "x"}], "next": [{"step": "b"}]},
  {"name": "b", "tasks": [{"agent": " "}], "next": [{"step": "a"}],
   "context_from": ["a", "ghost"]}
]}}"#;
        let loaded = load(text);
        let mut errors = crate::validate(&loaded.workflow).unwrap_err();
        loaded.locate(Some(text), &mut errors);
        assert_eq!(
            errors.to_string(),
            "invalid workflow: 4 problems
  [workflow.blank_agent] /data/steps/1/subtasks/0/agent (line 3, column 37): subtask #0 of step 'b' has a blank agent name; name the agent to send to (or a child `workflow`)
  [workflow.unknown_context_step] /data/steps/1/contextFrom/1 (line 4, column 26): step 'b' references unknown context step 'ghost' in `contextFrom`; name an existing upstream step
  [workflow.cycle] /data/steps/1/next/0/step (line 3, column 62): the steps form a cycle: a -> b -> a; a workflow must be acyclic, so remove or redirect one of these edges
  [workflow.no_root] /data/steps (line 1, column 20): no step is a root: every step is the target of another step's `next`; at least one step must start the workflow"
        );
    }

    #[test]
    fn validation_problems_get_positions_only_from_the_text_given() {
        // One without a problem (the direct path) and one with a warning (the full path).
        for text in [
            "{\"data\": {\"steps\": [\n  {\"name\": \"a\", \"next\": [{\"step\": \"ghost\"}], \"tasks\": [{\"agent\": \"x\"}]}]}}",
            "{\"data\": {\"steps\": [\n  {\"name\": \"a\", \"next\": [{\"step\": \"ghost\"}], \"tasks\": [{\"agent\": \"x\"}], \"x\": 1}]}}",
        ] {
            let loaded = load(text);
            let errors = crate::validate(&loaded.workflow).unwrap_err();
            let mut bare = errors.clone();
            loaded.locate(None, &mut bare);
            assert_eq!(bare.problems[0].path, "/data/steps/0/next/0/step");
            assert_eq!(bare.problems[0].position, None);
            let mut placed = errors;
            loaded.locate(Some(text), &mut placed);
            assert_eq!(placed.problems[0].path, "/data/steps/0/next/0/step");
            assert_eq!(
                placed.problems[0].position,
                Some(Position {
                    line: 2,
                    column: 35
                })
            );
        }
    }

    #[test]
    fn edges_to_one_step_share_its_name() {
        // The direct path, and the full path (an unknown key is a warning there).
        for (text, warnings) in [
            (
                r#"{"steps":[{"name":"a","next":[{"step":"c"}]},{"name":"b","next":[{"step":"c","condition":"x"}]},{"name":"c"}]}"#,
                0,
            ),
            (
                r#"{"steps":[{"name":"a","next":[{"step":"c"}]},{"name":"b","next":[{"step":"c","condition":"x"}],"y":1},{"name":"c"}]}"#,
                1,
            ),
        ] {
            let loaded = load(text);
            assert_eq!(loaded.warnings.len(), warnings);
            let w = loaded.workflow;
            let (first, second) = (&w.steps[0].next[0], &w.steps[1].next[0]);
            assert_eq!(&*first.step, "c");
            assert!(SharedStr::ptr_eq(&first.step, &second.step), "{text}");
            assert_eq!(&*second.condition, "x");
        }
    }

    #[test]
    fn an_edge_serialises_its_shared_name_as_a_string() {
        let edge = Edge::new("b", "ok?");
        let value = serde_json::to_value(&edge).unwrap();
        assert_eq!(value, json!({"step": "b", "condition": "ok?"}));
        let back: Edge = serde_json::from_value(value).unwrap();
        assert_eq!(back, edge);
        assert!(serde_json::from_value::<Edge>(json!({"step": 1})).is_err());
    }

    #[test]
    fn a_document_over_the_byte_limit_is_refused_before_parsing() {
        let text = r#"{"steps":[{"name":"a","subtasks":[{"agent":"x"}]}]}"#;
        let exact = LoadOptions::LENIENT.with_max_document_bytes(text.len());
        assert!(load_workflow_str(text, exact).is_ok());
        let small = exact.with_max_document_bytes(text.len() - 1);
        for e in [
            load_workflow_str(text, small).unwrap_err(),
            load_workflow_bytes(text.as_bytes(), small).unwrap_err(),
            // not even JSON: the size is checked first
            load_workflow_bytes(&vec![0u8; text.len()], small).unwrap_err(),
        ] {
            assert_eq!(e.problems.len(), 1);
            assert_eq!(e.problems[0].code, ErrorCode::WorkflowTooLarge);
            assert_eq!(e.problems[0].path, "");
            assert!(
                e.problems[0]
                    .message
                    .contains(&format!("limit of {} bytes", text.len() - 1)),
                "{}",
                e.problems[0].message
            );
            assert_eq!(e.to_failure().code, "workflow.too_large");
        }
    }

    #[test]
    fn the_default_limits_are_documented_values() {
        let d = LoadOptions::default();
        assert_eq!(d, LoadOptions::LENIENT);
        assert_eq!(d.max_document_bytes, 4 * 1024 * 1024);
        assert_eq!(d.max_steps, 10_000);
        assert_eq!(LoadOptions::STRICT.max_steps, d.max_steps);
        let big = " ".repeat(d.max_document_bytes + 1);
        let e = load_workflow_str(&big, d).unwrap_err();
        assert_eq!(e.problems[0].code, ErrorCode::WorkflowTooLarge);
    }

    #[test]
    fn more_steps_than_the_limit_is_one_problem_at_the_steps() {
        let text =
            "{\"data\": {\"steps\":\n [{\"name\":\"a\"},{\"name\":\"b\"},{\"name\":\"c\"}]}}";
        let options = LoadOptions::STRICT.with_max_steps(2);
        let e = load_workflow_str(text, options).unwrap_err();
        assert_eq!(e.problems.len(), 1, "{e}");
        let p = &e.problems[0];
        assert_eq!(p.code, ErrorCode::WorkflowTooLarge);
        assert_eq!(p.path, "/data/steps");
        assert_eq!(p.position, Some(Position { line: 2, column: 2 }));
        assert!(
            p.message.contains("has 3 steps, more than the limit of 2"),
            "{}",
            p.message
        );
        assert!(load_workflow_str(text, options.with_max_steps(3)).is_ok());
        let value: Value = serde_json::from_str(text).unwrap();
        let e = load_workflow_value(&value, options).unwrap_err();
        assert_eq!(e.problems[0].code, ErrorCode::WorkflowTooLarge);
    }

    #[test]
    fn non_utf8_bytes_are_an_encoding_problem_at_the_first_bad_byte() {
        let mut bytes = b"{\"steps\": [\n  {\"name\": \"caf\xc3\xa9".to_vec();
        bytes.extend_from_slice(b"\xff\"}]}");
        let e = load_workflow_bytes(&bytes, LoadOptions::LENIENT).unwrap_err();
        assert_eq!(e.problems.len(), 1);
        let p = &e.problems[0];
        assert_eq!(p.code, ErrorCode::WorkflowInvalidEncoding);
        assert_eq!(p.path, "");
        // line 2: two spaces, `{"name": "café` is 14 characters, so the bad byte is column 17
        assert_eq!(
            p.position,
            Some(Position {
                line: 2,
                column: 17
            })
        );
        assert!(
            p.message
                .starts_with("the workflow document is not valid UTF-8: byte 0xff at offset 29"),
            "{}",
            p.message
        );
        let utf16 = [0xff, 0xfe, b'{', 0, b'}', 0];
        let e = load_workflow_bytes(&utf16, LoadOptions::LENIENT).unwrap_err();
        assert!(e.problems[0].message.contains("looks like UTF-16"), "{e}");
        assert_eq!(
            e.problems[0].position,
            Some(Position { line: 1, column: 1 })
        );
    }

    #[test]
    fn a_byte_order_mark_is_refused_with_a_message_saying_why() {
        let text = "\u{feff}{\"steps\":[{\"name\":\"a\",\"subtasks\":[{\"agent\":\"x\"}]}]}";
        for e in [
            load_workflow_str(text, LoadOptions::LENIENT).unwrap_err(),
            load_workflow_bytes(text.as_bytes(), LoadOptions::LENIENT).unwrap_err(),
        ] {
            let p = &e.problems[0];
            assert_eq!(p.code, ErrorCode::WorkflowInvalidEncoding);
            assert_eq!(p.position, Some(Position { line: 1, column: 1 }));
            assert!(
                p.message
                    .contains("only JSON in UTF-8 without a BOM is accepted")
            );
        }
        let plain = &text[BOM.len()..];
        assert!(load_workflow_bytes(plain.as_bytes(), LoadOptions::STRICT).is_ok());
    }

    #[test]
    fn invisible_characters_in_names_are_warnings_at_their_value() {
        let text = "{\"id\": \"w\\u200b\", \"steps\": [\n {\"name\": \"a\\u202e\", \"tasks\": [{\"agent\": \"x\\u2060\", \"description\": \"free \\u200b text\"}],\n  \"next\": [{\"step\": \"b\\ufeff\", \"condition\": \"\\u2066ok\"}], \"contextFrom\": [\"z\\u200d\"]}]}";
        let loaded = load_workflow_str(text, LoadOptions::STRICT).unwrap();
        let got: Vec<_> = loaded
            .warnings
            .iter()
            .map(|w| (w.code, w.path.as_str(), w.position.map(|p| p.line)))
            .collect();
        let code = ErrorCode::WorkflowInvisibleCharacter;
        assert_eq!(
            got,
            [
                (code, "/id", Some(1)),
                (code, "/steps/0/name", Some(2)),
                (code, "/steps/0/tasks/0/agent", Some(2)),
                (code, "/steps/0/next/0/step", Some(3)),
                (code, "/steps/0/contextFrom/0", Some(3)),
            ]
        );
        assert!(
            loaded.warnings[1].message.starts_with(
                "`name` 'a\\u{202E}' contains the invisible character U+202E (character 2)"
            ),
            "{}",
            loaded.warnings[1].message
        );
        // descriptions and conditions are free text: no warning (the graph writers escape them)
        assert!(
            loaded
                .warnings
                .iter()
                .all(|w| !w.path.ends_with("description"))
        );
    }

    #[test]
    fn load_messages_show_keys_and_values_escaped() {
        let text = "{\"steps\":[{\"name\":\"a\\u001b\",\"stepType\":\"x\\n\",\"k\\u001b[2J\":1}]}";
        let e = load_workflow_str(text, LoadOptions::STRICT).unwrap_err();
        for p in &e.problems {
            assert!(!p.message.chars().any(char::is_control), "{:?}", p.message);
        }
        assert!(
            e.problems
                .iter()
                .any(|p| p.message.contains("`k\\u{001B}[2J`")),
            "{e}"
        );
    }

    #[test]
    fn load_errors_become_one_failure() {
        let e = load_workflow_str(r#"{"steps":[{"name":1}]}"#, LoadOptions::default()).unwrap_err();
        let f = e.to_failure();
        assert_eq!(f.code, "workflow.invalid_document");
        assert_eq!(
            f.message,
            "cannot load workflow: `name` must be a string, found a number"
        );
        assert_eq!(f.details["problems"][0]["path"], "/steps/0/name");
        assert_eq!(
            e.to_string(),
            "cannot load workflow: 1 problem\n  [workflow.invalid_document] /steps/0/name (line 1, column 19): `name` must be a string, found a number"
        );
    }
}

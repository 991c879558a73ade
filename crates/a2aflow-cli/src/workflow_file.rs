//! Reading a workflow file: bounded, and every way it can be wrong reported as problems.
//!
//! [`read`] reads at most `options.max_document_bytes + 1` bytes (so `/dev/zero`, a FIFO or a huge
//! file ends at once with `workflow.too_large` instead of filling memory) and loads them with
//! [`load_workflow_bytes`], so a file that is not UTF-8 or starts with a byte order mark is a
//! `workflow.invalid_encoding` problem with a position, like any other load problem. Every
//! subcommand that takes a workflow file (`validate`, `graph`, `run`) reads it here.
//!
//! ```text
//! match workflow_file::read(path, &LoadOptions::LENIENT) {
//!     Ok(loaded) => …,                              // not yet validated
//!     Err(e) => { eprintln!("a2aflow: {e}"); return e.exit_code(); }   // 1 load problem, 2 I/O
//! }
//! ```

use a2aflow::model::{LoadErrors, LoadOptions, Loaded, load_workflow_bytes};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Why a workflow file did not load.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The file could not be opened or read (missing, a directory, no permission…).
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        #[source]
        source: std::io::Error,
    },
    /// The file was read but is not a workflow document: too large, not UTF-8, not JSON, wrong
    /// types… (every problem, each with its code).
    #[error("{}: {errors}", path.display())]
    Load {
        /// The file.
        path: PathBuf,
        /// The problems (and warnings) the loader found.
        errors: LoadErrors,
    },
}

impl ReadError {
    /// The CLI's exit code for this error: 1 for a document that does not load, 2 for I/O.
    pub fn exit_code(&self) -> u8 {
        match self {
            ReadError::Io { .. } => 2,
            ReadError::Load { .. } => 1,
        }
    }
}

/// Reads and loads the workflow file at `path` (not yet validated), reading at most
/// `options.max_document_bytes + 1` bytes.
pub fn read(path: &Path, options: &LoadOptions) -> Result<Loaded, ReadError> {
    read_loaded(path, options).map(|(loaded, _)| loaded)
}

/// [`read`], and the file's text as well, for [`Loaded::locate`] to place validation problems
/// in (the loaded workflow keeps no copy of it).
pub fn read_with_text(path: &Path, options: &LoadOptions) -> Result<(Loaded, String), ReadError> {
    let (loaded, bytes) = read_loaded(path, options)?;
    // `load_workflow_bytes` accepted the bytes, so they are UTF-8: nothing is lost here.
    let text = String::from_utf8(bytes).unwrap_or_default();
    Ok((loaded, text))
}

/// The loaded workflow and the bytes it was loaded from.
fn read_loaded(path: &Path, options: &LoadOptions) -> Result<(Loaded, Vec<u8>), ReadError> {
    let bytes = read_bounded(path, options.max_document_bytes).map_err(|source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let loaded = load_workflow_bytes(&bytes, *options).map_err(|errors| ReadError::Load {
        path: path.to_path_buf(),
        errors,
    })?;
    Ok((loaded, bytes))
}

/// At most `limit + 1` bytes of the file: one byte more than the limit is enough for the loader
/// to report the file as too large.
fn read_bounded(path: &Path, limit: usize) -> std::io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let cap = u64::try_from(limit).unwrap_or(u64::MAX).saturating_add(1);
    let mut bytes = Vec::new();
    file.take(cap).read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2aflow::model::ErrorCode;

    fn first_code(e: &ReadError) -> ErrorCode {
        match e {
            ReadError::Load { errors, .. } => errors.problems[0].code,
            ReadError::Io { source, .. } => panic!("I/O error: {source}"),
        }
    }

    #[test]
    fn an_endless_file_stops_at_the_limit_with_too_large() {
        let options = LoadOptions::LENIENT.with_max_document_bytes(1024);
        let e = read(Path::new("/dev/zero"), &options).unwrap_err();
        assert_eq!(first_code(&e), ErrorCode::WorkflowTooLarge);
        assert_eq!(e.exit_code(), 1);
    }

    #[test]
    fn a_file_of_exactly_the_limit_loads() {
        let dir = tempfile::tempdir().unwrap();
        let text = r#"{"steps":[{"name":"a","subtasks":[{"agent":"x"}]}]}"#;
        let path = dir.path().join("w.json");
        std::fs::write(&path, text).unwrap();
        let exact = LoadOptions::STRICT.with_max_document_bytes(text.len());
        assert_eq!(read(&path, &exact).unwrap().workflow.steps[0].name, "a");
        let e = read(&path, &exact.with_max_document_bytes(text.len() - 1)).unwrap_err();
        assert_eq!(first_code(&e), ErrorCode::WorkflowTooLarge);
    }

    #[test]
    fn non_utf8_is_a_load_problem_and_a_missing_file_an_io_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("latin1.json");
        std::fs::write(&path, b"{\"name\": \"caf\xe9\"}").unwrap();
        let e = read(&path, &LoadOptions::LENIENT).unwrap_err();
        assert_eq!(first_code(&e), ErrorCode::WorkflowInvalidEncoding);
        let missing = read(&dir.path().join("none.json"), &LoadOptions::LENIENT).unwrap_err();
        assert!(matches!(missing, ReadError::Io { .. }));
        assert_eq!(missing.exit_code(), 2);
        assert!(missing.to_string().starts_with("cannot read "), "{missing}");
    }
}

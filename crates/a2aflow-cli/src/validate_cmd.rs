//! `a2aflow validate FILE… [--strict] [--format text|json]`.

use crate::OutputFormat;
use crate::workflow_file::{self, ReadError};
use a2aflow::model::{LoadErrors, LoadOptions, Loaded, Problem, validate};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;

/// What one file's check found.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FileReport {
    /// The file.
    pub file: PathBuf,
    /// True when the file loads and validates (warnings allowed unless strict).
    pub valid: bool,
    /// Problems that make it invalid.
    pub errors: Vec<Problem>,
    /// Problems that do not (unknown keys when not strict).
    pub warnings: Vec<Problem>,
}

/// The load options of `validate` (and `--strict`): default limits.
pub fn options(strict: bool) -> LoadOptions {
    if strict {
        LoadOptions::STRICT
    } else {
        LoadOptions::LENIENT
    }
}

/// Validates what loading one document gave: the workflow and the text it was loaded from
/// (validation problems are placed in it), or the load's problems.
pub fn check(file: PathBuf, loaded: Result<(&Loaded, &str), LoadErrors>) -> FileReport {
    match loaded {
        Err(e) => FileReport {
            file,
            valid: false,
            errors: e.problems,
            warnings: e.warnings,
        },
        Ok((loaded, text)) => match validate(&loaded.workflow) {
            Ok(()) => FileReport {
                file,
                valid: true,
                errors: Vec::new(),
                warnings: loaded.warnings.clone(),
            },
            Err(mut errors) => {
                loaded.locate(Some(text), &mut errors);
                FileReport {
                    file,
                    valid: false,
                    errors: errors.problems,
                    warnings: loaded.warnings.clone(),
                }
            }
        },
    }
}

/// Loads and validates one document's text.
#[cfg(test)]
pub fn check_text(file: PathBuf, text: &str, strict: bool) -> FileReport {
    let loaded = a2aflow::model::load_workflow_bytes(text.as_bytes(), options(strict));
    check(
        file,
        loaded.as_ref().map(|l| (l, text)).map_err(Clone::clone),
    )
}

/// Reads, loads and validates one file; `None` when it cannot be read (the error is printed).
pub fn check_file(file: &std::path::Path, options: &LoadOptions) -> Option<FileReport> {
    match workflow_file::read_with_text(file, options) {
        Ok((loaded, text)) => Some(check(file.to_path_buf(), Ok((&loaded, &text)))),
        Err(ReadError::Load { path, errors }) => Some(check(path, Err(errors))),
        Err(e) => {
            eprintln!("a2aflow: {e}");
            None
        }
    }
}

/// Writes one report as the text output does: the verdict line, then one line per problem.
pub fn write_text(out: &mut dyn Write, r: &FileReport) -> std::io::Result<()> {
    let verdict = if r.valid { "valid" } else { "invalid" };
    writeln!(out, "{}: {verdict}", r.file.display())?;
    for p in &r.errors {
        writeln!(out, "  error   {p}")?;
    }
    for p in &r.warnings {
        writeln!(out, "  warning {p}")?;
    }
    Ok(())
}

/// Runs the subcommand; returns the process exit code (0 valid, 1 invalid, 2 I/O error).
pub fn run(files: &[PathBuf], strict: bool, format: OutputFormat) -> u8 {
    let options = options(strict);
    let mut reports = Vec::new();
    let mut io_error = false;
    for file in files {
        match check_file(file, &options) {
            Some(report) => reports.push(report),
            None => io_error = true,
        }
    }
    match format {
        OutputFormat::Json => match serde_json::to_string_pretty(&reports) {
            Ok(json) => println!("{json}"),
            Err(e) => {
                eprintln!("a2aflow: cannot render the report: {e}");
                return 2;
            }
        },
        OutputFormat::Text => {
            let mut stdout = std::io::stdout().lock();
            for r in &reports {
                if let Err(e) = write_text(&mut stdout, r) {
                    eprintln!("a2aflow: cannot write the report: {e}");
                    return 2;
                }
            }
        }
    }
    if io_error {
        2
    } else if reports.iter().all(|r| r.valid) {
        0
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_workflow_is_valid() {
        let r = check_text("demo".into(), crate::demo::WORKFLOW, true);
        assert!(r.valid, "{:#?}", r.errors);
        assert!(r.warnings.is_empty(), "{:#?}", r.warnings);
    }

    #[test]
    fn graph_problems_carry_code_path_and_position() {
        let text = "{\n  \"steps\": [\n    {\"name\": \"a\", \"subtasks\": [{\"agent\": \"x\"}], \"next\": [{\"step\": \"nope\"}]}\n  ]\n}";
        let r = check_text("f".into(), text, false);
        assert!(!r.valid);
        let p = r
            .errors
            .iter()
            .find(|p| p.code.as_str() == "workflow.unknown_target")
            .expect("unknown target");
        assert_eq!(p.path, "/steps/0/next/0/step");
        assert_eq!(p.position.map(|p| p.line), Some(3));
    }

    #[test]
    fn unknown_keys_fail_only_in_strict_mode() {
        let text = r#"{"steps": [{"name": "a", "subtasks": [{"agent": "x"}], "colour": "red"}]}"#;
        let lenient = check_text("f".into(), text, false);
        assert!(lenient.valid);
        assert_eq!(lenient.warnings[0].code.as_str(), "workflow.unknown_key");
        let strict = check_text("f".into(), text, true);
        assert!(!strict.valid);
        assert_eq!(strict.errors[0].path, "/steps/0/colour");
    }
}

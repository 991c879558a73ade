//! `a2aflow search`: the workflows an orchestration centre finds for an intent.
//!
//! The centre's access token is read from `A2AFLOW_ORCHESTRATOR_TOKEN` and sent only in the
//! `Authorization` header, as `run --orchestrator` does.

use crate::OutputFormat;
use crate::run_cmd::service_http;
use crate::terminal::{block, inline};
use a2aflow::EngineConfig;
use a2aflow::model::Failure;
use a2aflow::services::registry::{OrchestratorClient, WorkflowSearchResult};
use std::path::PathBuf;

/// The most results one search may ask for.
pub const MAX_TOP: u32 = 100;

/// Everything `search` takes from the command line.
#[derive(Debug, clap::Args)]
pub struct SearchArgs {
    /// The orchestration centre (token: env A2AFLOW_ORCHESTRATOR_TOKEN).
    #[arg(long, value_name = "URL")]
    pub orchestrator: String,
    /// What the workflow should do, in words.
    pub intent: String,
    /// How many results to ask for (1 to 100).
    #[arg(long, value_name = "N", default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(1..=MAX_TOP as i64))]
    pub top: u32,
    /// Engine configuration file (.toml or .json) for TLS, timeouts and body limits.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub format: OutputFormat,
}

fn usage(message: impl std::fmt::Display) -> u8 {
    eprintln!("a2aflow search: {message}");
    2
}

/// Runs the subcommand; returns the exit code (0 answered, even with no result; 1 the centre
/// could not be reached or answered an error, its code printed; 2 usage or setup error).
pub fn run(args: SearchArgs) -> u8 {
    if args.intent.trim().is_empty() {
        return usage("the intent is blank");
    }
    let config = match &args.config {
        Some(path) => match EngineConfig::from_file(path) {
            Ok(c) => c,
            Err(f) => return usage(f),
        },
        None => EngineConfig::default(),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return usage(format!("cannot start the async runtime: {e}")),
    };
    // Building the client needs the runtime's context; a bad URL or TLS setup is a usage error.
    let found = runtime.block_on(async {
        let center = centre(&args.orchestrator, &config).map_err(|f| (2, f))?;
        let mut results = center
            .search(args.intent.trim(), args.top)
            .await
            .map_err(|f| (1, f))?;
        // The centre is asked for `top`; a centre that answers more is cut, not believed.
        results.truncate(args.top as usize);
        Ok::<_, (u8, Failure)>(results)
    });
    match found {
        Ok(results) => print(&results, args.format),
        Err((code, f)) => {
            eprintln!("a2aflow search: {}", block(&f.to_string(), "  "));
            code
        }
    }
}

/// A client of the centre at `url`, with the configuration's TLS and limits and the token from
/// the environment.
fn centre(url: &str, config: &EngineConfig) -> Result<OrchestratorClient, Failure> {
    let http = service_http(config, url, "A2AFLOW_ORCHESTRATOR_TOKEN")?;
    OrchestratorClient::new(url, http)
}

fn print(results: &[WorkflowSearchResult], format: OutputFormat) -> u8 {
    match format {
        OutputFormat::Json => match serde_json::to_string_pretty(results) {
            Ok(json) => {
                println!("{}", crate::terminal::json(&json));
                0
            }
            Err(e) => usage(format!("cannot render the results: {e}")),
        },
        OutputFormat::Text => {
            print!("{}", text(results));
            0
        }
    }
}

/// One line per result (score, id, name, description), then its user intent and tasks when
/// the centre gave them.
fn text(results: &[WorkflowSearchResult]) -> String {
    if results.is_empty() {
        return "no workflow found\n".to_owned();
    }
    let width = results
        .iter()
        .map(|r| inline(&r.workflow_id).chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for r in results {
        // Everything but the score comes from the centre: escaped for the terminal.
        let id = inline(&r.workflow_id);
        let mut line = format!("{:.2}  {id:<width$}  {}", r.score, inline(&r.name));
        if !r.description.is_empty() {
            line.push_str(&format!(" — {}", inline(&r.description)));
        }
        out.push_str(line.trim_end());
        out.push('\n');
        for (label, value) in [("intent", &r.user_intent), ("tasks", &r.tasks_summary)] {
            if !value.is_empty() {
                out.push_str(&format!("      {label}: {}\n", inline(value)));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests may unwrap

    use super::*;
    use serde_json::json;

    #[test]
    fn text_lists_one_aligned_line_per_result_with_its_details() {
        let results = [
            WorkflowSearchResult::from_value(&json!({
                "workflow_id": "wf-1", "name": "Incident", "description": "cross-city",
                "score": 0.912, "user_intent": "slow data", "tasks_summary": "diagnose, fix"
            })),
            WorkflowSearchResult::from_value(&json!({"id": "wf-22", "name": "Other"})),
        ];
        assert_eq!(
            text(&results),
            "0.91  wf-1   Incident — cross-city\n\
             \x20     intent: slow data\n\
             \x20     tasks: diagnose, fix\n\
             1.00  wf-22  Other\n"
        );
    }

    #[test]
    fn text_escapes_what_the_centre_controls() {
        let results = [WorkflowSearchResult::from_value(&json!({
            "workflow_id": "wf\u{1b}]0;pwned\u{7}", "name": "N\u{1b}[2J",
            "description": "d\u{202e}", "user_intent": "i\rx"
        }))];
        let out = text(&results);
        assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "{out:?}");
        assert!(out.contains("wf\\x1b]0;pwned\\x07"), "{out}");
        assert!(out.contains("\\u{202e}"), "{out}");
        assert!(out.contains("intent: i\\x0dx"), "{out}");
    }

    #[test]
    fn no_result_says_so() {
        assert_eq!(text(&[]), "no workflow found\n");
    }
}

//! `a2aflow run … --ui`: the run page for the run this process drives, on loopback with a
//! token, its URL on stderr before the run starts. Without `--store` the run is journaled in a
//! temporary SQLite store that is deleted when the command ends. The page stops with the
//! command, or with `--ui-linger` once Ctrl-C (or SIGTERM) follows the run's end.

use crate::run_cmd::GatesArg;
use crate::signals::Interrupts;
use crate::terminal::inline;
use a2aflow::kernel::{GatePolicy, RunOptions};
use a2aflow::model::{ErrorCode, Failure};
use a2aflow::{EngineConfig, RunStore, StoreLocation};
use a2aflow_ui::{LiveRuns, Ui, UiHandle};
use std::path::PathBuf;
use std::sync::Arc;

/// A directory of this process's own for the temporary store; removed on drop.
pub(crate) struct TempStore {
    dir: PathBuf,
}

impl TempStore {
    /// Creates the directory (readable by this user only) and points `config` at a store file
    /// in it.
    pub(crate) fn create(config: &mut EngineConfig) -> Result<TempStore, Failure> {
        let name = format!("a2aflow-run-{}", a2aflow::model::a2a::new_context_id());
        let dir = std::env::temp_dir().join(name);
        let mut builder = std::fs::DirBuilder::new();
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
        builder.create(&dir).map_err(|e| {
            Failure::new(
                ErrorCode::StoreUnavailable,
                format!(
                    "cannot create the run page's temporary store in {}: {e}",
                    dir.display()
                ),
            )
        })?;
        let store = TempStore { dir };
        config.store = Some(StoreLocation::Sqlite(store.dir.join("runs.db")));
        Ok(store)
    }
}

impl Drop for TempStore {
    fn drop(&mut self) {
        if let Err(e) = std::fs::remove_dir_all(&self.dir) {
            eprintln!(
                "a2aflow run: cannot delete the temporary store {}: {e}",
                inline(&self.dir.display().to_string())
            );
        }
    }
}

/// The page of one run.
pub(crate) struct RunPage {
    ui: UiHandle,
    live: LiveRuns,
    execution_id: String,
}

impl RunPage {
    /// Serves the page over `store`, tracks run `execution_id` in `options` (the page's cancel
    /// reaches it; with `--gates park` its gates park on the page, which answers them, instead
    /// of suspending the run) and prints the URL on stderr.
    pub(crate) async fn start(
        store: Arc<dyn RunStore>,
        execution_id: &str,
        options: &mut RunOptions,
        gates: GatesArg,
    ) -> Result<RunPage, Failure> {
        let live = LiveRuns::new();
        let ui = Ui::builder(store).live_runs(live.clone()).bind().await?;
        live.track(execution_id, options);
        match gates {
            GatesArg::Fail => options.gate_policy = GatePolicy::Fail,
            GatesArg::Park => options.suspend_when_parked = false,
        }
        let url = format!("{}#/run/{}", ui.url(), percent(execution_id));
        eprintln!("a2aflow run: the run page: {url}");
        Ok(RunPage {
            ui,
            live,
            execution_id: execution_id.to_owned(),
        })
    }

    /// After the run: with `linger`, keeps serving until the first signal (at once when one
    /// already ended the run); then stops the page.
    pub(crate) async fn finish(self, linger: bool, interrupts: &Interrupts) {
        self.live.untrack(&self.execution_id);
        if linger && interrupts.exit_status().is_none() {
            eprintln!("a2aflow run: the run ended; the run page stays until Ctrl-C");
            interrupts.first().await;
        }
        self.ui.shutdown().await;
    }
}

/// `text` as a URL fragment component (execution ids are minted by the CLI: letters, digits and
/// `-`; anything else is percent-encoded).
fn percent(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

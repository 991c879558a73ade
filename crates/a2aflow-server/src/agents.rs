//! The agents the served runs call, with the host's ControlPoint that goes with them: given up
//! front ([`crate::ServerBuilder::agents`]), or discovered after the server listens
//! ([`crate::ServerBuilder::discover_agents`]), so that two servers whose workflows call each
//! other can both start. Discovery fetches every card in the background, again and again (with
//! a growing pause) until all answer or the server stops; a run waits for it at most the
//! discovery wait, then fails with the last discovery failure (its own typed code, say
//! `a2a.connection`), and the next run tries again.

use crate::lineage::DelegatingControlPoint;
use a2a::AgentCard;
use a2aflow::kernel::ControlPoint;
use a2aflow::model::{ErrorCode, Failure};
use a2aflow::{AgentEndpoint, EngineConfig, discover_agents};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The first pause between two discovery attempts; it doubles up to [`LONGEST_PAUSE`].
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const LONGEST_PAUSE: Duration = Duration::from_secs(5);

/// Makes the host's ControlPoint from the discovered cards (each card's `name` is the agent's).
pub(crate) type MakeControlPoint = Box<dyn FnOnce(&[AgentCard]) -> Arc<dyn ControlPoint> + Send>;

/// The agents and the ControlPoint a run is driven with.
#[derive(Clone)]
pub(crate) struct Resolved {
    pub(crate) agents: Arc<[AgentEndpoint]>,
    pub(crate) control_point: Arc<DelegatingControlPoint>,
}

impl Resolved {
    /// `agents` with `control_point`, whose tasks to a2aflow-served workflows carry the
    /// delegation request metadata.
    pub(crate) fn new(agents: Vec<AgentEndpoint>, control_point: Arc<dyn ControlPoint>) -> Self {
        let cards: Vec<AgentCard> = agents.iter().map(|a| a.card().clone()).collect();
        Resolved {
            control_point: Arc::new(DelegatingControlPoint::new(control_point, &cards)),
            agents: agents.into(),
        }
    }
}

/// Where discovery stands.
#[derive(Clone)]
enum Discovery {
    /// Not every card is fetched yet; the last attempt's failure, if one failed.
    Pending(Option<Failure>),
    Ready(Resolved),
}

/// The agents of the served runs (cheap to clone).
#[derive(Clone)]
pub(crate) struct Agents {
    rx: watch::Receiver<Discovery>,
    /// How long a run waits for discovery.
    wait: Duration,
}

/// What discovery needs, kept until the server starts it.
pub(crate) struct Pending {
    tx: watch::Sender<Discovery>,
    named: Vec<(String, String)>,
    make: Mutex<Option<MakeControlPoint>>,
}

impl Agents {
    /// Agents known up front.
    pub(crate) fn ready(resolved: Resolved) -> Self {
        let (_, rx) = watch::channel(Discovery::Ready(resolved));
        Agents {
            rx,
            wait: Duration::ZERO,
        }
    }

    /// Agents to discover (`named`: name and card or base URL); [`Pending::start`] starts it.
    pub(crate) fn later(
        named: Vec<(String, String)>,
        make: MakeControlPoint,
        wait: Duration,
    ) -> (Self, Pending) {
        let (tx, rx) = watch::channel(Discovery::Pending(None));
        let pending = Pending {
            tx,
            named,
            make: Mutex::new(Some(make)),
        };
        let wait = wait.max(FIRST_PAUSE);
        (Agents { rx, wait }, pending)
    }

    /// The agents and ControlPoint, once discovered; past the discovery wait (or when `give_up`
    /// is cancelled first), the failure that says why they are not.
    pub(crate) async fn resolved(&self, give_up: &CancellationToken) -> Result<Resolved, Failure> {
        let mut rx = self.rx.clone();
        let ready = rx.wait_for(|d| matches!(d, Discovery::Ready(_)));
        let waited = tokio::select! {
            waited = tokio::time::timeout(self.wait, ready) => waited.ok().and_then(Result::ok).map(|d| d.clone()),
            () = give_up.cancelled() => None,
        };
        if let Some(Discovery::Ready(resolved)) = waited {
            return Ok(resolved);
        }
        let last = match &*self.rx.borrow() {
            Discovery::Ready(resolved) => return Ok(resolved.clone()),
            Discovery::Pending(last) => last.clone(),
        };
        Err(undiscovered(last, self.wait))
    }
}

/// The failure of a run whose agents are not discovered yet.
fn undiscovered(last: Option<Failure>, wait: Duration) -> Failure {
    match last {
        Some(f) => Failure::coded(
            f.code,
            format!(
                "the agents the served workflows call are not discovered yet (still retrying; \
                 waited {wait:?}): {}",
                f.message
            ),
        )
        .with_detail("discovery", "pending"),
        None => Failure::new(
            ErrorCode::A2aConnection,
            format!(
                "the agents the served workflows call did not answer their card requests within \
                 {wait:?} (discovery goes on)"
            ),
        )
        .with_detail("discovery", "pending"),
    }
}

impl Pending {
    /// Discovers the agents on `tracker` until all cards are fetched or `stop` is cancelled.
    pub(crate) fn start(
        self,
        config: Arc<EngineConfig>,
        stop: CancellationToken,
        tracker: &TaskTracker,
    ) {
        tracker.spawn(async move {
            let mut pause = FIRST_PAUSE;
            loop {
                let attempt = tokio::select! {
                    a = discover_agents(&self.named, &config) => a,
                    () = stop.cancelled() => return,
                };
                match attempt {
                    Ok(agents) => {
                        let make = self.make.lock().unwrap_or_else(|p| p.into_inner()).take();
                        let Some(make) = make else { return };
                        let cards: Vec<AgentCard> =
                            agents.iter().map(|a| a.card().clone()).collect();
                        let resolved = Resolved::new(agents, make(&cards));
                        tracing::info!(target: "a2aflow::serve", agents = cards.len(), "the agents are discovered");
                        self.tx.send_replace(Discovery::Ready(resolved));
                        return;
                    }
                    Err(f) => {
                        tracing::info!(
                            target: "a2aflow::serve",
                            code = %f.code,
                            "agent discovery failed, retrying in {pause:?}: {}",
                            f.message
                        );
                        self.tx.send_replace(Discovery::Pending(Some(f)));
                    }
                }
                tokio::select! {
                    () = tokio::time::sleep(pause) => {}
                    () = stop.cancelled() => return,
                }
                pause = (pause * 2).min(LONGEST_PAUSE);
            }
        });
    }
}

//! What a resume needs besides the run itself: the engine configuration with the store and
//! credentials, the agents discovered from `--agent NAME=URL`, and the declarative ControlPoint
//! over their cards. `runs resume` drives one resume with it; `ui --agent …` gives it to the run
//! page, which resumes runs whose driver is gone.

use crate::declarative::{DeclarativeControlPoint, NegotiationPolicy, RoutePolicy};
use crate::demo::negotiating_agents;
use a2aflow::kernel::{ControlPoint, EventStream, ResumePolicy, RunOptions};
use a2aflow::model::Failure;
use a2aflow::{AgentEndpoint, EngineConfig, HostHooks, StoreLocation, discover_agents};
use std::path::Path;
use std::sync::Arc;

/// The engine configuration of a resume: `config_file`'s (or the defaults), with the run store
/// at `store` and the credentials file; an `Err` is a usage error.
pub(crate) fn resume_config(
    config_file: Option<&Path>,
    store: &str,
    credentials: Option<&Path>,
) -> Result<EngineConfig, Failure> {
    let mut config = crate::load_config(config_file)?;
    config.store = Some(StoreLocation::parse(store)?);
    if let Some(c) = credentials {
        config.credentials_file = Some(c.to_path_buf());
    }
    config.validate()?;
    Ok(config)
}

/// How a host resumes runs: its configuration, agents and ControlPoint.
pub(crate) struct ResumeHost {
    config: EngineConfig,
    agents: Vec<AgentEndpoint>,
    control_point: Arc<dyn ControlPoint>,
    resend: bool,
}

impl ResumeHost {
    /// Fetches the cards of the `named` agents and builds the ControlPoint (`routes` for
    /// routing decisions not yet journaled, `negotiation` for proposals not yet answered);
    /// `resend` lets a journaled message whose task cannot be found go again.
    pub(crate) async fn discover(
        config: EngineConfig,
        named: &[(String, String)],
        routes: RoutePolicy,
        negotiation: NegotiationPolicy,
        resend: bool,
    ) -> Result<Self, Failure> {
        let agents = discover_agents(named, &config).await?;
        let cards: Vec<_> = agents.iter().map(|a| a.card().clone()).collect();
        // As `run` does: tasks to workflows served by a2aflow carry the run's lineage.
        let control_point = a2aflow_server::DelegatingControlPoint::new(
            Arc::new(DeclarativeControlPoint::new(
                routes,
                negotiation,
                negotiating_agents(&cards),
            )),
            &cards,
        );
        Ok(ResumeHost {
            config,
            agents,
            control_point: Arc::new(control_point),
            resend,
        })
    }

    /// Resumes run `execution_id` with `options` (the resend policy added); the stream comes
    /// back once the run holds its lease.
    pub(crate) async fn resume_stream(
        &self,
        execution_id: &str,
        mut options: RunOptions,
    ) -> Result<EventStream, Failure> {
        if self.resend {
            options.resume_policy = ResumePolicy::resend_all();
        }
        let hooks = HostHooks {
            run_options: options,
            ..HostHooks::default()
        };
        a2aflow::resume_stream(
            execution_id,
            &self.agents,
            self.control_point.clone(),
            &self.config,
            hooks,
        )
        .await
    }
}

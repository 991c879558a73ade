//! Live progress of a run: one line per step start/finish, route decision and negotiation event,
//! with the time since the run started. Plain lines (no terminal control codes), so the output is
//! the same on a terminal, in a pipe and in CI logs.

use a2aflow::model::{Event, EventKind};
use std::time::Instant;

/// Prints progress lines for a run's events.
pub struct Progress {
    started: Instant,
}

impl Progress {
    /// Starts the clock.
    pub fn new() -> Self {
        Progress {
            started: Instant::now(),
        }
    }

    /// The line for one event, when the event deserves one.
    pub fn line(&self, event: &Event) -> Option<String> {
        let t = self.started.elapsed().as_secs_f64();
        let step = event.step.as_deref().unwrap_or("");
        let d = &event.data;
        let text = match event.kind {
            EventKind::StepStart => format!("▶ {step} ({})", d["stepType"].as_str().unwrap_or("")),
            EventKind::StepComplete => {
                let status = d["status"].as_str().unwrap_or("?");
                let mark = if status == "COMPLETED" { "✔" } else { "✘" };
                format!("{mark} {step} {status}")
            }
            EventKind::TaskStatusChanged => format!(
                "  · {step}: {} {}",
                d["agent"].as_str().unwrap_or(""),
                d["status"].as_str().unwrap_or("")
            ),
            EventKind::RouteDecision if d["conditional"] == true => format!(
                "  ↳ route {step} → {} \"{}\": {} ({})",
                d["next"].as_str().unwrap_or(""),
                d["condition"].as_str().unwrap_or(""),
                if d["allowed"] == true {
                    "taken"
                } else {
                    "not taken"
                },
                d["reason"].as_str().unwrap_or("")
            ),
            EventKind::NegotiationRequest => format!("  ⇄ {step}: Negotiation-T proposal received"),
            EventKind::NegotiationResolved => format!("  ⇄ {step}: negotiation reply sent"),
            EventKind::NegotiationFailed => format!("  ⇄ {step}: negotiation failed"),
            EventKind::Error => format!(
                "  ! {}",
                d["error"]
                    .as_str()
                    .or_else(|| d["message"].as_str())
                    .unwrap_or("error")
            ),
            _ => return None,
        };
        Some(format!("[{t:6.2}s] {text}"))
    }
}

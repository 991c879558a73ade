//! Live progress of a run: a line per step start/finish, route decision and negotiation event,
//! with the time since the run started.
//!
//! Two renderers behind one [`LiveProgress`]: on a terminal, an indicatif spinner per running step
//! (its tasks' states, elapsed time) that turns into a `✔`/`✘` line when the step ends, with the
//! other lines printed above the bars; anywhere else (a pipe, a file, CI logs), plain lines with no
//! terminal control codes.

use crate::terminal::inline;
use a2aflow::model::{Event, EventKind};
use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

/// Formats progress lines for a run's events.
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
        line_at(event, self.started.elapsed())
    }
}

/// The line for one event at `elapsed` since the run started, when the event deserves one.
fn line_at(event: &Event, elapsed: Duration) -> Option<String> {
    let t = elapsed.as_secs_f64();
    let text = event_text(event)?;
    Some(format!("[{t:6.2}s] {text}"))
}

/// The agent column of a task the host did itself (a SELF_LOOP step), as the result table shows.
const HOST: &str = "(host)";

/// The agent column of a task: its agent, or [`HOST`] for a task without one.
fn agent_column(agent: &str) -> &str {
    if agent.is_empty() { HOST } else { agent }
}

/// The text of one event's line, without the time stamp.
fn event_text(event: &Event) -> Option<String> {
    let step = event.step.as_deref().unwrap_or("");
    let d = &event.data;
    let text = match event.kind {
        EventKind::StepStart => format!("▶ {step} ({})", d["stepType"].as_str().unwrap_or("")),
        EventKind::StepComplete => {
            let status = d["status"].as_str().unwrap_or("?");
            format!("{} {step} {status}", completion_mark(status))
        }
        EventKind::TaskStatusChanged => format!(
            "  · {step}: {} {}",
            agent_column(d["agent"].as_str().unwrap_or("")),
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
        EventKind::Error => error_text(d),
        _ => return None,
    };
    // Step and agent names, states and error messages may come from the network.
    Some(inline(&text))
}

/// `! [code] message`, then the root causes the failure names (`— agent a: [code] message`).
fn error_text(d: &serde_json::Value) -> String {
    let message = d["error"]
        .as_str()
        .or_else(|| d["message"].as_str())
        .unwrap_or("error");
    let mut text = match d["errorCode"].as_str() {
        Some(code) => format!("  ! [{code}] {message}"),
        None => format!("  ! {message}"),
    };
    for cause in crate::failure_text::root_causes(&d["failure"]) {
        text.push_str(&format!(" — {cause}"));
    }
    text
}

fn completion_mark(status: &str) -> &'static str {
    if status == "COMPLETED" { "✔" } else { "✘" }
}

/// The stream progress goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output (the demo).
    Stdout,
    /// Standard error (`run`, whose standard output carries the result).
    Stderr,
}

/// Shows a run's progress on one stream: bars on a terminal, plain lines otherwise.
pub struct LiveProgress {
    view: View,
}

enum View {
    Lines {
        progress: Progress,
        out: Box<dyn Write>,
    },
    Bars(Bars),
}

impl LiveProgress {
    /// Bars when `stream` is a terminal, plain lines when it is not.
    pub fn on(stream: Stream) -> Self {
        let terminal = match stream {
            Stream::Stdout => std::io::stdout().is_terminal(),
            Stream::Stderr => std::io::stderr().is_terminal(),
        };
        if terminal {
            let target = match stream {
                Stream::Stdout => ProgressDrawTarget::stdout(),
                Stream::Stderr => ProgressDrawTarget::stderr(),
            };
            LiveProgress {
                view: View::Bars(Bars::new(target, true)),
            }
        } else {
            let out: Box<dyn Write> = match stream {
                Stream::Stdout => Box::new(std::io::stdout()),
                Stream::Stderr => Box::new(std::io::stderr()),
            };
            LiveProgress::lines(out)
        }
    }

    /// Plain lines into `out`.
    fn lines(out: Box<dyn Write>) -> Self {
        LiveProgress {
            view: View::Lines {
                progress: Progress::new(),
                out,
            },
        }
    }

    /// Shows one event.
    pub fn event(&mut self, event: &Event) {
        match &mut self.view {
            View::Lines { progress, out } => {
                if let Some(line) = progress.line(event) {
                    // Progress is best effort: a closed pipe must not fail the run.
                    let _ = writeln!(out, "{line}");
                }
            }
            View::Bars(bars) => bars.event(event),
        }
    }

    /// Ends the display: bars of steps that never finished are left as they are.
    pub fn finish(self) {
        match self.view {
            View::Lines { mut out, .. } => {
                let _ = out.flush();
            }
            View::Bars(bars) => bars.finish(),
        }
    }
}

/// The terminal renderer: one spinner per running step.
struct Bars {
    multi: MultiProgress,
    running: HashMap<String, StepBar>,
    started: Instant,
    tick: bool,
}

struct StepBar {
    bar: ProgressBar,
    /// Each task's latest state, in the order the tasks first reported.
    tasks: Vec<(String, String)>,
}

const RUNNING: &str = "{spinner} {prefix} {msg} [{elapsed}]";

fn style(template: &str) -> ProgressStyle {
    // The templates are the constants above; a bad one would only lose the decoration.
    ProgressStyle::with_template(template).unwrap_or_else(|_| ProgressStyle::default_spinner())
}

impl Bars {
    /// `tick`: animate the spinners (off in tests, whose frames must not depend on time).
    fn new(target: ProgressDrawTarget, tick: bool) -> Self {
        Bars {
            multi: MultiProgress::with_draw_target(target),
            running: HashMap::new(),
            started: Instant::now(),
            tick,
        }
    }

    fn event(&mut self, event: &Event) {
        let step = inline(event.step.as_deref().unwrap_or(""));
        let step = step.as_str();
        let d = &event.data;
        match event.kind {
            EventKind::StepStart => {
                let bar = self.multi.add(ProgressBar::new_spinner());
                bar.set_style(style(RUNNING));
                bar.set_prefix(step.to_owned());
                bar.set_message(format!(
                    "({})",
                    inline(d["stepType"].as_str().unwrap_or(""))
                ));
                if self.tick {
                    bar.enable_steady_tick(Duration::from_millis(120));
                }
                if let Some(old) = self.running.insert(
                    step.to_owned(),
                    StepBar {
                        bar,
                        tasks: Vec::new(),
                    },
                ) {
                    old.bar.abandon();
                }
            }
            EventKind::TaskStatusChanged => {
                if let Some(s) = self.running.get_mut(step) {
                    let agent = match d["agent"].as_str().unwrap_or("") {
                        "" => HOST.to_owned(),
                        a => inline(a),
                    };
                    let status = inline(d["status"].as_str().unwrap_or(""));
                    match s.tasks.iter_mut().find(|(a, _)| *a == agent) {
                        Some(entry) => entry.1 = status,
                        None => s.tasks.push((agent, status)),
                    }
                    let msg: Vec<String> =
                        s.tasks.iter().map(|(a, st)| format!("{a} {st}")).collect();
                    s.bar.set_message(msg.join(", "));
                }
            }
            EventKind::StepComplete => {
                let status = d["status"].as_str().unwrap_or("?");
                let line = format!("{} {step} {}", completion_mark(status), inline(status));
                // The spinner goes; the step's outcome stays as a line above the bars.
                match self.running.remove(step) {
                    Some(s) => {
                        let took = s.bar.elapsed().as_secs_f64();
                        s.bar.finish_and_clear();
                        self.print(&format!("{line} ({took:.2}s)"));
                    }
                    None => self.print(&line),
                }
            }
            _ => {
                if let Some(text) = event_text(event) {
                    self.print(text.trim_start());
                }
            }
        }
    }

    /// A line above the bars, stamped with the run's elapsed time.
    fn print(&self, text: &str) {
        let t = self.started.elapsed().as_secs_f64();
        let _ = self.multi.println(format!("[{t:6.2}s] {text}"));
    }

    fn finish(self) {
        for (_, s) in self.running {
            s.bar.abandon();
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)] // tests may unwrap

    use super::*;
    use serde_json::{Value, json};
    use std::sync::{Arc, Mutex};

    fn ev(kind: EventKind, step: Option<&str>, data: Value) -> Event {
        let mut v = json!({"seq": 0, "kind": kind, "executionId": "e1", "data": data});
        if let Some(s) = step {
            v["step"] = json!(s);
        }
        serde_json::from_value(v).unwrap()
    }

    fn run_events() -> Vec<Event> {
        vec![
            ev(EventKind::Start, None, json!({})),
            ev(
                EventKind::StepStart,
                Some("look"),
                json!({"stepType": "NORMAL"}),
            ),
            ev(
                EventKind::TaskStatusChanged,
                Some("look"),
                json!({"agent": "noc", "status": "WORKING"}),
            ),
            ev(EventKind::NegotiationRequest, Some("look"), json!({})),
            ev(
                EventKind::TaskStatusChanged,
                Some("look"),
                json!({"agent": "noc", "status": "COMPLETED"}),
            ),
            ev(
                EventKind::StepComplete,
                Some("look"),
                json!({"status": "COMPLETED"}),
            ),
            ev(
                EventKind::RouteDecision,
                Some("look"),
                json!({"conditional": true, "next": "fix", "condition": "slow", "allowed": true, "reason": "yes"}),
            ),
            ev(
                EventKind::StepStart,
                Some("fix"),
                json!({"stepType": "NORMAL"}),
            ),
            ev(
                EventKind::TaskStatusChanged,
                Some("fix"),
                json!({"agent": "ops", "status": "FAILED"}),
            ),
            ev(
                EventKind::StepComplete,
                Some("fix"),
                json!({"status": "FAILED"}),
            ),
            ev(EventKind::Error, None, json!({"error": "step fix failed"})),
        ]
    }

    #[test]
    fn a_task_the_host_did_itself_shows_host_in_the_agent_column() {
        let e = ev(
            EventKind::TaskStatusChanged,
            Some("summary"),
            json!({"agent": "", "status": "COMPLETED"}),
        );
        assert_eq!(
            event_text(&e).as_deref(),
            Some("  · summary: (host) COMPLETED")
        );
    }

    #[test]
    fn plain_lines_are_the_same_bytes_as_before() {
        let lines: Vec<String> = run_events()
            .iter()
            .filter_map(|e| line_at(e, Duration::from_millis(1250)))
            .collect();
        assert_eq!(
            lines.join("\n"),
            "[  1.25s] ▶ look (NORMAL)\n\
             [  1.25s]   · look: noc WORKING\n\
             [  1.25s]   ⇄ look: Negotiation-T proposal received\n\
             [  1.25s]   · look: noc COMPLETED\n\
             [  1.25s] ✔ look COMPLETED\n\
             [  1.25s]   ↳ route look → fix \"slow\": taken (yes)\n\
             [  1.25s] ▶ fix (NORMAL)\n\
             [  1.25s]   · fix: ops FAILED\n\
             [  1.25s] ✘ fix FAILED\n\
             [  1.25s]   ! step fix failed"
        );
    }

    /// A `Write` the test can read back.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_line_view_writes_one_plain_line_per_shown_event() {
        let out = Shared::default();
        let mut p = LiveProgress::lines(Box::new(out.clone()));
        for e in run_events() {
            p.event(&e);
        }
        p.finish();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 10);
        assert!(text.ends_with('\n'));
        assert!(
            !text.contains('\x1b'),
            "no terminal control codes: {text:?}"
        );
        // Every line is the stamp, then exactly what line_at gives for that event.
        let expected: Vec<String> = run_events().iter().filter_map(event_text).collect();
        for (line, text) in lines.iter().zip(&expected) {
            assert_eq!(&line[..1], "[", "{line}");
            assert_eq!(&line[7..10], "s] ", "{line}");
            assert_eq!(&line[10..], text.as_str());
        }
    }

    #[test]
    fn bars_show_running_steps_and_turn_finished_ones_into_marked_lines() {
        let term = indicatif::InMemoryTerm::new(20, 100);
        let mut bars = Bars::new(ProgressDrawTarget::term_like(Box::new(term.clone())), false);
        let events = run_events();
        for e in &events[..3] {
            bars.event(e);
        }
        let screen = term.contents();
        assert!(screen.contains("look noc WORKING ["), "{screen}");
        assert!(!screen.contains('✔'), "{screen}");

        for e in &events[3..8] {
            bars.event(e);
        }
        let screen = term.contents();
        assert!(screen.contains("✔ look COMPLETED ("), "{screen}");
        assert!(
            screen.contains("⇄ look: Negotiation-T proposal received"),
            "{screen}"
        );
        assert!(
            screen.contains("↳ route look → fix \"slow\": taken (yes)"),
            "{screen}"
        );
        assert!(screen.contains("fix (NORMAL) ["), "{screen}");
        assert!(!screen.contains("look noc WORKING"), "{screen}");

        for e in &events[8..] {
            bars.event(e);
        }
        bars.finish();
        let screen = term.contents();
        assert!(screen.contains("✘ fix FAILED ("), "{screen}");
        assert!(screen.contains("! step fix failed"), "{screen}");
        assert!(!screen.contains("fix ops FAILED ["), "{screen}");
    }

    fn hostile_events() -> Vec<Event> {
        let evil = "x\u{1b}]0;pwned\u{7}\u{1b}[2J\ry\u{9b}\u{202e}";
        vec![
            ev(EventKind::StepStart, Some(evil), json!({"stepType": evil})),
            ev(
                EventKind::TaskStatusChanged,
                Some(evil),
                json!({"agent": evil, "status": evil}),
            ),
            ev(EventKind::StepComplete, Some(evil), json!({"status": evil})),
            ev(EventKind::Error, None, json!({"error": evil})),
        ]
    }

    #[test]
    fn peer_controlled_text_reaches_neither_view_raw() {
        let out = Shared::default();
        let mut p = LiveProgress::lines(Box::new(out.clone()));
        for e in hostile_events() {
            p.event(&e);
        }
        p.finish();
        let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
        assert_eq!(text.lines().count(), 4, "{text:?}");
        for bad in ['\u{1b}', '\u{7}', '\r', '\u{9b}', '\u{202e}'] {
            assert!(!text.contains(bad), "{bad:?} in {text:?}");
        }
        assert!(text.contains("x\\x1b]0;pwned\\x07"), "{text}");

        let term = indicatif::InMemoryTerm::new(10, 200);
        let mut bars = Bars::new(ProgressDrawTarget::term_like(Box::new(term.clone())), false);
        let events = hostile_events();
        for e in &events[..2] {
            bars.event(e);
        }
        let running = term.contents();
        for e in &events[2..] {
            bars.event(e);
        }
        bars.finish();
        for screen in [running, term.contents()] {
            assert!(screen.contains("x\\x1b]0;pwned"), "{screen}");
            assert!(!screen.contains("pwned\u{7}"), "{screen:?}");
            assert!(!screen.contains('\u{202e}'), "{screen:?}");
        }
    }

    #[test]
    fn a_step_left_running_is_abandoned_with_its_last_state() {
        let term = indicatif::InMemoryTerm::new(10, 100);
        let mut bars = Bars::new(ProgressDrawTarget::term_like(Box::new(term.clone())), false);
        for e in &run_events()[..3] {
            bars.event(e);
        }
        bars.finish();
        assert!(
            term.contents().contains("look noc WORKING ["),
            "{}",
            term.contents()
        );
    }
}

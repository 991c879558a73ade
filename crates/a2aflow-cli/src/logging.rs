//! Diagnostics on stderr: the `tracing` subscriber behind `-v`, `RUST_LOG` and `--wire-log`.
//!
//! - No flag and no `RUST_LOG`: warnings only.
//! - `-v` info, `-vv` debug, `-vvv` trace (every target); `RUST_LOG` (the `tracing-subscriber`
//!   `EnvFilter` syntax, e.g. `a2aflow::wire=debug`) replaces the level given by `-v`.
//! - `--wire-log` adds `a2aflow::wire=debug` and turns on the transports' wire log. It is also on
//!   when `RUST_LOG` or `-vv` already enables that target. The wire log redacts secrets as the
//!   library does (credentials, auth headers, secret JSON fields); there is no switch to show them.
//!
//! Lines go through [`crate::terminal::block`]: logged bodies come from the network.

use crate::terminal::block;
use a2aflow::protocol::wirelog::WIRE_TARGET;
use std::io::Write;
use std::sync::OnceLock;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

/// Whether the wire log is on for this process (set once by [`init`]).
static WIRE_LOG: OnceLock<bool> = OnceLock::new();

/// Installs the subscriber. Call once, before any command runs.
pub fn init(verbose: u8, wire_log: bool) {
    let from_env = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.trim().is_empty());
    let mut filter = match &from_env {
        Some(spec) => EnvFilter::try_new(spec).unwrap_or_else(|e| {
            eprintln!("a2aflow: RUST_LOG is not a valid filter ({e}); showing warnings only");
            EnvFilter::new("warn")
        }),
        // The TLS warning is printed once by the CLI itself (see `warn_insecure_tls`).
        None => EnvFilter::new(match verbose {
            0 => "warn,a2aflow::tls=error",
            1 => "info",
            2 => "debug",
            _ => "trace",
        }),
    };
    if wire_log && let Ok(d) = format!("{WIRE_TARGET}=debug").parse() {
        filter = filter.add_directive(d);
    }
    let installed = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(EscapedStderr)
        .try_init()
        .is_ok();
    let wire = installed && tracing::enabled!(target: WIRE_TARGET, tracing::Level::DEBUG);
    let _ = WIRE_LOG.set(wire);
}

/// Whether the transports should log the wire (`--wire-log`, or a filter that shows it).
pub fn wire_log_on() -> bool {
    WIRE_LOG.get().copied().unwrap_or(false)
}

/// Prints, once per process, that TLS verification is off.
pub fn warn_insecure_tls() {
    static WARNED: OnceLock<()> = OnceLock::new();
    WARNED.get_or_init(|| {
        eprintln!(
            "a2aflow: WARNING: TLS server verification is DISABLED (tls.insecure_skip_verify); \
             any server can impersonate an agent. Never use this in production."
        );
    });
}

/// Standard error, every line escaped for the terminal.
struct EscapedStderr;

impl<'a> MakeWriter<'a> for EscapedStderr {
    type Writer = EscapedStderr;

    fn make_writer(&'a self) -> Self::Writer {
        EscapedStderr
    }
}

impl Write for EscapedStderr {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let text = block(&String::from_utf8_lossy(buf), "");
        std::io::stderr().write_all(text.as_bytes())?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

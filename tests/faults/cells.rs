//! The table: which fault, where, over which binding, and what the engine must report.

use std::time::Duration;

use a2aflow::testkit::{Fault, Route};

/// Oversized bodies and events are this large; the configured limits are far below.
pub const OVERSIZE: usize = 1 << 20;

/// Pause between bytes of a byte-drip answer (any answer then outlasts the request timeout).
pub const DRIP: Duration = Duration::from_millis(50);

/// Chunks a flooding agent would send (far more than any cap lets through).
pub const FLOOD_CHUNKS: usize = 100_000;

/// Bytes per flood chunk (below the SSE event limit; the artifact cap is a few chunks).
pub const FLOOD_CHUNK_BYTES: usize = 16 * 1024;

/// Pause between the keep-alives of a stream that never ends (well inside the idle timeout).
pub const KEEP_ALIVE: Duration = Duration::from_millis(200);

/// Where the fault hits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Fetching the public agent card (binding-independent).
    Card,
    /// A non-streaming SendMessage (`returnImmediately`, then polled).
    Send,
    /// GetTask polling of a non-streaming agent.
    Poll,
    /// SendStreamingMessage of a streaming agent.
    Stream,
    /// SubscribeToTask on a running task (protocol layer).
    Subscribe,
    /// CancelTask on a running task (protocol layer).
    Cancel,
    /// The Negotiation-T reply, sent on the task after the first proposal.
    NegotiationReply,
    /// The engine's own best-effort CancelTask of a task still running at the run deadline.
    EngineCancel,
    /// The follow-up that answers a parked INPUT_REQUIRED gate (`GatePolicy::Park`), sent on
    /// the gated task when the host answers.
    GateAnswer,
}

/// A binding, or none for the card fetch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wire {
    /// No binding involved.
    Any,
    /// JSON-RPC.
    JsonRpc,
    /// HTTP+JSON.
    Rest,
    /// gRPC (the testkit's gRPC door).
    Grpc,
}

/// The misbehaviour of a cell.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Trouble {
    /// A testkit fault on the place's route.
    Inject(Fault),
    /// The `auth` behaviour: the task stops in AUTH_REQUIRED.
    AuthRequiredTask,
    /// The `negotiate` behaviour answered with REJECT until the engine's budget runs out.
    EndlessProposals,
    /// The agent serves TLS with a certificate for another host.
    WrongCertificate,
    /// The engine's stream drops once the task is known, and its SubscribeToTask meets this fault.
    ResubscribeFault(Fault),
    /// The agent's URL is a TLS server that accepts TCP and never answers the handshake.
    SilentTls,
    /// A hostile card: fetched from one origin, its `supportedInterfaces` point at the (real,
    /// credential-checking) agent at another origin, and credentials are configured for the
    /// agent. With `opt_in` the agent's credentials entry lists that origin in `allowed_origins`.
    CrossOriginCard {
        /// The per-agent opt-in is configured.
        opt_in: bool,
    },
    /// A hostile card fetched over https whose interfaces are plain http, credentials configured
    /// (and the http origin even listed in `allowed_origins`: no opt-in exists).
    DowngradeCard,
    /// Nothing goes wrong: the parked gate is answered and its follow-up completes the task.
    AnsweredGate,
    /// The `flaky 2` behaviour: the first two attempts fail (TASK_STATE_FAILED), the third
    /// completes; the run's default retry policy allows three attempts on `a2a.task_failed`.
    FailsTwiceThenSucceeds,
}

/// What the cell must end with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// The faulty branch fails with this stable code.
    Code(&'static str),
    /// The engine absorbs the fault and the faulty branch completes.
    Recovers,
    /// `a2a.timeout` whose `phase` detail is this one (which timeout fired).
    Timeout(&'static str),
}

/// One cell of the matrix.
#[derive(Clone, Debug)]
pub struct Cell {
    /// Where.
    pub place: Place,
    /// Over which binding.
    pub wire: Wire,
    /// What goes wrong.
    pub trouble: Trouble,
    /// What must come out.
    pub expect: Expect,
    /// A known engine finding this cell reproduces (reported, and failing only with
    /// `FAULTS_STRICT=1` until the engine changes).
    pub finding: Option<&'static str>,
}

impl Cell {
    /// A readable, unique name.
    pub fn label(&self) -> String {
        let trouble = match &self.trouble {
            Trouble::Inject(f) => format!("{f:?}"),
            Trouble::ResubscribeFault(f) => format!("dropped stream, then {f:?}"),
            other => format!("{other:?}"),
        };
        format!("{:?}/{:?}/{trouble}", self.place, self.wire)
    }

    /// The route the injected fault goes on.
    pub fn route(&self) -> Route {
        match self.place {
            Place::Card => Route::Card,
            Place::Send | Place::NegotiationReply | Place::GateAnswer => Route::Send,
            Place::Poll => Route::Get,
            Place::Stream => Route::Stream,
            Place::Subscribe => Route::Subscribe,
            Place::Cancel | Place::EngineCancel => Route::Cancel,
        }
    }
}

fn wrong_auth() -> Fault {
    Fault::RequireAuth(a2aflow::testkit::Credential::Bearer(
        "not-what-the-engine-sends".into(),
    ))
}

/// Faults that hit a unary (JSON body) route, with the code each must produce.
fn unary_faults() -> Vec<(Fault, Expect)> {
    vec![
        (Fault::RefuseConnection, Expect::Code("a2a.connection")),
        (Fault::ResetMidBody, Expect::Code("a2a.connection")),
        (
            Fault::ServerError { status: 502 },
            Expect::Code("a2a.http_status"),
        ),
        (Fault::MalformedJson, Expect::Code("a2a.invalid_response")),
        (Fault::WrongTypes, Expect::Code("a2a.invalid_response")),
        (
            Fault::OversizedBody { bytes: OVERSIZE },
            Expect::Code("a2a.response_too_large"),
        ),
        (
            Fault::ByteDrip { interval: DRIP },
            Expect::Code("a2a.timeout"),
        ),
        (Fault::NeverAnswer, Expect::Code("a2a.timeout")),
        (wrong_auth(), Expect::Code("auth.rejected")),
    ]
}

/// Faults that hit a streaming route before any event carried a task id.
fn stream_faults() -> Vec<(Fault, Expect)> {
    vec![
        (Fault::RefuseConnection, Expect::Code("a2a.connection")),
        (
            Fault::ResetMidStream { after_events: 0 },
            Expect::Code("a2a.connection"),
        ),
        (
            Fault::ServerError { status: 503 },
            Expect::Code("a2a.http_status"),
        ),
        (Fault::MalformedJson, Expect::Code("a2a.invalid_response")),
        (Fault::WrongTypes, Expect::Code("a2a.invalid_response")),
        (
            Fault::TruncatedSse { after_events: 0 },
            Expect::Code("a2a.invalid_response"),
        ),
        (
            Fault::OversizedSseEvent { bytes: OVERSIZE },
            Expect::Code("a2a.response_too_large"),
        ),
        (
            Fault::SseErrorEvent { after_events: 0 },
            Expect::Code("a2a.internal"),
        ),
        (Fault::NeverAnswer, Expect::Code("a2a.timeout")),
        (wrong_auth(), Expect::Code("auth.rejected")),
    ]
}

/// The whole matrix.
pub fn matrix() -> Vec<Cell> {
    let mut cells = Vec::new();
    let mut add = |place, wire, trouble, expect| {
        cells.push(Cell {
            place,
            wire,
            trouble,
            expect,
            finding: None,
        })
    };
    for (fault, expect) in unary_faults() {
        add(Place::Card, Wire::Any, Trouble::Inject(fault), expect);
    }
    add(
        Place::Card,
        Wire::Any,
        Trouble::WrongCertificate,
        Expect::Code("a2a.tls"),
    );
    add(
        Place::Card,
        Wire::Any,
        Trouble::SilentTls,
        Expect::Timeout("connect"),
    );
    for wire in [Wire::JsonRpc, Wire::Rest] {
        for place in [
            Place::Send,
            Place::Poll,
            Place::Cancel,
            Place::NegotiationReply,
        ] {
            for (fault, expect) in unary_faults() {
                add(place, wire, Trouble::Inject(fault), expect);
            }
        }
        for place in [Place::Stream, Place::Subscribe] {
            for (fault, expect) in stream_faults() {
                add(place, wire, Trouble::Inject(fault), expect);
            }
        }
        // A byte-drip stream never completes an event, so the idle-stream timeout should end it;
        // the protocol call is bounded by its own deadline, as the engine bounds its calls.
        let drip = || Trouble::Inject(Fault::ByteDrip { interval: DRIP });
        add(Place::Stream, wire, drip(), Expect::Code("a2a.timeout"));
        add(Place::Subscribe, wire, drip(), Expect::Code("a2a.timeout"));
        // The run's deadline passes while the task hangs: the engine's best-effort CancelTask
        // meets the fault, which must neither surface nor stretch the run.
        for (fault, _) in unary_faults() {
            add(
                Place::EngineCancel,
                wire,
                Trouble::Inject(fault),
                Expect::Code("workflow.timeout"),
            );
        }
        // The engine resubscribes to a dropped stream; a failing SubscribeToTask falls back to
        // GetTask polling, so the branch still completes.
        for fault in [
            Fault::RefuseConnection,
            Fault::ServerError { status: 503 },
            Fault::MalformedJson,
            Fault::NeverAnswer,
            Fault::ResetMidStream { after_events: 0 },
        ] {
            add(
                Place::Subscribe,
                wire,
                Trouble::ResubscribeFault(fault),
                Expect::Recovers,
            );
        }
        // A stream dropped after the task is known is resubscribed: the branch completes.
        add(
            Place::Stream,
            wire,
            Trouble::Inject(Fault::ResetMidStream { after_events: 1 }),
            Expect::Recovers,
        );
        for place in [Place::Send, Place::Stream] {
            add(
                place,
                wire,
                Trouble::AuthRequiredTask,
                Expect::Code("a2a.auth_required"),
            );
            add(
                place,
                wire,
                Trouble::WrongCertificate,
                Expect::Code("a2a.tls"),
            );
        }
        // A TLS server that never answers the handshake: the connect timeout (far below the
        // request timeout in these cells) must end the call, not the request timeout.
        add(
            Place::Send,
            wire,
            Trouble::SilentTls,
            Expect::Timeout("connect"),
        );
        add(
            Place::NegotiationReply,
            wire,
            Trouble::EndlessProposals,
            Expect::Code("negotiation.budget_exhausted"),
        );
        // Identities that change under the engine: a task id that changes mid-task, and a task id
        // answered for another context (the agent reusing a task across contexts).
        let foreign = |task, context, after_events| {
            Trouble::Inject(Fault::ForeignIds {
                task,
                context,
                after_events,
            })
        };
        let invalid = || Expect::Code("a2a.invalid_response");
        add(Place::Send, wire, foreign(false, true, 0), invalid());
        add(Place::Poll, wire, foreign(true, false, 0), invalid());
        add(Place::Poll, wire, foreign(false, true, 0), invalid());
        add(Place::Stream, wire, foreign(true, false, 1), invalid());
        add(Place::Stream, wire, foreign(false, true, 0), invalid());
        // The same mid-negotiation: the answer to the engine's reply names another task or context.
        for (task, context) in [(true, false), (false, true)] {
            add(
                Place::NegotiationReply,
                wire,
                foreign(task, context, 0),
                Expect::Code("negotiation.identity_changed"),
            );
        }
    }
    hostile_stream_cells(&mut cells);
    hostile_cards(&mut cells);
    gate_answer_cells(&mut cells);
    retry_cells(&mut cells);
    grpc_cells(&mut cells);
    cells
}

/// A parked gate answered by the host: the follow-up on the gated task meets each unary fault
/// (armed only when the gate opened) and fails with its code; without a fault it completes.
fn gate_answer_cells(cells: &mut Vec<Cell>) {
    let mut add = |wire, trouble, expect| {
        cells.push(Cell {
            place: Place::GateAnswer,
            wire,
            trouble,
            expect,
            finding: None,
        })
    };
    for wire in [Wire::JsonRpc, Wire::Rest] {
        add(wire, Trouble::AnsweredGate, Expect::Recovers);
        for (fault, expect) in unary_faults() {
            add(wire, Trouble::Inject(fault), expect);
        }
    }
    add(Wire::Grpc, Trouble::AnsweredGate, Expect::Recovers);
    for (fault, expect) in grpc_unary_faults() {
        add(Wire::Grpc, Trouble::Inject(fault), expect);
    }
}

/// The unary faults the testkit's gRPC door injects, with the codes of the other bindings.
fn grpc_unary_faults() -> Vec<(Fault, Expect)> {
    vec![
        (Fault::RefuseConnection, Expect::Code("a2a.connection")),
        (
            Fault::ServerError { status: 502 },
            Expect::Code("a2a.http_status"),
        ),
        (Fault::MalformedJson, Expect::Code("a2a.invalid_response")),
        (Fault::WrongTypes, Expect::Code("a2a.invalid_response")),
        (
            Fault::OversizedBody { bytes: OVERSIZE },
            Expect::Code("a2a.response_too_large"),
        ),
        (Fault::NeverAnswer, Expect::Code("a2a.timeout")),
        (wrong_auth(), Expect::Code("auth.rejected")),
    ]
}

/// The gRPC column: the faults the testkit's gRPC door injects (an answer replaced, or a stream
/// reset), at every place but the negotiation reply, with the codes of the other bindings.
fn grpc_cells(cells: &mut Vec<Cell>) {
    let mut add = |place, trouble, expect| {
        cells.push(Cell {
            place,
            wire: Wire::Grpc,
            trouble,
            expect,
            finding: None,
        })
    };
    for place in [Place::Send, Place::Poll, Place::Cancel] {
        for (fault, expect) in grpc_unary_faults() {
            add(place, Trouble::Inject(fault), expect);
        }
    }
    for (fault, _) in grpc_unary_faults() {
        add(
            Place::EngineCancel,
            Trouble::Inject(fault),
            Expect::Code("workflow.timeout"),
        );
    }
    for place in [Place::Stream, Place::Subscribe] {
        for (fault, expect) in [
            (Fault::RefuseConnection, Expect::Code("a2a.connection")),
            (
                Fault::ResetMidStream { after_events: 0 },
                Expect::Code("a2a.connection"),
            ),
            (
                Fault::ServerError { status: 503 },
                Expect::Code("a2a.http_status"),
            ),
            (Fault::MalformedJson, Expect::Code("a2a.invalid_response")),
            (Fault::NeverAnswer, Expect::Code("a2a.timeout")),
            (wrong_auth(), Expect::Code("auth.rejected")),
        ] {
            add(place, Trouble::Inject(fault), expect);
        }
    }
    // A stream dropped after the task is known is resubscribed: the branch completes.
    add(
        Place::Stream,
        Trouble::Inject(Fault::ResetMidStream { after_events: 1 }),
        Expect::Recovers,
    );
    for fault in [Fault::RefuseConnection, Fault::NeverAnswer] {
        add(
            Place::Subscribe,
            Trouble::ResubscribeFault(fault),
            Expect::Recovers,
        );
    }
}

fn chunk_flood() -> Fault {
    Fault::ChunkFlood {
        after_events: 1,
        chunks: FLOOD_CHUNKS,
        chunk_bytes: FLOOD_CHUNK_BYTES,
    }
}

fn keep_alive_forever() -> Fault {
    Fault::KeepAliveForever {
        after_events: 1,
        every: KEEP_ALIVE,
    }
}

/// Streams that misbehave after the task is known: a structured error after some
/// events is the agent's answer; a chunk flood meets the artifact cap; a stream that only keeps
/// itself alive is ended by the run's deadline.
fn hostile_stream_cells(cells: &mut Vec<Cell>) {
    let mut add = |place, wire, trouble, expect| {
        cells.push(Cell {
            place,
            wire,
            trouble,
            expect,
            finding: None,
        })
    };
    for wire in [Wire::JsonRpc, Wire::Rest] {
        for after_events in [1, 3] {
            add(
                Place::Stream,
                wire,
                Trouble::Inject(Fault::SseErrorEvent { after_events }),
                Expect::Code("a2a.internal"),
            );
        }
        add(
            Place::Subscribe,
            wire,
            Trouble::Inject(Fault::SseErrorEvent { after_events: 1 }),
            Expect::Code("a2a.internal"),
        );
        add(
            Place::Subscribe,
            wire,
            Trouble::ResubscribeFault(Fault::SseErrorEvent { after_events: 1 }),
            Expect::Code("a2a.internal"),
        );
        add(
            Place::Stream,
            wire,
            Trouble::Inject(chunk_flood()),
            Expect::Code("a2a.response_too_large"),
        );
        add(
            Place::Subscribe,
            wire,
            Trouble::ResubscribeFault(chunk_flood()),
            Expect::Code("a2a.response_too_large"),
        );
        add(
            Place::Stream,
            wire,
            Trouble::Inject(keep_alive_forever()),
            Expect::Code("workflow.timeout"),
        );
        // Over the protocol layer, the stream's own deadline ends it.
        add(
            Place::Subscribe,
            wire,
            Trouble::Inject(keep_alive_forever()),
            Expect::Code("a2a.timeout"),
        );
    }
}

/// The hostile-card cells: credentials never follow a card to an origin the user did not
/// configure, on either binding.
fn hostile_cards(cells: &mut Vec<Cell>) {
    for wire in [Wire::JsonRpc, Wire::Rest] {
        for (trouble, expect) in [
            (
                Trouble::CrossOriginCard { opt_in: false },
                Expect::Code("auth.host_mismatch"),
            ),
            (Trouble::CrossOriginCard { opt_in: true }, Expect::Recovers),
            (
                Trouble::DowngradeCard,
                Expect::Code("auth.insecure_downgrade"),
            ),
        ] {
            cells.push(Cell {
                place: Place::Send,
                wire,
                trouble,
                expect,
                finding: None,
            });
        }
    }
}

/// The retry cells: a task that fails twice and succeeds on the third attempt, sent and
/// streamed on every binding; every attempt goes in the same context, each naming the earlier
/// attempts' tasks.
fn retry_cells(cells: &mut Vec<Cell>) {
    for wire in [Wire::JsonRpc, Wire::Rest, Wire::Grpc] {
        for place in [Place::Send, Place::Stream] {
            cells.push(Cell {
                place,
                wire,
                trouble: Trouble::FailsTwiceThenSucceeds,
                expect: Expect::Recovers,
                finding: None,
            });
        }
    }
}

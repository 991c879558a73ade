//! Event delivery: one hub per run numbers events (`seq`) in causal order and hands them to the
//! host's sink — a synchronous callback or a bounded channel (back-pressure: the run waits for the
//! consumer, never buffers without bound).

use crate::journal::EncodedEvent;
use crate::panic_guard::panic_message;
use crate::refill;
use a2aflow_model::event::EventView;
use a2aflow_model::event_data::WorkflowCompleteData;
use a2aflow_model::{ClientEvent, Event, EventBody, EventKind, EventPayload, EventTime, SharedStr};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use tokio::sync::{Mutex, mpsc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// A synchronous event sink. It must not block; a panic inside it is logged and ignored.
pub type EventCallback = Arc<dyn Fn(&Event) + Send + Sync>;

/// The host's event hook: sees each event of a run before anything else does (the sink, the
/// store's copy, the finish hook) and keeps, drops or replaces it. It runs under the run's
/// ordering lock, so what it returns is numbered in place (`seq` is rewritten: the sequence stays
/// gapless) and causal order holds. It must not block; a panic inside it is logged and the event
/// goes on unchanged.
pub type EventHook = Arc<dyn Fn(&Event) -> EventEdit + Send + Sync>;

/// What an [`EventHook`] does with one event.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum EventEdit {
    /// The event goes on unchanged.
    Keep,
    /// The event is dropped: no consumer sees it.
    Drop,
    /// These events go on instead, in this order (the event itself, changed or not, among them
    /// to keep it; injected events typically use [`a2aflow_model::EventKind::HostEvent`]). Their
    /// `seq` is assigned by the run.
    Replace(Vec<Event>),
}

/// How many events a run keeps for its finish hook; later ones are not kept (and a warning
/// says so once), so a run with a finish hook holds bounded memory.
pub(crate) const RECORDED_EVENTS_LIMIT: usize = 1_000_000;

pub(crate) enum SinkKind {
    None,
    Callback(EventCallback),
    Channel(mpsc::Sender<Event>),
    /// Delegation: a child run's events go through its parent's hub (numbered in the parent's
    /// sequence, delivered to the parent's sink) keeping the child's execution id and depth.
    Parent(Arc<EventHub>),
}

/// Per-run event hub: numbers events under one lock so concurrent emitters stay totally ordered.
pub(crate) struct EventHub {
    execution_id: SharedStr,
    sink: SinkKind,
    /// The next event's `seq` (and what a callback's last event left for the next). Held only to
    /// number an event (and, in a durable run, to put its text in the journal's buffer, which so
    /// stays in `seq` order; with a callback sink, to hand it over), never across an await: the
    /// tasks of a run that emit at once do not queue behind each other's wake-ups.
    next_seq: std::sync::Mutex<Numbering>,
    /// Held by an event that goes to a sink or through a hook from its numbering to its
    /// delivery, so the sink sees the events in `seq` order. A run whose events go only to its
    /// journal never takes it but for its child runs' events.
    delivery: Mutex<()>,
    /// Cancelled when the channel consumer went away (it is the run's token: that cancels the run).
    consumer_gone: CancellationToken,
    /// The channel consumer went away: nothing more is sent. A run cancelled for any other reason
    /// keeps delivering its events until `close`.
    gone: std::sync::atomic::AtomicBool,
    /// After this instant a stuck consumer no longer holds the run: events are dropped.
    hard_deadline: Instant,
    /// Delegation depth of the run (0 for a root run), written on every event.
    depth: u32,
    /// A durable run's journal buffer: every event is copied into it.
    tee: Option<Arc<EventLog>>,
    /// The host's event hook (a root run's only: a child's events pass its parent's).
    hook: Option<EventHook>,
    /// The events kept for the host's finish hook, when it has one.
    recorded: Option<std::sync::Mutex<Vec<Event>>>,
    /// Set once the record reached [`RECORDED_EVENTS_LIMIT`] (its warning is given once).
    recorded_full: AtomicBool,
    /// Per event kind ([`EventKind::index`]), the length of the last journaled event's text:
    /// the next one of its kind is written into a buffer of that size.
    text_sizes: [AtomicUsize; EventKind::ALL.len()],
}

/// The numbering of a run's events (see [`EventHub::next_seq`]).
#[derive(Default)]
struct Numbering {
    /// The next event's `seq`.
    seq: u64,
    /// What the last event handed to a callback sink left for the next one.
    spare: Spare,
}

/// The parts of the last event a callback sink was handed, reused for the next one: its
/// execution id (the run's, unchanged), the buffers of its step and task id, and its payload's
/// allocation (with the payload's strings, for the kinds `refill` writes into). A callback sees
/// an event only by reference, so once it returned nothing else reaches these parts (a
/// consumer that cloned the event made its own copies of the strings; a payload it still shares
/// is not reused). This saves a callback sink's event most of its allocations: an event costs
/// what it carries, not five `malloc`s and `free`s.
#[derive(Default)]
struct Spare {
    execution_id: String,
    step: Option<String>,
    task_id: Option<String>,
    /// `Arc`s no one else holds: one for each kind `refill` writes into, kept whole (at
    /// `refill::place_of` its kind), and one inert, at [`INERT_PLACE`] ([`Spare::keep`]).
    payloads: [Option<Arc<EventPayload>>; INERT_PLACE + 1],
}

/// Where [`Spare`] keeps its inert payload allocation (after those `refill` writes into).
const INERT_PLACE: usize = refill::REFILLED;

impl Spare {
    /// The payload `fill` writes, in a shared allocation: the spare one of a payload of `kind`
    /// when there is one, else the inert one, else a new one. `fill` is given the payload the
    /// spare held (see [`Spare::keep`]) to write into, in place (a payload is a few hundred
    /// bytes: it is not moved out and back). A spare of another kind is not taken: its kind
    /// would then take another's, and none would find its own.
    fn payload(
        &mut self,
        kind: EventKind,
        fill: impl FnOnce(&mut EventPayload),
    ) -> Arc<EventPayload> {
        let own = refill::place_of(kind).and_then(|at| self.payloads[at].take());
        let mut shared = own
            .or_else(|| self.payloads[INERT_PLACE].take())
            .unwrap_or_else(|| Arc::new(INERT));
        match Arc::get_mut(&mut shared) {
            Some(slot) => fill(slot),
            // Not reached: a spare is kept only when no one else holds it, and no one else
            // can have taken it since. Should it be, the payload goes in a new allocation.
            None => shared = Arc::new(filled(fill)),
        }
        shared
    }

    /// The run's execution id as an event's owned string (the last event's, when it was kept).
    fn execution_id(&mut self, id: &str) -> String {
        let kept = std::mem::take(&mut self.execution_id);
        if kept == id { kept } else { id.to_owned() }
    }

    /// `text` as an owned string, written into the spare buffer when there is one.
    fn text(spare: &mut Option<String>, text: Option<&str>) -> Option<String> {
        let text = text?;
        let mut owned = spare.take().unwrap_or_default();
        owned.clear();
        owned.push_str(text);
        Some(owned)
    }

    /// Keeps the parts of `event`, handed to the callback and back, for the next event. The
    /// payload's allocation is kept when no one else holds it: whole when `refill` writes into
    /// payloads of its kind (they own only their strings), any other dropped now (anything it
    /// shares, such as a step's results, is released before the run takes it back).
    fn keep(&mut self, event: Event) {
        let Event {
            execution_id,
            step,
            task_id,
            data,
            ..
        } = event;
        self.execution_id = execution_id;
        if step.is_some() {
            self.step = step;
        }
        if task_id.is_some() {
            self.task_id = task_id;
        }
        let Some(mut shared) = data.into_payload() else {
            return;
        };
        let Some(slot) = Arc::get_mut(&mut shared) else {
            return;
        };
        let at = refill::place_of(slot.kind()).unwrap_or_else(|| {
            *slot = INERT;
            INERT_PLACE
        });
        self.payloads[at] = Some(shared);
    }
}

/// What a spare payload allocation holds between two events: a payload with nothing on the heap.
const INERT: EventPayload = EventPayload::WorkflowComplete(WorkflowCompleteData { success: false });

/// The payload `fill` writes into an inert one.
fn filled(fill: impl FnOnce(&mut EventPayload)) -> EventPayload {
    let mut payload = INERT;
    fill(&mut payload);
    payload
}

/// The kind of [`INERT`]: a payload built from scratch takes the inert spare allocation.
const INERT_KIND: EventKind = EventKind::WorkflowComplete;

impl EventHub {
    pub(crate) fn new(
        execution_id: SharedStr,
        sink: SinkKind,
        consumer_gone: CancellationToken,
        hard_deadline: Instant,
    ) -> Self {
        EventHub {
            execution_id,
            sink,
            next_seq: std::sync::Mutex::new(Numbering::default()),
            delivery: Mutex::new(()),
            consumer_gone,
            gone: std::sync::atomic::AtomicBool::new(false),
            hard_deadline,
            depth: 0,
            tee: None,
            hook: None,
            recorded: None,
            recorded_full: AtomicBool::new(false),
            text_sizes: std::array::from_fn(|_| AtomicUsize::new(0)),
        }
    }

    /// The same hub passing every event through `hook` first, and keeping the events for a
    /// finish hook when `record` is set.
    pub(crate) fn hooked(mut self, hook: Option<EventHook>, record: bool) -> Self {
        self.hook = hook;
        self.recorded = record.then(Default::default);
        self
    }

    /// The events kept for the finish hook (empty without one).
    pub(crate) fn recorded(&self) -> Vec<Event> {
        self.recorded
            .as_ref()
            .map(|r| {
                r.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .clone()
            })
            .unwrap_or_default()
    }

    /// The same hub copying every event into `log`, numbering from `first_seq` (a resumed run
    /// continues the sequence its store holds).
    pub(crate) fn journaled(mut self, log: Arc<EventLog>, first_seq: u64) -> Self {
        self.tee = Some(log);
        self.next_seq = std::sync::Mutex::new(Numbering {
            seq: first_seq,
            spare: Spare::default(),
        });
        self
    }

    /// The same hub for a run at delegation depth `depth`.
    pub(crate) fn at_depth(mut self, depth: u32) -> Self {
        self.depth = depth;
        self
    }

    pub(crate) fn enabled(&self) -> bool {
        match &self.sink {
            SinkKind::None => self.tee.is_some() || self.recorded.is_some(),
            SinkKind::Parent(parent) => parent.enabled(),
            SinkKind::Callback(_) | SinkKind::Channel(_) => true,
        }
    }

    /// Emits one event with typed data unless `closed` is set (checked under the ordering
    /// lock): the kind is the payload's, so it cannot disagree with the data. The payload is
    /// built, and serialised, only when someone listens and the event goes out.
    pub(crate) async fn emit_payload(
        &self,
        step: Option<&str>,
        task_id: Option<&str>,
        closed: Option<&AtomicBool>,
        payload: impl FnOnce() -> EventPayload,
    ) {
        if !self.enabled() {
            return;
        }
        if let SinkKind::Parent(parent) = &self.sink {
            if closed.is_some_and(|c| c.load(Ordering::Acquire)) {
                return;
            }
            let event = self.event(0, EventTime::now(), step, task_id, Arc::new(payload()));
            return parent.forward(event).await;
        }
        if self.journal_only() {
            return self.journal(step, task_id, closed, payload());
        }
        if let Some(cb) = self.direct_callback() {
            return self.call_back(cb, (step, task_id, None), closed, payload);
        }
        let _delivery = self.delivery.lock().await;
        if closed.is_some_and(|c| c.load(Ordering::Acquire)) {
            return;
        }
        let payload = Arc::new(payload());
        // The event's time: one clock read, written out as text only when serialised.
        let time = EventTime::now();
        if self.hook.is_some() || self.recorded.is_some() {
            let event = self.event(self.numbering().seq, time, step, task_id, payload);
            return Box::pin(self.publish(event)).await;
        }
        let seq = {
            let mut next = self.numbering();
            let seq = next.seq;
            if let Some(log) = &self.tee
                && let Some(encoded) = self.encoded(seq, time, step, task_id, &payload)
            {
                log.push(encoded);
            }
            next.seq += 1;
            seq
        };
        if matches!(self.sink, SinkKind::None) {
            return;
        }
        let event = self.event(seq, time, step, task_id, payload);
        if let SinkKind::Callback(cb) = &self.sink {
            return call_sink(cb, &event);
        }
        // Boxed: the channel send with its deadline is most of this future's size, and every
        // future that may emit (each task's, each dispatch's) would otherwise carry it inline,
        // also when no sink is set. Only events sent to a channel pay for the allocation.
        Box::pin(self.deliver(event)).await;
    }

    /// The callback sink, when events go straight to it (no hook, no finish hook): then an
    /// event is emitted without waiting for anything ([`EventHub::call_back`]).
    fn direct_callback(&self) -> Option<&EventCallback> {
        match &self.sink {
            SinkKind::Callback(cb) if self.hook.is_none() && self.recorded.is_none() => Some(cb),
            _ => None,
        }
    }

    /// The next event's `seq`, locked (see [`EventHub::next_seq`]).
    fn numbering(&self) -> std::sync::MutexGuard<'_, Numbering> {
        // Every update of the count is one increment, and the spare parts are only reused
        // buffers (a missing one is made anew): a poisoned lock's state is still right.
        self.next_seq
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Whether the run's events go only to its journal (a durable run without a sink, hook or
    /// finish hook): then [`EventHub::journal`] writes them.
    fn journal_only(&self) -> bool {
        self.tee.is_some()
            && matches!(self.sink, SinkKind::None)
            && self.hook.is_none()
            && self.recorded.is_none()
    }

    /// An event for a callback sink (no hook, no finish hook): numbered, journaled and handed to
    /// the callback under the numbering lock alone. The callback is synchronous, so it sees the
    /// events in `seq` order without the async delivery lock.
    /// The event's step and task id, and its time: `at` when given (see [`EventHub::moment`]),
    /// else read at the event.
    fn call_back(
        &self,
        cb: &EventCallback,
        (step, task_id, at): (Option<&str>, Option<&str>, Option<EventTime>),
        closed: Option<&AtomicBool>,
        payload: impl FnOnce() -> EventPayload,
    ) {
        let mut next = self.numbering();
        if closed.is_some_and(|c| c.load(Ordering::Acquire)) {
            return;
        }
        let payload = next.spare.payload(INERT_KIND, |slot| *slot = payload());
        let time = at.unwrap_or_else(EventTime::now);
        self.hand_over(cb, &mut next, time, step, task_id, payload);
    }

    /// One time for events that happen together (a step's start and its tasks' requests, a
    /// task's status change and its response), read once when they go straight to a callback
    /// sink; `None` otherwise (each event then reads the clock as it is numbered).
    pub(crate) fn moment(&self) -> Option<EventTime> {
        self.direct_callback().map(|_| EventTime::now())
    }

    /// [`EventHub::emit_payload`] of an event that happened `at` (see [`EventHub::moment`]).
    pub(crate) async fn emit_payload_at(
        &self,
        (step, task_id, at): (Option<&str>, Option<&str>, Option<EventTime>),
        payload: impl FnOnce() -> EventPayload,
    ) {
        if let Some(cb) = self.direct_callback() {
            return self.call_back(cb, (step, task_id, at), None, payload);
        }
        self.emit_payload(step, task_id, None, payload).await;
    }

    /// Emits one event whose payload `fill` writes into the last payload of `kind` a callback
    /// sink handed back (reusing its strings: see `refill`), or into an inert one. Its time is
    /// `at` when given (see [`EventHub::moment`]).
    pub(crate) async fn emit_refilled(
        &self,
        (step, task_id, at): (Option<&str>, Option<&str>, Option<EventTime>),
        kind: EventKind,
        fill: impl FnOnce(&mut EventPayload),
    ) {
        if !self.enabled() {
            return;
        }
        if let Some(cb) = self.direct_callback() {
            let mut next = self.numbering();
            let payload = next.spare.payload(kind, fill);
            let time = at.unwrap_or_else(EventTime::now);
            return self.hand_over(cb, &mut next, time, step, task_id, payload);
        }
        self.emit_payload(step, task_id, None, || filled(fill))
            .await;
    }

    /// Emits `n` events about step `step` that happen together (a step's route decisions), in
    /// order and with one time. `fill(i, payload)` writes the `i`-th payload into `payload`: the
    /// last route decision a callback sink handed back when there is one (its strings are
    /// reused), else an inert payload. With a callback sink (and no hook or finish hook) the
    /// events are numbered and handed over under one hold of the numbering lock; otherwise each
    /// goes its own way ([`EventHub::emit_payload`]).
    pub(crate) async fn emit_together(
        &self,
        step: &str,
        n: usize,
        mut fill: impl FnMut(usize, &mut EventPayload),
    ) {
        if n == 0 || !self.enabled() {
            return;
        }
        if let Some(cb) = self.direct_callback() {
            let mut next = self.numbering();
            let time = EventTime::now();
            for i in 0..n {
                let payload = next.spare.payload(EventKind::RouteDecision, |p| fill(i, p));
                self.hand_over(cb, &mut next, time, Some(step), None, payload);
            }
            return;
        }
        for i in 0..n {
            self.emit_payload(Some(step), None, None, || filled(|p| fill(i, p)))
                .await;
        }
    }

    /// Numbers an event for a callback sink (journaled in a durable run) and hands it to the
    /// callback; what it leaves is kept for the next one. Called with the numbering lock held.
    fn hand_over(
        &self,
        cb: &EventCallback,
        next: &mut Numbering,
        time: EventTime,
        step: Option<&str>,
        task_id: Option<&str>,
        payload: Arc<EventPayload>,
    ) {
        let seq = next.seq;
        if let Some(log) = &self.tee
            && let Some(encoded) = self.encoded(seq, time, step, task_id, &payload)
        {
            log.push(encoded);
        }
        next.seq += 1;
        let spare = &mut next.spare;
        let event = Event {
            seq,
            kind: payload.kind(),
            time: Some(time),
            execution_id: spare.execution_id(&self.execution_id),
            depth: self.depth,
            step: Spare::text(&mut spare.step, step),
            task_id: Spare::text(&mut spare.task_id, task_id),
            data: payload.into(),
        };
        call_sink(cb, &event);
        spare.keep(event);
    }

    /// An event of a run whose events go only to its journal: its text is written before the
    /// event takes its place in the sequence, and the place is taken under the numbering lock
    /// alone (a plain mutex, held to number, time and buffer the event). Serialising under the
    /// async ordering lock made a wide step's tasks queue behind each other's wake-ups.
    fn journal(
        &self,
        step: Option<&str>,
        task_id: Option<&str>,
        closed: Option<&AtomicBool>,
        payload: EventPayload,
    ) {
        let view = EventView {
            seq: 0,
            kind: payload.kind(),
            time: None,
            execution_id: &self.execution_id,
            depth: self.depth,
            step,
            task_id,
            data: &payload,
        };
        // Written at the size the last event of its kind took: no buffer grows on the way.
        let size = self.text_sizes.get(view.kind.index());
        let tail = view.tail_sized(size.map_or(0, |s| s.load(Ordering::Relaxed)));
        if let (Some(size), Ok(tail)) = (size, &tail) {
            size.store(tail.len(), Ordering::Relaxed);
        }
        let mut next = self.numbering();
        if closed.is_some_and(|c| c.load(Ordering::Acquire)) {
            return;
        }
        let time = EventTime::now();
        let seq = next.seq;
        let encoded = match tail {
            Ok(tail) => Some(EncodedEvent::from_parts(seq, tail.place(seq, time))),
            // The slow path keeps the event's place with `null` data.
            Err(_) => self.encoded(seq, time, step, task_id, &payload),
        };
        if let (Some(log), Some(encoded)) = (&self.tee, encoded) {
            log.push(encoded);
        }
        next.seq += 1;
    }

    /// The journal's copy of an event: its JSON text written straight from the typed payload
    /// (no `Value` tree), the same bytes the sink's [`Event`] serialises to.
    fn encoded(
        &self,
        seq: u64,
        time: EventTime,
        step: Option<&str>,
        task_id: Option<&str>,
        payload: &EventPayload,
    ) -> Option<EncodedEvent> {
        let view = EventView {
            seq,
            kind: payload.kind(),
            time: Some(time),
            execution_id: &self.execution_id,
            depth: self.depth,
            step,
            task_id,
            data: payload,
        };
        match view.to_json() {
            Ok(json) => Some(EncodedEvent::from_parts(seq, json)),
            // The event keeps its place, with `null` data (as a reader of its JSON sees it).
            Err(_) => {
                let data = Value::Null.into();
                let event = self.event_of(seq, time, step, task_id, payload.kind(), data);
                EncodedEvent::encode(&event)
                    .inspect_err(|e| {
                        let (code, error) = (&e.code, &e.message);
                        tracing::warn!(%code, %error, "an event was not journaled");
                    })
                    .ok()
            }
        }
    }

    fn event(
        &self,
        seq: u64,
        time: EventTime,
        step: Option<&str>,
        task_id: Option<&str>,
        payload: Arc<EventPayload>,
    ) -> Event {
        self.event_of(seq, time, step, task_id, payload.kind(), payload.into())
    }

    /// An event of this run with `data` (the typed payload, shared: no JSON is built here).
    fn event_of(
        &self,
        seq: u64,
        time: EventTime,
        step: Option<&str>,
        task_id: Option<&str>,
        kind: EventKind,
        data: EventBody,
    ) -> Event {
        Event {
            seq,
            kind,
            time: Some(time),
            execution_id: String::from(&*self.execution_id),
            depth: self.depth,
            step: step.map(str::to_owned),
            task_id: task_id.map(str::to_owned),
            data,
        }
    }

    /// Delivers a child run's event: numbered in this hub's sequence (or passed further up to
    /// the root's hub), its execution id and depth kept.
    fn forward(&self, mut event: Event) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            if let SinkKind::Parent(parent) = &self.sink {
                return parent.forward(event).await;
            }
            let _delivery = self.delivery.lock().await;
            event.seq = self.numbering().seq;
            self.publish(event).await;
        })
    }

    /// Passes an event through the hook, then numbers each resulting event and hands it to the
    /// store's copy, the finish hook's record and the sink (called with the delivery lock held;
    /// `event.seq` is the slot it was given). An event the hook made without a time gets the
    /// time of the event it was given. All but a channel's send happen under the numbering lock,
    /// so a callback sink sees the order [`EventHub::call_back`] keeps.
    async fn publish(&self, event: Event) {
        let time = event.time;
        for mut event in self.edited(event) {
            let to_channel = {
                let mut next = self.numbering();
                event.seq = next.seq;
                next.seq += 1;
                if event.time.is_none() {
                    event.time = time;
                }
                if let Some(log) = &self.tee {
                    match EncodedEvent::encode(&event) {
                        Ok(encoded) => log.push(encoded),
                        Err(e) => {
                            let (code, error) = (&e.code, &e.message);
                            tracing::warn!(%code, %error, "an event was not journaled");
                        }
                    }
                }
                self.record(&event);
                match &self.sink {
                    SinkKind::Callback(cb) => {
                        call_sink(cb, &event);
                        None
                    }
                    SinkKind::Channel(_) => Some(event),
                    SinkKind::None | SinkKind::Parent(_) => None,
                }
            };
            if let Some(event) = to_channel {
                self.deliver(event).await;
            }
        }
    }

    /// Keeps `event` for the finish hook, when there is one (up to [`RECORDED_EVENTS_LIMIT`]).
    fn record(&self, event: &Event) {
        let Some(recorded) = &self.recorded else {
            return;
        };
        let mut recorded = recorded
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if recorded.len() < RECORDED_EVENTS_LIMIT {
            recorded.push(event.clone());
        } else if !self.recorded_full.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                limit = RECORDED_EVENTS_LIMIT,
                "the finish hook sees only the run's first events"
            );
        }
    }

    /// What the host's hook makes of `event` (the event itself without a hook, or when the
    /// hook panics).
    fn edited(&self, event: Event) -> Vec<Event> {
        let Some(hook) = &self.hook else {
            return vec![event];
        };
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| hook(&event))) {
            Ok(EventEdit::Keep) => vec![event],
            Ok(EventEdit::Drop) => Vec::new(),
            Ok(EventEdit::Replace(events)) => events,
            Err(p) => {
                let error = panic_message(p.as_ref());
                tracing::warn!(%error, "event hook panicked; the event goes on unchanged");
                vec![event]
            }
        }
    }

    /// Hands a numbered event to the sink (called with the delivery lock held).
    async fn deliver(&self, event: Event) {
        match &self.sink {
            SinkKind::None | SinkKind::Parent(_) => {}
            SinkKind::Callback(cb) => call_sink(cb, &event),
            SinkKind::Channel(tx) => {
                if self.gone.load(std::sync::atomic::Ordering::Relaxed) {
                    return;
                }
                tokio::select! {
                    r = tx.send(event) => {
                        if r.is_err() {
                            tracing::debug!("event consumer went away; cancelling the run");
                            self.gone.store(true, std::sync::atomic::Ordering::Relaxed);
                            self.consumer_gone.cancel();
                        }
                    }
                    _ = tokio::time::sleep_until(self.hard_deadline) => {
                        tracing::warn!(
                            "event consumer stalled past the run's deadline; event dropped"
                        );
                    }
                }
            }
        }
    }
}

/// The events of a durable run not yet handed to its store, as JSON text. The run hands them
/// over at step ends and at the end of the run, and whenever [`FLUSH_EVENTS`] events or
/// [`FLUSH_BYTES`] bytes are waiting ([`EventLog::wants_flush`] wakes the run's flusher), so a
/// wide step holds a bounded number of them, never one write per event.
#[derive(Debug, Default)]
pub(crate) struct EventLog {
    buffer: std::sync::Mutex<Buffered>,
    full: tokio::sync::Notify,
}

/// The buffered events and their bytes.
#[derive(Debug, Default)]
struct Buffered {
    events: Vec<EncodedEvent>,
    bytes: usize,
}

/// A durable run hands its buffered events to the store once this many are waiting.
pub(crate) const FLUSH_EVENTS: usize = 256;
/// … or once their text is this long.
pub(crate) const FLUSH_BYTES: usize = 256 * 1024;

impl EventLog {
    fn lock(&self) -> std::sync::MutexGuard<'_, Buffered> {
        // Every update is one push or one take: a poisoned buffer is still whole.
        self.buffer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn push(&self, event: EncodedEvent) {
        let mut b = self.lock();
        b.bytes += event.json().len();
        b.events.push(event);
        let full = b.events.len() >= FLUSH_EVENTS || b.bytes >= FLUSH_BYTES;
        drop(b);
        if full {
            self.full.notify_one();
        }
    }

    /// Resolves when the buffer has reached its bound since the last call.
    pub(crate) async fn wants_flush(&self) {
        self.full.notified().await;
    }

    /// Every buffered event, oldest first; the buffer is left empty.
    pub(crate) fn take(&self) -> Vec<EncodedEvent> {
        let mut b = self.lock();
        b.bytes = 0;
        std::mem::take(&mut b.events)
    }
}

/// The handle a [`crate::RemoteClient`] uses to emit `agent_*` events for one dispatch.
///
/// Events go through the run's hub, so they are numbered in causal order with the kernel's own
/// events. A client emits only a [`ClientEvent`] — the `agent_*` kinds and the `negotiation_*`
/// kinds (a client observes negotiations the host's hook never sees, e.g. an exhausted budget) —
/// so a kernel kind cannot come from a client:
///
/// ```compile_fail
/// # async fn f(events: a2aflow_kernel::EventEmitter) {
/// events.emit(a2aflow_model::EventKind::StepStart, serde_json::json!({})).await;
/// # }
/// ```
///
/// ```
/// # use a2aflow_model::event_data::LocalResponseData;
/// # async fn f(events: a2aflow_kernel::EventEmitter) {
/// let data = LocalResponseData { agent: "a".into(), ok: true, received_messages: 0 };
/// events.emit(data.into()).await;
/// # }
/// ```
///
/// Once the kernel has settled the task (deadline, cancellation, ANY_SUCCESS loser) the emitter
/// is closed and further events are dropped.
#[derive(Clone)]
pub struct EventEmitter {
    /// Where events go; `None` when nobody listens (no allocation per dispatch then).
    target: Option<Target>,
    closed: Arc<AtomicBool>,
}

/// The hub and the step and task an emitter's events are about.
#[derive(Clone)]
struct Target {
    hub: Arc<EventHub>,
    step: SharedStr,
    task_id: SharedStr,
}

impl std::fmt::Debug for EventEmitter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (step, task_id) = match &self.target {
            Some(t) => (&*t.step, &*t.task_id),
            None => ("", ""),
        };
        f.debug_struct("EventEmitter")
            .field("step", &step)
            .field("task_id", &task_id)
            .field("enabled", &self.is_enabled())
            .finish()
    }
}

impl EventEmitter {
    pub(crate) fn new(
        hub: Arc<EventHub>,
        step: SharedStr,
        task_id: SharedStr,
        closed: Arc<AtomicBool>,
    ) -> Self {
        EventEmitter {
            target: Some(Target { hub, step, task_id }),
            closed,
        }
    }

    /// An emitter of a run without an event sink: drops everything, allocates nothing.
    pub(crate) fn silent(closed: Arc<AtomicBool>) -> Self {
        EventEmitter {
            target: None,
            closed,
        }
    }

    /// An emitter that drops everything (for using a client outside a run).
    pub fn disabled() -> Self {
        Self::silent(Arc::new(AtomicBool::new(true)))
    }

    /// True when someone listens; clients may skip building event data otherwise.
    pub fn is_enabled(&self) -> bool {
        self.target.as_ref().is_some_and(|t| t.hub.enabled())
            && !self.closed.load(Ordering::Acquire)
    }

    /// Emits one client event for this dispatch's step and task. Build the event only when
    /// [`EventEmitter::is_enabled`] is true; it is dropped otherwise.
    pub async fn emit(&self, event: ClientEvent) {
        // Nothing to wait for with a callback sink: the event is handed over here.
        let Some(event) = self.emit_at_once(event) else {
            return;
        };
        let Some(t) = &self.target else {
            return;
        };
        // Boxed so that a client's futures, which call this at every step of an interaction,
        // do not carry the whole delivery inline; only an emitter with a sink allocates.
        Box::pin(
            t.hub
                .emit_payload(Some(&t.step), Some(&t.task_id), Some(&self.closed), || {
                    event.into()
                }),
        )
        .await;
    }

    /// Hands `event` to the run's callback sink at once when events go straight to one (then
    /// there is nothing to wait for); otherwise gives it back, for [`EventEmitter::emit`]. An
    /// emitter no one listens to drops it.
    pub(crate) fn emit_at_once(&self, event: ClientEvent) -> Option<ClientEvent> {
        let t = self.target.as_ref()?;
        let Some(cb) = t.hub.direct_callback() else {
            return Some(event);
        };
        let (step, task_id) = (Some(&*t.step), Some(&*t.task_id));
        t.hub
            .call_back(cb, (step, task_id, None), Some(&self.closed), || {
                event.into()
            });
        None
    }

    /// Emits the client event `payload` builds, building it only when someone listens.
    pub(crate) async fn emit_with<P: Into<ClientEvent>>(&self, payload: impl FnOnce() -> P) {
        if self.is_enabled() {
            self.emit(payload().into()).await;
        }
    }
}

/// Hands `event` to a synchronous sink; a panic inside it is logged and ignored.
fn call_sink(cb: &EventCallback, event: &Event) {
    if let Err(p) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cb(event))) {
        let error = panic_message(p.as_ref());
        tracing::warn!(%error, "event sink panicked; event ignored");
    }
}

//! An incremental Server-Sent Events parser: feed it bytes as they arrive, get whole events.
//!
//! It follows the WHATWG event-stream rules the A2A peers rely on: lines end in LF, CRLF or a
//! lone CR; lines starting with `:` are comments (keep-alives); `data:` lines of one event are
//! joined with `\n`; a blank line ends an event; an event without data is dropped. An event may
//! be split across any number of chunks and a chunk may hold several events. The size of one
//! event is bounded; a larger one is an error, never an unbounded buffer.

/// One dispatched SSE event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field, when the event had one (`error` for A2A mid-stream errors).
    pub event: Option<String>,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The `id:` field, when the event had one.
    pub id: Option<String>,
}

impl SseEvent {
    /// True when the event is an `event: error`.
    pub fn is_error(&self) -> bool {
        self.event.as_deref() == Some("error")
    }
}

/// Why the parser stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SseError {
    /// One event (pending line plus collected data) grew beyond the limit.
    #[error("an SSE event exceeded the limit of {limit} bytes")]
    EventTooLarge {
        /// The configured limit in bytes.
        limit: usize,
    },
    /// The stream ended in the middle of an event.
    #[error("the SSE stream ended in the middle of an event ({pending} bytes pending)")]
    Truncated {
        /// Bytes of the unfinished event.
        pending: usize,
    },
}

/// The incremental parser. One per stream.
#[derive(Debug)]
pub struct SseParser {
    max_event: usize,
    /// Bytes not yet split into lines.
    buf: Vec<u8>,
    /// Where to resume looking for a line end in `buf`.
    scan_from: usize,
    /// The event being collected.
    data: String,
    has_data: bool,
    event: Option<String>,
    id: Option<String>,
    /// Bytes of the current event taken from completed lines.
    event_bytes: usize,
    /// Whether the first bytes were seen (a leading BOM is skipped).
    started: bool,
    failed: Option<SseError>,
}

impl SseParser {
    /// A parser that refuses events larger than `max_event` bytes.
    pub fn new(max_event: usize) -> Self {
        SseParser {
            max_event,
            buf: Vec::new(),
            scan_from: 0,
            data: String::new(),
            has_data: false,
            event: None,
            id: None,
            event_bytes: 0,
            started: false,
            failed: None,
        }
    }

    /// Feeds the next chunk and returns the events it completed, in order. After an error the
    /// parser stays failed and returns the same error for every later chunk.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        let mut out = Vec::new();
        self.feed_into(chunk, &mut out)?;
        Ok(out)
    }

    /// Like [`SseParser::feed`], appending to `out` (no allocation per chunk).
    pub fn feed_into(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let mut chunk = chunk;
        if !self.started {
            if chunk.is_empty() {
                // Nothing to decide yet: a partial BOM stays buffered, unscanned and uncounted.
                return Ok(());
            }
            // A UTF-8 BOM may precede the first line; it can itself be split across chunks.
            let bom = [0xEF, 0xBB, 0xBF];
            let mut probe = self.buf.clone();
            probe.extend_from_slice(&chunk[..chunk.len().min(3)]);
            if probe.len() < 3 && bom.starts_with(&probe) {
                self.buf.extend_from_slice(chunk);
                return Ok(());
            }
            self.started = true;
            if probe.starts_with(&bom) {
                let already = self.buf.len();
                self.buf.clear();
                chunk = &chunk[3 - already..];
            }
        }
        self.buf.extend_from_slice(chunk);
        let mut start = 0;
        let mut i = self.scan_from;
        while let Some(offset) = memchr::memchr2(b'\n', b'\r', &self.buf[i..]) {
            let line_end = i + offset;
            let next = if self.buf[line_end] == b'\r' {
                match self.buf.get(line_end + 1) {
                    // A CR at the end of the buffer may be the first half of CRLF.
                    None => break,
                    Some(b'\n') => line_end + 2,
                    Some(_) => line_end + 1,
                }
            } else {
                line_end + 1
            };
            let line = std::mem::take(&mut self.buf);
            let res = self.line(&line[start..line_end], out);
            self.buf = line;
            if let Err(e) = res {
                self.failed = Some(e.clone());
                return Err(e);
            }
            start = next;
            i = next;
        }
        // Resume at the unfinished line's end: the buffer's end, or a trailing CR.
        let i = if self.buf.last() == Some(&b'\r') && self.buf.len() > start {
            self.buf.len() - 1
        } else {
            self.buf.len()
        };
        self.buf.drain(..start);
        self.scan_from = i - start;
        // Bound the partial line the way `line` will count it once complete, so the verdict never
        // depends on where chunks split: a trailing CR (half of a CRLF) is not part of the line, a
        // comment is limited on its own, any other line adds its length and a separator.
        let pending = self.buf.len() - usize::from(self.buf.last() == Some(&b'\r'));
        let too_large = match self.buf.first() {
            None => false,
            Some(b':') => pending > self.max_event,
            Some(_) => pending > 0 && self.event_bytes + pending + 1 > self.max_event,
        };
        if too_large {
            let e = SseError::EventTooLarge {
                limit: self.max_event,
            };
            self.failed = Some(e.clone());
            return Err(e);
        }
        Ok(())
    }

    /// Ends the stream. A lone trailing CR ends its line; an unfinished event (data without
    /// the closing blank line, or a partial line) is reported as [`SseError::Truncated`].
    pub fn finish(&mut self) -> Result<Vec<SseEvent>, SseError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let mut out = Vec::new();
        if self.buf.last() == Some(&b'\r') {
            let line = std::mem::take(&mut self.buf);
            self.line(&line[..line.len() - 1], &mut out)?;
        }
        let pending = self.buf.len() + if self.has_data { self.data.len() } else { 0 };
        if pending > 0 {
            return Err(SseError::Truncated { pending });
        }
        Ok(out)
    }

    /// Gives back an event the caller is done with, so the next event's data reuses its buffer
    /// instead of allocating a new one (a stream's events are usually of similar size).
    pub fn recycle(&mut self, event: SseEvent) {
        if self.data.capacity() == 0 {
            let mut data = event.data;
            data.clear();
            self.data = data;
        }
    }

    /// True when no partial line or event is buffered.
    pub fn is_idle(&self) -> bool {
        self.buf.is_empty() && !self.has_data && self.event.is_none()
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line[0] == b':' {
            // Comments are ignored, but never buffered without bound.
            return if line.len() > self.max_event {
                Err(SseError::EventTooLarge {
                    limit: self.max_event,
                })
            } else {
                Ok(())
            };
        }
        self.event_bytes += line.len() + 1;
        if self.event_bytes > self.max_event {
            return Err(SseError::EventTooLarge {
                limit: self.max_event,
            });
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(p) => {
                let v = &line[p + 1..];
                (&line[..p], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        match name {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                push_lossy(&mut self.data, value);
                self.has_data = true;
            }
            b"event" => {
                let mut event = String::new();
                push_lossy(&mut event, value);
                self.event = Some(event);
            }
            b"id" if !value.contains(&0) => {
                let mut id = String::new();
                push_lossy(&mut id, value);
                self.id = Some(id);
            }
            _ => {} // `retry` and unknown fields are ignored.
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        self.event_bytes = 0;
        if !self.has_data {
            return;
        }
        self.has_data = false;
        out.push(SseEvent {
            event,
            data: std::mem::take(&mut self.data),
            id: self.id.clone(),
        });
    }
}

/// Appends `bytes` as text, invalid UTF-8 replaced by U+FFFD. Valid input (the normal case) takes
/// the fast validation path; `from_utf8_lossy` alone walks it chunk by chunk.
fn push_lossy(dst: &mut String, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => dst.push_str(text),
        Err(_) => dst.push_str(&String::from_utf8_lossy(bytes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse_all(bytes: &[u8]) -> Vec<SseEvent> {
        let mut p = SseParser::new(1 << 20);
        let mut v = p.feed(bytes).unwrap();
        v.extend(p.finish().unwrap());
        v
    }

    fn data(d: &str) -> SseEvent {
        SseEvent {
            data: d.into(),
            ..SseEvent::default()
        }
    }

    #[test]
    fn a_recycled_event_lends_its_buffer_to_the_next_one() {
        let mut p = SseParser::new(1 << 20);
        let first = p.feed(b"data: a longer first event\n\n").unwrap().remove(0);
        let (ptr, cap) = (first.data.as_ptr(), first.data.capacity());
        p.recycle(first);
        let second = p.feed(b"data: second\n\n").unwrap().remove(0);
        assert_eq!(second, data("second"));
        assert_eq!((second.data.as_ptr(), second.data.capacity()), (ptr, cap));
        // Mid-event, the event being collected keeps its own buffer.
        let third = p.feed(b"data: thi").unwrap();
        assert!(third.is_empty());
        p.recycle(second);
        let third = p.feed(b"rd\n\n").unwrap().remove(0);
        assert_eq!(third, data("third"));
    }

    #[test]
    fn lf_and_crlf_give_the_same_events() {
        let lf = parse_all(b"data: {\"a\":1}\n\ndata: {\"b\":2}\n\n");
        let crlf = parse_all(b"data: {\"a\":1}\r\n\r\ndata: {\"b\":2}\r\n\r\n");
        let cr = parse_all(b"data: {\"a\":1}\r\rdata: {\"b\":2}\r\r");
        assert_eq!(lf, vec![data("{\"a\":1}"), data("{\"b\":2}")]);
        assert_eq!(crlf, lf);
        assert_eq!(cr, lf);
    }

    #[test]
    fn invalid_utf8_is_replaced_and_valid_text_is_kept() {
        let ev = parse_all(
            b"event: e\xffx\nid: 7\xfe\ndata: caf\xc3\xa9 \xe2\x82\xac\ndata: bad \xc3(\n\n",
        );
        assert_eq!(ev.len(), 1);
        assert_eq!(ev[0].data, "caf\u{e9} \u{20ac}\nbad \u{fffd}(");
        assert_eq!(ev[0].event.as_deref(), Some("e\u{fffd}x"));
        assert_eq!(ev[0].id.as_deref(), Some("7\u{fffd}"));
    }

    #[test]
    fn comments_are_ignored_and_do_not_end_events() {
        let ev =
            parse_all(b": ping - 2026-11-30 03:07:54\r\n\r\ndata: x\r\n: mid\r\ndata: y\r\n\r\n");
        assert_eq!(ev, vec![data("x\ny")]);
    }

    #[test]
    fn error_events_carry_their_type() {
        let ev = parse_all(b"event: error\ndata: {\"error\":{\"code\":-32006}}\n\n");
        assert_eq!(ev.len(), 1);
        assert!(ev[0].is_error());
        assert_eq!(ev[0].data, "{\"error\":{\"code\":-32006}}");
    }

    #[test]
    fn multi_line_data_is_joined_with_newline() {
        let ev = parse_all(b"data: {\ndata:  \"a\": 1\ndata:}\n\n");
        assert_eq!(ev, vec![data("{\n \"a\": 1\n}")]);
    }

    #[test]
    fn several_events_in_one_chunk_and_one_event_in_many_chunks() {
        let mut p = SseParser::new(1024);
        let all = p.feed(b"data: 1\n\ndata: 2\n\ndata: 3\n\n").unwrap();
        assert_eq!(all, vec![data("1"), data("2"), data("3")]);
        let mut p = SseParser::new(1024);
        let mut got = Vec::new();
        for b in b"id: 7\r\nevent: x\r\ndata: hello\r\n\r\n" {
            got.extend(p.feed(&[*b]).unwrap());
        }
        assert_eq!(
            got,
            vec![SseEvent {
                event: Some("x".into()),
                data: "hello".into(),
                id: Some("7".into())
            }]
        );
    }

    #[test]
    fn events_without_data_are_dropped_and_fields_without_colon_are_names() {
        let ev = parse_all(b"event: error\n\ndata\n\nretry: 5\nunknown: z\ndata:v\n\n");
        assert_eq!(ev, vec![data(""), data("v")]);
    }

    #[test]
    fn a_leading_bom_is_skipped_even_when_split() {
        let mut p = SseParser::new(1024);
        assert!(p.feed(&[0xEF]).unwrap().is_empty());
        assert!(p.feed(&[0xBB]).unwrap().is_empty());
        let ev = p.feed(b"\xBFdata: a\n\n").unwrap();
        assert_eq!(ev, vec![data("a")]);
    }

    #[test]
    fn an_empty_chunk_inside_a_split_bom_does_not_hide_the_next_line_end() {
        // Found by the sse_parser fuzz target: the empty chunk moved the scan position past the
        // buffered BOM byte, so the line end right after the BOM was never seen.
        let mut p = SseParser::new(1024);
        assert!(p.feed(&[0xEF]).unwrap().is_empty());
        assert!(p.feed(b"").unwrap().is_empty());
        assert!(p.feed(b"\xBB\xBF\n").unwrap().is_empty());
        let ev = p.feed(b"data: a\n\n").unwrap();
        assert_eq!(ev, vec![data("a")]);
        assert_eq!(p.finish().unwrap(), vec![]);
        let mut p = SseParser::new(1024);
        for chunk in [&[0xEF][..], b"", b"\xBB\xBF\n", b"ab"] {
            p.feed(chunk).unwrap();
        }
        assert_eq!(p.finish().unwrap_err(), SseError::Truncated { pending: 2 });
    }

    #[test]
    fn a_partial_bom_is_not_counted_against_the_limit() {
        // Found by the sse_parser fuzz target: an empty chunk after a buffered BOM byte ran the
        // size check on it, so a one-byte limit failed a stream that is only a BOM.
        let mut p = SseParser::new(1);
        for chunk in [&[0xEF][..], b"", &[0xBB, 0xBF], b""] {
            p.feed(chunk).unwrap();
        }
        assert_eq!(p.finish().unwrap(), vec![]);
    }

    #[test]
    fn an_oversized_event_fails_and_stays_failed() {
        let mut p = SseParser::new(20);
        assert!(p.feed(b"data: 0123456789\n").is_ok());
        let e = p.feed(b"data: 0123456789\n").unwrap_err();
        assert_eq!(e, SseError::EventTooLarge { limit: 20 });
        assert_eq!(p.feed(b"\n").unwrap_err(), e);
        // A single unterminated line counts as well: no unbounded buffering.
        let mut p = SseParser::new(16);
        assert_eq!(
            p.feed(&[b'a'; 17]).unwrap_err(),
            SseError::EventTooLarge { limit: 16 }
        );
    }

    #[test]
    fn the_limit_is_per_event_not_per_stream() {
        let mut p = SseParser::new(16);
        for _ in 0..100 {
            assert_eq!(p.feed(b"data: 0123456\n\n").unwrap(), vec![data("0123456")]);
        }
    }

    #[test]
    fn truncation_is_reported_at_finish() {
        let mut p = SseParser::new(1024);
        assert!(p.feed(b"data: {\"a\":").unwrap().is_empty());
        assert_eq!(p.finish().unwrap_err(), SseError::Truncated { pending: 11 });
        let mut p = SseParser::new(1024);
        assert!(p.feed(b"data: {}\n").unwrap().is_empty());
        assert!(matches!(p.finish(), Err(SseError::Truncated { .. })));
        let mut p = SseParser::new(1024);
        p.feed(b"data: a\n\n: bye\n").unwrap();
        assert!(p.finish().unwrap().is_empty());
        assert!(p.is_idle());
    }

    #[test]
    fn captured_python_stream_parses() {
        let body = "data: {\"result\": {\"task\": {\"id\": \"t\"}}, \"id\": \"s1\", \"jsonrpc\": \"2.0\"}\r\n\r\n: ping - 2026-11-30 03:08:09.123456+00:00\r\n\r\ndata: {\"result\": {\"statusUpdate\": {}}, \"id\": \"s1\", \"jsonrpc\": \"2.0\"}\r\n\r\n";
        let ev = parse_all(body.as_bytes());
        assert_eq!(ev.len(), 2);
        assert!(ev[1].data.contains("statusUpdate"));
    }

    fn arb_event() -> impl Strategy<Value = (Option<String>, Vec<String>, bool)> {
        (
            proptest::option::of("[a-z]{1,8}"),
            proptest::collection::vec("[ -~]{0,40}", 1..4),
            any::<bool>(),
        )
    }

    fn encode(
        events: &[(Option<String>, Vec<String>, bool)],
        crlf: bool,
    ) -> (Vec<u8>, Vec<SseEvent>) {
        let nl = if crlf { "\r\n" } else { "\n" };
        let mut s = String::new();
        let mut want = Vec::new();
        for (ev, lines, comment) in events {
            if *comment {
                s.push_str(": keep-alive");
                s.push_str(nl);
            }
            if let Some(e) = ev {
                s.push_str(&format!("event: {e}{nl}"));
            }
            for l in lines {
                s.push_str(&format!("data: {l}{nl}"));
            }
            s.push_str(nl);
            want.push(SseEvent {
                event: ev.clone(),
                data: lines.join("\n"),
                id: None,
            });
        }
        (s.into_bytes(), want)
    }

    proptest! {
        #[test]
        fn any_split_yields_the_same_events(
            events in proptest::collection::vec(arb_event(), 0..8),
            crlf in any::<bool>(),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..12),
            recycle in any::<bool>(),
        ) {
            let (bytes, want) = encode(&events, crlf);
            let mut points: Vec<usize> = cuts.iter().map(|c| c.index(bytes.len() + 1)).collect();
            points.sort_unstable();
            let mut p = SseParser::new(1 << 20);
            let mut got = Vec::new();
            let mut last = 0;
            for at in points.into_iter().chain(std::iter::once(bytes.len())) {
                let events = p.feed(&bytes[last..at]).unwrap();
                if recycle {
                    // A recycled buffer never leaks into the events that reuse it.
                    for e in &events {
                        p.recycle(e.clone());
                    }
                }
                got.extend(events);
                last = at;
            }
            got.extend(p.finish().unwrap());
            prop_assert_eq!(got, want);
        }

        #[test]
        fn arbitrary_bytes_never_panic(
            chunks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 0..16),
            limit in 1usize..256,
        ) {
            let mut p = SseParser::new(limit);
            for c in &chunks {
                if p.feed(c).is_err() {
                    break;
                }
            }
            let _ = p.finish();
        }
    }
}

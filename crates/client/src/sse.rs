//! A Server-Sent Events parser (the WHATWG "event stream interpretation"), over any
//! [`BufRead`].
//!
//! What it does, following the specification:
//! - lines end with `\n`, `\r\n` or a lone `\r`;
//! - a line starting with `:` is a comment and is skipped;
//! - `field: value` sets a field (one space after the colon is dropped), a line without a colon
//!   is a field with an empty value;
//! - `data` lines accumulate, joined by `\n`; `event` names the event (`message` when absent);
//!   `id` sets the last event id (kept across events; ignored if it holds a NUL); `retry` is
//!   taken only when it is all ASCII digits; other fields are ignored;
//! - an empty line dispatches the event, unless no `data` line came (then it only resets);
//! - an event cut off by the end of the stream is dropped.
//!
//! Where it is stricter than a browser: a line longer than [`MAX_LINE`] bytes, or one that is not
//! UTF-8, is an error rather than something to skip, since the service never sends one.

use std::io::BufRead;

/// The longest line accepted, in bytes (without its end of line).
pub const MAX_LINE: usize = 1 << 20;

/// One dispatched event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SseEvent {
    /// The event's type: the last `event` field, or `message`.
    pub event: String,
    /// The `data` lines joined by `\n`.
    pub data: String,
    /// The last event id seen on the stream so far (`id` persists across events).
    pub id: Option<String>,
    /// The last valid `retry` field on the stream, in milliseconds.
    pub retry: Option<u64>,
}

/// Why a stream could not be read.
#[derive(Debug, thiserror::Error)]
pub enum SseError {
    /// Reading the underlying stream failed.
    #[error("reading the event stream failed: {0}")]
    Io(#[from] std::io::Error),
    /// A line was longer than [`MAX_LINE`].
    #[error("an event stream line is longer than {MAX_LINE} bytes")]
    LineTooLong,
    /// A line was not UTF-8.
    #[error("an event stream line is not UTF-8")]
    NotUtf8,
}

/// Reads events from a byte stream, one [`SseReader::next_event`] at a time.
pub struct SseReader<R> {
    input: R,
    /// A `\r` ended the previous line: a `\n` right after it belongs to that line end.
    after_cr: bool,
    event: String,
    data: String,
    has_data: bool,
    id: Option<String>,
    retry: Option<u64>,
}

impl<R: BufRead> SseReader<R> {
    /// A reader of the events in `input`.
    pub fn new(input: R) -> Self {
        SseReader {
            input,
            after_cr: false,
            event: String::new(),
            data: String::new(),
            has_data: false,
            id: None,
            retry: None,
        }
    }

    /// The next event, or `None` at the end of the stream.
    pub fn next_event(&mut self) -> Result<Option<SseEvent>, SseError> {
        loop {
            let Some(line) = self.read_line()? else {
                return Ok(None);
            };
            if line.is_empty() {
                let event = std::mem::take(&mut self.event);
                if !self.has_data {
                    continue;
                }
                self.has_data = false;
                let data = std::mem::take(&mut self.data);
                return Ok(Some(SseEvent {
                    event: if event.is_empty() { "message".to_string() } else { event },
                    data,
                    id: self.id.clone(),
                    retry: self.retry,
                }));
            }
            if line.starts_with(':') {
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (line.as_str(), ""),
            };
            match field {
                "event" => self.event = value.to_string(),
                "data" => {
                    if self.has_data {
                        self.data.push('\n');
                    }
                    self.data.push_str(value);
                    self.has_data = true;
                }
                "id" if !value.contains('\0') => self.id = Some(value.to_string()),
                "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                    self.retry = value.parse().ok();
                }
                _ => {}
            }
        }
    }

    /// One line without its end, or `None` at the end of the stream (a last line without an
    /// end is still returned: it can only be a field of an event that will be dropped).
    fn read_line(&mut self) -> Result<Option<String>, SseError> {
        let mut line = Vec::new();
        loop {
            let buf = match self.input.fill_buf() {
                Ok(b) => b,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            if buf.is_empty() {
                return if line.is_empty() { Ok(None) } else { Self::text(line).map(Some) };
            }
            if self.after_cr {
                self.after_cr = false;
                if buf[0] == b'\n' {
                    self.input.consume(1);
                    continue;
                }
            }
            match buf.iter().position(|&b| b == b'\n' || b == b'\r') {
                Some(at) => {
                    if line.len() + at > MAX_LINE {
                        return Err(SseError::LineTooLong);
                    }
                    line.extend_from_slice(&buf[..at]);
                    self.after_cr = buf[at] == b'\r';
                    self.input.consume(at + 1);
                    return Self::text(line).map(Some);
                }
                None => {
                    let n = buf.len();
                    if line.len() + n > MAX_LINE {
                        return Err(SseError::LineTooLong);
                    }
                    line.extend_from_slice(buf);
                    self.input.consume(n);
                }
            }
        }
    }

    fn text(line: Vec<u8>) -> Result<String, SseError> {
        String::from_utf8(line).map_err(|_| SseError::NotUtf8)
    }
}

impl<R: BufRead> Iterator for SseReader<R> {
    type Item = Result<SseEvent, SseError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_event().transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(text: &str) -> Vec<SseEvent> {
        SseReader::new(text.as_bytes()).collect::<Result<_, _>>().unwrap()
    }

    fn ev(event: &str, data: &str, id: Option<&str>) -> SseEvent {
        SseEvent { event: event.into(), data: data.into(), id: id.map(Into::into), retry: None }
    }

    #[test]
    fn one_event_with_a_type() {
        assert_eq!(events("event: leader\ndata: {\"a\":1}\n\n"), vec![ev("leader", "{\"a\":1}", None)]);
    }

    #[test]
    fn data_lines_join_with_newlines() {
        assert_eq!(events("data: a\ndata:b\ndata\ndata:  c\n\n"), vec![ev("message", "a\nb\n\n c", None)]);
    }

    #[test]
    fn comments_are_skipped_and_empty_events_not_dispatched() {
        let got = events(": keep-alive\n\n:another\nevent: x\n\ndata: 1\n\n");
        // The `event: x` block had no data: it resets, and the next event is a `message`.
        assert_eq!(got, vec![ev("message", "1", None)]);
    }

    #[test]
    fn ids_persist_and_nul_ids_are_ignored() {
        let got = events("id: 7\ndata: a\n\ndata: b\n\nid: 8\u{0}\ndata: c\n\nid\ndata: d\n\n");
        assert_eq!(
            got,
            vec![
                ev("message", "a", Some("7")),
                ev("message", "b", Some("7")),
                ev("message", "c", Some("7")),
                ev("message", "d", Some(""))
            ]
        );
    }

    #[test]
    fn every_line_end_is_accepted() {
        let got = events("event: e\r\ndata: 1\r\rdata: 2\r\n\r\ndata: 3\n\n");
        assert_eq!(got, vec![ev("e", "1", None), ev("message", "2", None), ev("message", "3", None)]);
    }

    #[test]
    fn a_cr_lf_split_across_reads_is_one_line_end() {
        // A reader that hands out one byte at a time splits every `\r\n`.
        let text = b"data: 1\r\n\r\ndata: 2\r\n\r\n";
        let reader = std::io::BufReader::with_capacity(1, &text[..]);
        let got: Vec<_> = SseReader::new(reader).collect::<Result<_, _>>().unwrap();
        assert_eq!(got, vec![ev("message", "1", None), ev("message", "2", None)]);
    }

    #[test]
    fn retry_takes_digits_only_and_unknown_fields_are_ignored() {
        let got = events("retry: 300\nfoo: bar\ndata: a\n\nretry: 3x\ndata: b\n\n");
        assert_eq!(got[0].retry, Some(300));
        assert_eq!(got[1].retry, Some(300));
        assert_eq!(got[1].data, "b");
    }

    #[test]
    fn an_event_cut_off_by_the_end_is_dropped() {
        assert_eq!(events("data: a\n\ndata: b\n"), vec![ev("message", "a", None)]);
        assert_eq!(events("data: a\n\ndata: b"), vec![ev("message", "a", None)]);
        assert!(events("").is_empty());
    }

    #[test]
    fn overlong_and_non_utf8_lines_are_errors() {
        let long = format!("data: {}\n\n", "x".repeat(MAX_LINE));
        let err = SseReader::new(long.as_bytes()).next_event().unwrap_err();
        assert!(matches!(err, SseError::LineTooLong));
        let bad: &[u8] = b"data: \xff\n\n";
        assert!(matches!(SseReader::new(bad).next_event().unwrap_err(), SseError::NotUtf8));
    }
}

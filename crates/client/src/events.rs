//! The service's event streams, typed: [`Observe`] (an election's leaders) and
//! [`LeaseEvents`] (what happens to a lease).

use std::io::{BufRead, BufReader};

use serde::Deserialize;

use crate::sse::{SseEvent, SseReader};
use crate::{ClientError, Leader};

type Body = BufReader<ureq::BodyReader<'static>>;

/// An election's leaders as they change (from [`crate::Client::observe`]): first the current
/// one, then every change, `None` when the election has no leader. Ends when the stream does;
/// an error ends it too.
pub struct Observe<R = Body> {
    events: SseReader<R>,
    done: bool,
}

impl Observe {
    pub(crate) fn new(body: ureq::Body) -> Self {
        Observe::from_reader(buffered(body))
    }
}

impl<R: BufRead> Observe<R> {
    /// The leaders in an event stream read from `input` (the client opens one for you; this is
    /// for a stream from elsewhere, and for tests).
    pub fn from_reader(input: R) -> Self {
        Observe { events: SseReader::new(input), done: false }
    }
}

impl<R: BufRead> Iterator for Observe<R> {
    type Item = Result<Option<Leader>, ClientError>;

    fn next(&mut self) -> Option<Self::Item> {
        #[derive(Deserialize)]
        struct Data {
            leader: Option<Leader>,
        }
        while !self.done {
            let event = match next_event(&mut self.events, &mut self.done)? {
                Ok(e) => e,
                Err(e) => return Some(Err(e)),
            };
            if event.event != "leader" {
                continue;
            }
            return Some(parse::<Data>(&event).map(|d| d.leader).inspect_err(|_| self.done = true));
        }
        None
    }
}

/// Why a lease lost a lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossReason {
    /// The lease expired.
    Expired,
    /// The lease was revoked.
    Revoked,
    /// Wound-wait took the lock from it.
    Wounded,
}

/// What happened to a watched lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LeaseEvent {
    /// A queued acquire was granted.
    Granted {
        /// The lock.
        name: String,
        /// Its fencing token.
        fencing: u64,
    },
    /// The lease lost a lock.
    Lost {
        /// The lock.
        name: String,
        /// Why.
        reason: LossReason,
    },
    /// Wait-die dropped one of the lease's waits.
    Aborted {
        /// The lock waited for.
        name: String,
    },
    /// A deadlock involving the lease was found.
    Deadlock {
        /// The leases in the cycle.
        cycle: Vec<u64>,
        /// The lease whose wait was dropped (`None` when the service only reports).
        victim: Option<u64>,
    },
    /// The lease ended; nothing follows.
    Expired,
}

/// What happens to a lease (from [`crate::Client::watch`]). Ends after
/// [`LeaseEvent::Expired`], at the end of the stream, or after an error.
pub struct LeaseEvents<R = Body> {
    events: SseReader<R>,
    done: bool,
}

impl LeaseEvents {
    pub(crate) fn new(body: ureq::Body) -> Self {
        LeaseEvents::from_reader(buffered(body))
    }
}

impl<R: BufRead> LeaseEvents<R> {
    /// The lease events in an event stream read from `input`.
    pub fn from_reader(input: R) -> Self {
        LeaseEvents { events: SseReader::new(input), done: false }
    }
}

impl<R: BufRead> Iterator for LeaseEvents<R> {
    type Item = Result<LeaseEvent, ClientError>;

    fn next(&mut self) -> Option<Self::Item> {
        #[derive(Deserialize)]
        struct Named {
            name: String,
        }
        #[derive(Deserialize)]
        struct Granted {
            name: String,
            fencing: u64,
        }
        #[derive(Deserialize)]
        struct Lost {
            name: String,
            reason: LossReason,
        }
        #[derive(Deserialize)]
        struct Deadlock {
            cycle: Vec<u64>,
            victim: Option<u64>,
        }
        while !self.done {
            let event = match next_event(&mut self.events, &mut self.done)? {
                Ok(e) => e,
                Err(e) => return Some(Err(e)),
            };
            let typed = match event.event.as_str() {
                "granted" => {
                    parse::<Granted>(&event).map(|g| LeaseEvent::Granted { name: g.name, fencing: g.fencing })
                }
                "lost" => parse::<Lost>(&event).map(|l| LeaseEvent::Lost { name: l.name, reason: l.reason }),
                "aborted" => parse::<Named>(&event).map(|a| LeaseEvent::Aborted { name: a.name }),
                "deadlock" => parse::<Deadlock>(&event)
                    .map(|d| LeaseEvent::Deadlock { cycle: d.cycle, victim: d.victim }),
                "expired" => {
                    self.done = true;
                    Ok(LeaseEvent::Expired)
                }
                // Event types added later are skipped, as a browser would.
                _ => continue,
            };
            if typed.is_err() {
                self.done = true;
            }
            return Some(typed);
        }
        None
    }
}

/// The next raw event; `None` at the end; an error marks the stream done.
fn next_event<R: BufRead>(
    events: &mut SseReader<R>,
    done: &mut bool,
) -> Option<Result<SseEvent, ClientError>> {
    match events.next_event() {
        Ok(Some(e)) => Some(Ok(e)),
        Ok(None) => {
            *done = true;
            None
        }
        Err(e) => {
            *done = true;
            Some(Err(ClientError::Protocol(e.to_string())))
        }
    }
}

fn parse<T: serde::de::DeserializeOwned>(event: &SseEvent) -> Result<T, ClientError> {
    serde_json::from_str(&event.data).map_err(|e| {
        ClientError::Protocol(format!("malformed `{}` event ({e}): {:.200}", event.event, event.data))
    })
}

/// Reads a stream body line by line.
fn buffered(body: ureq::Body) -> std::io::BufReader<ureq::BodyReader<'static>> {
    std::io::BufReader::new(body.into_reader())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observe_yields_leaders_and_none() {
        let text = ": hello\n\
            event: leader\ndata: {\"election\": \"e\", \"leader\": {\"lease\": 17, \"value\": \"a\", \"index\": 40}}\n\n\
            event: leader\ndata: {\"election\": \"e\", \"leader\": null}\n\n\
            event: other\ndata: {}\n\n\
            event: leader\ndata: {\"election\": \"e\",\ndata: \"leader\": {\"lease\": 18, \"value\": \"b\", \"index\": 41}}\n\n";
        let got: Vec<_> = Observe::from_reader(text.as_bytes()).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            got,
            vec![
                Some(Leader { lease: 17, value: "a".into(), index: 40 }),
                None,
                Some(Leader { lease: 18, value: "b".into(), index: 41 })
            ]
        );
    }

    #[test]
    fn a_malformed_leader_ends_the_stream_with_an_error() {
        let text = "event: leader\ndata: {\"leader\": 3}\n\nevent: leader\ndata: {\"leader\": null}\n\n";
        let got: Vec<_> = Observe::from_reader(text.as_bytes()).collect();
        assert_eq!(got.len(), 1);
        assert!(matches!(&got[0], Err(ClientError::Protocol(m)) if m.contains("leader")));
    }

    #[test]
    fn lease_events_are_typed_and_end_at_expired() {
        let text = "event: granted\ndata: {\"name\": \"db\", \"fencing\": 42}\n\n\
            event: lost\ndata: {\"name\": \"db\", \"reason\": \"wounded\"}\n\n\
            event: aborted\ndata: {\"name\": \"q\"}\n\n\
            event: deadlock\ndata: {\"cycle\": [17, 18], \"victim\": null}\n\n\
            event: expired\ndata: {}\n\n\
            event: granted\ndata: {\"name\": \"late\", \"fencing\": 1}\n\n";
        let got: Vec<_> = LeaseEvents::from_reader(text.as_bytes()).collect::<Result<_, _>>().unwrap();
        assert_eq!(
            got,
            vec![
                LeaseEvent::Granted { name: "db".into(), fencing: 42 },
                LeaseEvent::Lost { name: "db".into(), reason: LossReason::Wounded },
                LeaseEvent::Aborted { name: "q".into() },
                LeaseEvent::Deadlock { cycle: vec![17, 18], victim: None },
                LeaseEvent::Expired,
            ]
        );
    }

    #[test]
    fn an_unknown_loss_reason_is_an_error() {
        let text = "event: lost\ndata: {\"name\": \"db\", \"reason\": \"stolen\"}\n\n";
        let got: Vec<_> = LeaseEvents::from_reader(text.as_bytes()).collect();
        assert!(matches!(&got[..], [Err(ClientError::Protocol(_))]));
    }
}

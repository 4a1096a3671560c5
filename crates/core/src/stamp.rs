//! The logical clocks a driver stamps its trace records with: Lamport's scalar clock and, for
//! small systems, a vector clock, kept per node by the driver (never by the algorithm).
//!
//! The rules, written once here and applied by every driver (the simulator's and the model
//! checker's tracer in `ringleader_judge::trace`, the real node's loop in `ringleader_net`):
//!
//! - a local step (a timer, a request, an emitted event, a start) **ticks**: the Lamport clock
//!   and the node's own vector entry advance by one ([`LogicalClocks::tick`]);
//! - a send ticks, and the message carries the clocks as they are then ([`LogicalClocks::send`]);
//! - a delivery takes the entry-wise maximum with the stamp the message carried, when the driver
//!   knows it, and then ticks ([`LogicalClocks::receive`]).
//!
//! A record is stamped with the clocks after its step ([`LogicalClocks::write_to`]). Which steps
//! tick is the driver's choice; how a tick and a merge work is not.

use crate::trace::TraceRecord;

/// The clocks a message carries from its send: the sender's Lamport clock and, when the sender
/// keeps one, its vector clock.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Stamp {
    /// The sender's Lamport clock at the send.
    pub lamport: u64,
    /// The sender's vector clock at the send (`None`: the sender keeps none).
    pub vector: Option<Vec<u64>>,
}

/// One node's logical clocks: a Lamport clock and, optionally, a vector clock over `n` nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogicalClocks {
    me: usize,
    lamport: u64,
    vector: Option<Vec<u64>>,
}

impl LogicalClocks {
    /// The clocks of the node at position `me` of `n`, all zero; with a vector clock when
    /// `vector` is true.
    pub fn new(me: usize, n: usize, vector: bool) -> LogicalClocks {
        LogicalClocks { me, lamport: 0, vector: vector.then(|| vec![0; n]) }
    }

    /// A local step: the Lamport clock and this node's vector entry advance by one.
    pub fn tick(&mut self) {
        self.lamport += 1;
        if let Some(v) = self.vector.as_mut() {
            v[self.me] += 1;
        }
    }

    /// A send: ticks, and answers the stamp the message carries.
    pub fn send(&mut self) -> Stamp {
        self.tick();
        self.stamp()
    }

    /// A delivery of a message stamped `sent` (`None`: its stamp is unknown): takes the
    /// entry-wise maximum with it, then ticks. A vector shorter or longer than this node's is
    /// merged over the entries both have.
    pub fn receive(&mut self, sent: Option<&Stamp>) {
        if let Some(sent) = sent {
            self.lamport = self.lamport.max(sent.lamport);
            if let (Some(mine), Some(theirs)) = (self.vector.as_mut(), sent.vector.as_ref()) {
                for (a, b) in mine.iter_mut().zip(theirs) {
                    *a = (*a).max(*b);
                }
            }
        }
        self.tick();
    }

    /// The clocks as they are now.
    pub fn stamp(&self) -> Stamp {
        Stamp { lamport: self.lamport, vector: self.vector.clone() }
    }

    /// The Lamport clock.
    pub fn lamport(&self) -> u64 {
        self.lamport
    }

    /// The vector clock, if this node keeps one.
    pub fn vector(&self) -> Option<&[u64]> {
        self.vector.as_deref()
    }

    /// Stamps `record` with the clocks as they are now.
    pub fn write_to(&self, record: &mut TraceRecord) {
        record.lamport = Some(self.lamport);
        record.vector = self.vector.clone();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delivery_merges_the_senders_stamp_and_then_ticks() {
        let mut a = LogicalClocks::new(0, 3, true);
        let mut b = LogicalClocks::new(1, 3, true);
        a.tick();
        let sent = a.send();
        assert_eq!(sent, Stamp { lamport: 2, vector: Some(vec![2, 0, 0]) });
        b.tick();
        b.receive(Some(&sent));
        assert_eq!((b.lamport(), b.vector()), (3, Some(&[2, 2, 0][..])));
        b.receive(None);
        assert_eq!((b.lamport(), b.vector()), (4, Some(&[2, 3, 0][..])));
    }

    #[test]
    fn without_a_vector_only_the_lamport_clock_is_kept_and_written() {
        let mut c = LogicalClocks::new(2, 100, false);
        c.receive(Some(&Stamp { lamport: 9, vector: Some(vec![1; 100]) }));
        let mut r = TraceRecord::new(0, 0, crate::trace::RecordKind::Timer);
        c.write_to(&mut r);
        assert_eq!((r.lamport, r.vector), (Some(10), None));
    }
}

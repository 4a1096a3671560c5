//! The HTTP lock session: how `POST /lock` and `DELETE /lock` meet the algorithm.
//!
//! A client's `POST /lock` becomes an [`Request::Acquire`] and waits for the algorithm's
//! [`Event::Entered`](ringleader_core::Event::Entered); its fencing token is the answer. One
//! client waits at a time. A client that gives up (its connection closes) leaves the algorithm
//! waiting: the next client inherits the grant, and a grant nobody waits for any more is given
//! back at once so the section does not stay held by nobody.

use ringleader_algorithms::Algorithm;
use ringleader_core::Request;
use tokio::sync::oneshot;

use super::event_loop::Driver;

/// Where the driver answers a lock request: the fencing token, or why not.
pub type LockReply = oneshot::Sender<Result<u64, String>>;

/// The lock session of one node: the client waiting for the section, and a grant to give back.
#[derive(Default)]
pub struct LockSession {
    /// The client waiting for the section, if any.
    waiter: Option<LockReply>,
    /// The algorithm granted the section to a client that no longer waits: release it after
    /// the current handler.
    release_pending: bool,
}

impl LockSession {
    /// The algorithm granted the section with `fencing`: hand it to the waiting client, or, if
    /// nobody waits for it any more (the client timed out), mark it to be given back.
    pub(super) fn granted(&mut self, fencing: u64) {
        let delivered = self.waiter.take().is_some_and(|w| w.send(Ok(fencing)).is_ok());
        if !delivered {
            self.release_pending = true;
        }
    }
}

impl<A: Algorithm> Driver<A> {
    /// `POST /lock`: ask the algorithm for the section unless this node holds it or another
    /// client already waits.
    pub(super) fn acquire(&mut self, reply: LockReply) {
        let view = self.shared.view.lock().expect("view lock").clone();
        if let Some(f) = view.holding {
            let _ = reply
                .send(Err(format!("this node already holds the lock (fencing {f}); DELETE /lock first")));
        } else if view.waiting && self.lock.waiter.as_ref().is_some_and(|w| !w.is_closed()) {
            let _ = reply.send(Err("another client of this node is already waiting for the lock".into()));
        } else if view.waiting {
            // The previous client gave up; the algorithm still waits: hand the grant to this one.
            self.lock.waiter = Some(reply);
        } else {
            self.lock.waiter = Some(reply);
            self.shared.view.lock().expect("view lock").waiting = true;
            self.request(Request::Acquire);
        }
    }

    /// `DELETE /lock`: release the section this node holds, answering with its fencing token.
    pub(super) fn release(&mut self, reply: LockReply) {
        let holding = self.shared.view.lock().expect("view lock").holding;
        match holding {
            Some(f) => {
                self.request(Request::Release);
                self.shared.view.lock().expect("view lock").holding = None;
                let _ = reply.send(Ok(f));
            }
            None => {
                let _ = reply.send(Err("this node does not hold the lock".into()));
            }
        }
    }

    /// Gives back a grant nobody waited for (see [`LockSession::granted`]).
    pub(super) fn release_abandoned(&mut self) {
        if std::mem::take(&mut self.lock.release_pending) {
            self.shared.view.lock().expect("view lock").holding = None;
            self.request(Request::Release);
        }
    }
}

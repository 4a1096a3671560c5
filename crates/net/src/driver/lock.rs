//! The HTTP lock session: how `POST /lock` and `DELETE /lock` meet the algorithm.
//!
//! A client's `POST /lock` becomes an [`Request::Acquire`](ringleader_core::Request::Acquire) and waits for the algorithm's
//! [`Event::Entered`](ringleader_core::Event::Entered); its fencing token is the answer. One
//! client waits at a time. A client that gives up (its connection closes) leaves the algorithm
//! waiting: the next client inherits the grant, and a grant nobody waits for any more is given
//! back at once so the section does not stay held by nobody.
//!
//! This module holds the session's state; the driver loop (`event_loop`) carries out
//! `POST /lock` and `DELETE /lock` on it.

use tokio::sync::oneshot;

/// Where the driver answers a lock request: the fencing token, or why not.
pub type LockReply = oneshot::Sender<Result<u64, String>>;

/// The lock session of one node: the client waiting for the section, and a grant to give back.
#[derive(Default)]
pub struct LockSession {
    /// The client waiting for the section, if any.
    pub(super) waiter: Option<LockReply>,
    /// The algorithm granted the section to a client that no longer waits: release it after
    /// the current handler.
    pub(super) release_pending: bool,
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

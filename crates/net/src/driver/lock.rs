//! The HTTP lock session: how the clients of a node share the one request the algorithm has.
//!
//! The algorithm grants the critical section to the *node*; this module lends it to one client
//! at a time:
//!
//! - `POST /lock` becomes an [`Input::Acquire`]. The node's
//!   clients queue in arrival order (FIFO); while the queue is not empty and no client holds the
//!   lock, the node has one [`Request::Acquire`] outstanding. On the algorithm's
//!   [`Event::Entered`](ringleader_core::Event::Entered) the client at the head of the queue
//!   gets the lock: a fresh random *handle* (128 bits from the OS), the fencing token and its
//!   lease.
//! - Only the handle releases (`DELETE /lock/{handle}`) or renews
//!   (`POST /lock/{handle}/keepalive`) the lock. A holder that does not renew within its lease
//!   (TTL) loses the lock: the node releases it through the algorithm and publishes a
//!   `lock_lost` event.
//! - A client that gives up waiting (its timeout, its connection closed) leaves the queue; a
//!   grant nobody waits for any more is given back at once so the section does not stay held
//!   by nobody.
//! - When a peer the algorithm needs for the request is known to be gone (its connection lost,
//!   or suspected by the algorithm's failure detector), the waiting clients are answered at once
//!   with the peer and the time ([`LockRefusal::Blocked`]) instead of waiting for their timeout.
//!   Which peers a request needs is known for the algorithms of [`Needs::of`].
//!
//! The session's state is the leaf module [`lock_session`](super::lock_session); this module is
//! what the driver loop does with it.

use std::sync::atomic::Ordering;
use std::time::Duration;

use ringleader_algorithms::PlainAlgorithm;
use ringleader_core::Request;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::event_loop::Driver;
use super::lock_session::{Holder, Needs, Waiter, new_handle};
use super::wall_ns;
use crate::shared::{Grant, Input, LockAsk, LockRefusal, NodeEventKind};

impl<A: PlainAlgorithm> Driver<A> {
    /// `POST /lock`: queue the client, unless a peer the request needs is gone.
    pub(super) fn acquire(&mut self, ask: LockAsk) {
        if let Some(refusal) = self.blocking_peer() {
            let _ = ask.reply.send(Err(refusal));
            return;
        }
        self.lock.queue.push_back(Waiter { ttl: ask.ttl, reply: ask.reply, since: Instant::now() });
        self.settle_lock();
    }

    /// `DELETE /lock/{handle}`: release the lock `handle` holds, answering with its fencing
    /// token.
    pub(super) fn release(&mut self, handle: String, reply: oneshot::Sender<Result<u64, LockRefusal>>) {
        if !self.lock.holder.as_ref().is_some_and(|h| h.owns(&handle)) {
            let _ = reply.send(Err(LockRefusal::NotHolder { handle }));
            return;
        }
        let fencing = self.give_back();
        let _ = reply.send(Ok(fencing));
        self.settle_lock();
    }

    /// `POST /lock/{handle}/keepalive`: renew the lease of the lock `handle` holds.
    pub(super) fn keep_alive(&mut self, handle: String, reply: oneshot::Sender<Result<Grant, LockRefusal>>) {
        let lease = self.lock.lease + 1;
        let tx = self.input_tx.clone();
        match self.lock.holder.as_mut() {
            Some(h) if h.owns(&handle) => {
                h.timer.abort();
                h.lease = lease;
                h.timer = lease_timer(tx, h.grant.ttl, lease);
                self.lock.lease = lease;
                let _ = reply.send(Ok(h.grant.clone()));
            }
            _ => {
                let _ = reply.send(Err(LockRefusal::NotHolder { handle }));
            }
        }
    }

    /// The lease timer of generation `lease` ran out: if it is still the holder's, the holder
    /// loses the lock.
    pub(super) fn lease_expired(&mut self, lease: u64) {
        let Some(ttl) = self.lock.holder.as_ref().filter(|h| h.lease == lease).map(|h| h.grant.ttl) else {
            return;
        };
        let fencing = self.give_back();
        self.shared.publish(wall_ns(), NodeEventKind::LockLost { fencing, ttl });
        self.settle_lock();
    }

    /// Releases the holder's grant through the algorithm; returns its fencing token.
    fn give_back(&mut self) -> u64 {
        let h = self.lock.holder.take().expect("a holder");
        h.timer.abort();
        self.shared.lock_times.held(h.granted_at.elapsed());
        self.shared.view.lock().holding = None;
        self.request(Request::Release);
        h.grant.fencing
    }

    /// After every step: hand a new grant to the first client still waiting (or give it back),
    /// answer the waiting clients if a peer the request needs is gone, and ask the algorithm for
    /// the section when clients wait and nobody holds it.
    pub(super) fn settle_lock(&mut self) {
        if let Some(fencing) = self.lock.entered.take() {
            self.lock.requested = false;
            self.hand_out(fencing);
        }
        if std::mem::take(&mut self.lock.release_pending) {
            self.shared.view.lock().holding = None;
            self.request(Request::Release);
        }
        if !self.lock.queue.is_empty()
            && let Some(refusal) = self.blocking_peer()
        {
            for w in self.lock.queue.drain(..) {
                let _ = w.reply.send(Err(refusal.clone()));
            }
        }
        self.lock.queue.retain(|w| !w.reply.is_closed());
        let ask = self.lock.holder.is_none()
            && !self.lock.requested
            && self.lock.entered.is_none()
            && !self.lock.queue.is_empty();
        {
            let mut view = self.shared.view.lock();
            view.clients_waiting = self.lock.queue.len();
            if ask {
                view.waiting = true;
            }
        }
        if ask {
            self.lock.requested = true;
            self.request(Request::Acquire);
        }
    }

    /// Gives grant `fencing` to the first waiting client that still waits; with none, marks it
    /// to be given back.
    fn hand_out(&mut self, fencing: u64) {
        while let Some(w) = self.lock.queue.pop_front() {
            if w.reply.is_closed() {
                continue;
            }
            let handle = match new_handle() {
                Ok(h) => h,
                Err(e) => {
                    let _ = w.reply.send(Err(e));
                    continue;
                }
            };
            let grant = Grant { handle, fencing, ttl: w.ttl };
            // The status must not count this client as waiting once it can see its grant: a
            // client that reads `clients_waiting` right after being answered would otherwise
            // still count itself.
            self.shared.view.lock().clients_waiting = self.lock.queue.len();
            if w.reply.send(Ok(grant.clone())).is_err() {
                continue;
            }
            self.shared.lock_times.waited(w.since.elapsed());
            self.lock.lease += 1;
            let lease = self.lock.lease;
            let timer = lease_timer(self.input_tx.clone(), grant.ttl, lease);
            self.lock.holder = Some(Holder { grant, granted_at: Instant::now(), lease, timer });
            return;
        }
        self.lock.release_pending = true;
    }

    /// The first peer this node's request needs that is suspected by the algorithm or whose
    /// connection was lost, as a refusal naming it and since when.
    fn blocking_peer(&self) -> Option<LockRefusal> {
        let needs = self.lock.needs;
        if needs == Needs::Unknown {
            return None;
        }
        let suspected = self.shared.view.lock().suspected.clone();
        let now = wall_ns();
        let refuse = |peer, why, since_ns: u64| LockRefusal::Blocked {
            algorithm: A::NAME,
            needs: needs.describe(),
            peer,
            why,
            since_ns,
            ago_ms: now.saturating_sub(since_ns) / 1_000_000,
        };
        for link in self.shared.peers.iter().flatten().filter(|l| needs.includes(l.position)) {
            if let Some(&since) = suspected.get(&link.position) {
                return Some(refuse(link.state.id, "suspected by the failure detector", since));
            }
            let down = link.state.down_since_ns.load(Ordering::Relaxed);
            if down != 0 && !link.state.connected.load(Ordering::Relaxed) {
                return Some(refuse(link.state.id, "unreachable (its connection was lost)", down));
            }
        }
        None
    }
}

/// Sends [`Input::LeaseExpired`] for `lease` after `ttl`.
fn lease_timer<M: Send + 'static, T: Send + 'static>(
    tx: tokio::sync::mpsc::Sender<Input<M, T>>,
    ttl: Duration,
    lease: u64,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        tokio::time::sleep(ttl).await;
        let _ = tx.send(Input::LeaseExpired { lease }).await;
    })
}

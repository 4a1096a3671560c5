//! [`Session`]: a lease kept alive by a background thread, and what is held with it:
//! [`LockGuard`] and [`Leadership`].

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};

use crate::client::{Retry, path_segment, whole_ms};
use crate::{Client, ClientError, Leader};

/// Why a session ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionEnd {
    /// The service no longer knows the lease (it expired there, or was revoked).
    Expired,
    /// No keep-alive succeeded in time: the client stopped trusting the lease, which the
    /// service may still hold a little longer.
    Untrusted,
    /// The session was closed by its owner.
    Closed,
}

impl std::fmt::Display for SessionEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SessionEnd::Expired => "the service says the lease expired or was revoked",
            SessionEnd::Untrusted => "no keep-alive succeeded before the lease's trusted time ran out",
            SessionEnd::Closed => "the session was closed",
        })
    }
}

struct State {
    /// The last instant the client trusts the lease.
    valid_until: Instant,
    /// Set once; the session is over.
    end: Option<SessionEnd>,
}

/// A state shared with a background thread, and a condition variable notified when it changes
/// (a session and its keep-alive thread; a lock guard and its watcher).
#[derive(Debug, Default)]
struct Watched<S> {
    state: Mutex<S>,
    changed: Condvar,
}

impl<S> Watched<S> {
    fn new(state: S) -> Self {
        Watched { state: Mutex::new(state), changed: Condvar::new() }
    }

    fn lock(&self) -> MutexGuard<'_, S> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits on `guard` until notified or `timeout` passes.
    fn wait_timeout<'a>(&self, guard: MutexGuard<'a, S>, timeout: Duration) -> MutexGuard<'a, S> {
        self.changed.wait_timeout(guard, timeout).unwrap_or_else(|p| p.into_inner()).0
    }

    /// Sets the slot `field` picks to `value` unless it is set already (the first cause wins),
    /// and wakes every waiter.
    fn set_once<T>(&self, field: impl FnOnce(&mut S) -> &mut Option<T>, value: T) {
        let mut s = self.lock();
        field(&mut s).get_or_insert(value);
        self.changed.notify_all();
    }
}

/// A session and its keep-alive thread.
type Shared = Watched<State>;

impl Shared {
    fn end(&self, end: SessionEnd) {
        self.set_once(|s| &mut s.end, end);
    }
}

/// A lease plus a background thread keeping it alive every third of its TTL.
///
/// The client dates the lease from when it *sent* the last successful grant or keep-alive, and
/// trusts it until a tenth of the TTL before the service would let it go:
/// `valid_until = sent + ttl - ttl/10`. Past that, or once the service says the lease is gone,
/// the session is lost for good ([`Session::is_alive`] is false, [`Session::wait_lost`] returns).
/// Dropping the session stops the thread and revokes the lease (errors are ignored; use
/// [`Session::close`] to see them).
pub struct Session {
    client: Client,
    lease: u64,
    ttl: Duration,
    shared: Arc<Shared>,
    keeper: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("lease", &self.lease).field("ttl", &self.ttl).finish()
    }
}

/// The part of the TTL the client does not trust.
fn margin(ttl: Duration) -> Duration {
    ttl / 10
}

impl Session {
    /// Grants a lease of `ttl` and starts keeping it alive.
    pub fn new(client: &Client, ttl: Duration) -> Result<Session, ClientError> {
        let sent = Instant::now();
        let grant = client.grant(ttl)?;
        if grant.ttl_ms == 0 {
            return Err(ClientError::Protocol(format!(
                "lease {} was granted with a TTL of 0 ms",
                grant.lease
            )));
        }
        let ttl = Duration::from_millis(grant.ttl_ms);
        let shared = Arc::new(Shared::new(State { valid_until: sent + ttl - margin(ttl), end: None }));
        let keeper = {
            let (client, shared, lease) = (client.clone(), Arc::clone(&shared), grant.lease);
            // The keep-alive's own bound: an answer later than a third of the TTL is no use.
            let client = client.with_request_timeout((ttl / 3).max(Duration::from_millis(50)));
            std::thread::Builder::new()
                .name(format!("lease-{lease}"))
                .spawn(move || keep_alive(&client, lease, ttl, &shared))
                .map_err(|e| ClientError::Protocol(format!("cannot start the keep-alive thread: {e}")))?
        };
        Ok(Session { client: client.clone(), lease: grant.lease, ttl, shared, keeper: Some(keeper) })
    }

    /// The lease id.
    pub fn lease(&self) -> u64 {
        self.lease
    }

    /// The lease's TTL as granted.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The client the session talks through.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Whether the client still trusts the lease: not lost, and before
    /// [`Session::valid_until`].
    pub fn is_alive(&self) -> bool {
        let s = self.shared.lock();
        s.end.is_none() && Instant::now() < s.valid_until
    }

    /// The last instant the client trusts the lease.
    pub fn valid_until(&self) -> Instant {
        self.shared.lock().valid_until
    }

    /// Why the session ended, if it has.
    pub fn ended(&self) -> Option<SessionEnd> {
        let s = self.shared.lock();
        match &s.end {
            Some(e) => Some(e.clone()),
            None if Instant::now() >= s.valid_until => Some(SessionEnd::Untrusted),
            None => None,
        }
    }

    /// Waits up to `timeout` for the session to be lost; returns why, or `None` if it is still
    /// alive.
    pub fn wait_lost(&self, timeout: Duration) -> Option<SessionEnd> {
        let deadline = Instant::now() + timeout;
        let mut s = self.shared.lock();
        loop {
            let now = Instant::now();
            if let Some(e) = &s.end {
                return Some(e.clone());
            }
            if now >= s.valid_until {
                return Some(SessionEnd::Untrusted);
            }
            if now >= deadline {
                return None;
            }
            let wake = deadline.min(s.valid_until);
            s = self.shared.wait_timeout(s, wake - now);
        }
    }

    /// Stops keeping the lease alive and revokes it.
    pub fn close(mut self) -> Result<(), ClientError> {
        self.stop();
        self.client.revoke(self.lease)
    }

    fn stop(&mut self) {
        self.shared.end(SessionEnd::Closed);
        if let Some(k) = self.keeper.take() {
            let _ = k.join();
        }
    }

    /// Acquires lock `name`, waiting up to `timeout` (`None`: as long as the lease lives).
    ///
    /// If the connection fails while waiting, the acquire is sent again with the same lease on
    /// the next endpoint: the service answers a repeated acquire with the same fencing token.
    pub fn lock(&self, name: &str, timeout: Option<Duration>) -> Result<LockGuard<'_>, ClientError> {
        path_segment(name)?;
        self.check_alive()?;
        let mut body = self
            .client
            .with_lease_key(self.lease, json!({ "name": name, "lease": self.lease, "wait": true }));
        if let Some(t) = timeout {
            body["timeout_ms"] = json!(whole_ms(t).max(1));
        }
        let a: Acquired = self.client.post_waiting("/v1/lock/acquire", body, timeout)?;
        LockGuard::new(self, name, a.fencing)
    }

    /// Acquires lock `name` if it is free now: [`ClientError::Busy`] or
    /// [`ClientError::LockDelay`] if not.
    pub fn try_lock(&self, name: &str) -> Result<LockGuard<'_>, ClientError> {
        path_segment(name)?;
        self.check_alive()?;
        let body = self
            .client
            .with_lease_key(self.lease, json!({ "name": name, "lease": self.lease, "wait": false }));
        let a: Acquired = self.client.post("/v1/lock/acquire", body, Retry::Always)?;
        LockGuard::new(self, name, a.fencing)
    }

    /// Campaigns in `election` with `value`, waiting up to `timeout` (`None`: as long as the
    /// lease lives) to lead it.
    pub fn campaign(
        &self,
        election: &str,
        value: &str,
        timeout: Option<Duration>,
    ) -> Result<Leadership<'_>, ClientError> {
        #[derive(Deserialize)]
        struct Campaigned {
            leader: Leader,
        }
        path_segment(election)?;
        self.check_alive()?;
        let mut body = self
            .client
            .with_lease_key(self.lease, json!({ "election": election, "lease": self.lease, "value": value }));
        if let Some(t) = timeout {
            body["timeout_ms"] = json!(whole_ms(t).max(1));
        }
        let c: Campaigned = self.client.post_waiting("/v1/election/campaign", body, timeout)?;
        if c.leader.lease != self.lease {
            return Err(ClientError::Protocol(format!(
                "a campaign by lease {} answered with leader lease {}",
                self.lease, c.leader.lease
            )));
        }
        Ok(Leadership { session: self, election: election.to_string(), leader: c.leader, held: true })
    }

    fn check_alive(&self) -> Result<(), ClientError> {
        match self.ended() {
            Some(SessionEnd::Expired) => Err(ClientError::NoSuchLease),
            Some(_) => Err(ClientError::Lost),
            None => Ok(()),
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        if self.keeper.is_some() {
            self.stop();
            let _ = self.client.revoke(self.lease);
        }
    }
}

/// The keep-alive thread: every third of the TTL (sooner after a failure), until the session
/// ends.
fn keep_alive(client: &Client, lease: u64, ttl: Duration, shared: &Shared) {
    let every = ttl / 3;
    let retry = (ttl / 10).max(Duration::from_millis(1));
    let mut next = Instant::now() + every;
    loop {
        {
            let mut s = shared.lock();
            loop {
                if s.end.is_some() {
                    return;
                }
                let now = Instant::now();
                if now >= s.valid_until {
                    s.end = Some(SessionEnd::Untrusted);
                    shared.changed.notify_all();
                    return;
                }
                if now >= next {
                    break;
                }
                let wake = next.min(s.valid_until);
                s = shared.wait_timeout(s, wake - now);
            }
        }
        let sent = Instant::now();
        match client.keep_alive(lease) {
            Ok(g) => {
                let ttl = Duration::from_millis(g.ttl_ms);
                let mut s = shared.lock();
                s.valid_until = s.valid_until.max(sent + ttl - margin(ttl));
                shared.changed.notify_all();
                next = sent + ttl / 3;
            }
            Err(ClientError::NoSuchLease) => {
                shared.end(SessionEnd::Expired);
                return;
            }
            Err(_) => next = Instant::now() + retry,
        }
    }
}

#[derive(Deserialize)]
struct Acquired {
    fencing: u64,
}

/// How a held lock was lost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LockLoss {
    /// The service says the lock is no longer held by this lease with this fencing token (it
    /// was taken from the lease: wound-wait, an operator's release, a lease revoked).
    Taken,
    /// The session (the lease) ended.
    Session(SessionEnd),
}

impl std::fmt::Display for LockLoss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockLoss::Taken => f.write_str("the service says the lock is held by another lease, or by none"),
            LockLoss::Session(end) => write!(f, "the session ended: {end}"),
        }
    }
}

/// What the guard's watcher thread and the guard share.
#[derive(Debug, Default)]
struct WatchState {
    /// Set by the guard to stop the watcher.
    stop: bool,
    /// Set once by the watcher.
    lost: Option<LockLoss>,
}

/// A lock guard and its watcher thread.
type LockWatch = Watched<WatchState>;

impl LockWatch {
    fn lose(&self, loss: LockLoss) {
        self.set_once(|w| &mut w.lost, loss);
    }
}

/// A held lock; dropping it releases the lock (errors ignored; [`LockGuard::release`] shows
/// them).
///
/// Holding the guard does not mean holding the lock: the session may be lost, or the lock
/// taken from the lease. The guard watches both, as `ringleader lock` does: a thread asks the
/// service every third of the lease's TTL whether the lease still holds the lock with this
/// guard's fencing token, and wakes at once when the session ends. [`LockGuard::is_held`],
/// [`LockGuard::lost`] and [`LockGuard::wait_lost`] report it. Check before acting, and pass
/// [`LockGuard::fencing`] to whatever the lock protects so that it can refuse an older holder.
#[derive(Debug)]
pub struct LockGuard<'s> {
    session: &'s Session,
    name: String,
    fencing: u64,
    held: bool,
    watch: Arc<LockWatch>,
    watcher: Option<JoinHandle<()>>,
}

impl<'s> LockGuard<'s> {
    fn new(session: &'s Session, name: &str, fencing: u64) -> Result<LockGuard<'s>, ClientError> {
        let watch = Arc::new(LockWatch::default());
        let mut guard = LockGuard {
            session,
            name: name.to_string(),
            fencing,
            held: true,
            watch: Arc::clone(&watch),
            watcher: None,
        };
        let every = (session.ttl / 3).max(Duration::from_millis(50));
        let client = session.client.clone().with_request_timeout(every);
        let (shared, lease, name) = (Arc::clone(&session.shared), session.lease, name.to_string());
        guard.watcher = Some(
            std::thread::Builder::new()
                .name(format!("lock-{name}"))
                .spawn(move || watch_lock(&client, &name, lease, fencing, every, &shared, &watch))
                .map_err(|e| ClientError::Protocol(format!("cannot start the lock's watcher thread: {e}")))?,
        );
        Ok(guard)
    }

    /// Whether the lock is still held as far as the client knows: the session is alive and the
    /// watcher has not seen the lock taken.
    pub fn is_held(&self) -> bool {
        self.lost().is_none()
    }

    /// How the lock was lost, if it was.
    pub fn lost(&self) -> Option<LockLoss> {
        let seen = self.watch.lock().lost.clone();
        seen.or_else(|| self.session.ended().map(LockLoss::Session))
    }

    /// Waits up to `timeout` for the lock to be lost; returns how, or `None` if it is still
    /// held.
    pub fn wait_lost(&self, timeout: Duration) -> Option<LockLoss> {
        let deadline = Instant::now() + timeout;
        let mut w = self.watch.lock();
        loop {
            if let Some(loss) = &w.lost {
                return Some(loss.clone());
            }
            let now = Instant::now();
            if now >= deadline {
                // Never the session's lock while holding the watch's (the watcher takes them in
                // the other order).
                drop(w);
                return self.session.ended().map(LockLoss::Session);
            }
            // The watcher records the session's end too, as soon as it happens.
            w = self.watch.wait_timeout(w, deadline - now);
        }
    }

    fn stop_watching(&mut self) {
        self.watch.lock().stop = true;
        // The watcher waits on the session's condition variable: take its lock once, so that
        // the watcher is either before its check of `stop` or waiting, then wake it.
        drop(self.session.shared.lock());
        self.session.shared.changed.notify_all();
        if let Some(w) = self.watcher.take() {
            let _ = w.join();
        }
    }

    /// The fencing token: it strictly increases per lock name.
    pub fn fencing(&self) -> u64 {
        self.fencing
    }

    /// The lock's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The session the lock is held with.
    pub fn session(&self) -> &Session {
        self.session
    }

    /// Releases the lock.
    pub fn release(mut self) -> Result<(), ClientError> {
        self.held = false;
        self.stop_watching();
        self.send_release()
    }

    /// Asks the service whether this guard's lease still holds the lock with this guard's
    /// fencing token (a linearizable read). `Err(ClientError::Lost)` when it does not: the lease
    /// ended, or the lock was taken from it (wound-wait, a revoke by an operator). Check it
    /// before acting on what the lock protects, or poll it while holding: the session's
    /// keep-alives alone do not say that the lock is still held.
    pub fn check(&self) -> Result<(), ClientError> {
        #[derive(Deserialize)]
        struct Holder {
            lease: u64,
            fencing: u64,
        }
        #[derive(Deserialize)]
        struct View {
            holder: Option<Holder>,
        }
        self.session.check_alive()?;
        let v: View = self.session.client.get(&format!("/v1/lock/{}", self.name))?;
        match v.holder {
            Some(h) if h.lease == self.session.lease && h.fencing == self.fencing => Ok(()),
            _ => Err(ClientError::Lost),
        }
    }

    fn send_release(&self) -> Result<(), ClientError> {
        let body = self
            .session
            .client
            .with_lease_key(self.session.lease, json!({ "name": self.name, "lease": self.session.lease }));
        self.session.client.post::<Value>("/v1/lock/release", body, Retry::Always).map(drop)
    }
}

impl Drop for LockGuard<'_> {
    fn drop(&mut self) {
        self.stop_watching();
        if self.held {
            let _ = self.send_release();
        }
    }
}

/// The lock's watcher thread: every `every`, asks whether `lease` still holds `name` with
/// `fencing`; records the loss (the lock taken, or the session's end, at once) and stops.
fn watch_lock(
    client: &Client,
    name: &str,
    lease: u64,
    fencing: u64,
    every: Duration,
    session: &Shared,
    watch: &LockWatch,
) {
    #[derive(Deserialize)]
    struct Holder {
        lease: u64,
        fencing: u64,
    }
    #[derive(Deserialize)]
    struct View {
        holder: Option<Holder>,
    }
    loop {
        let next = Instant::now() + every;
        {
            let mut s = session.lock();
            loop {
                if watch.lock().stop {
                    return;
                }
                let now = Instant::now();
                if let Some(end) = &s.end {
                    if *end != SessionEnd::Closed {
                        watch.lose(LockLoss::Session(end.clone()));
                    }
                    return;
                }
                if now >= s.valid_until {
                    watch.lose(LockLoss::Session(SessionEnd::Untrusted));
                    return;
                }
                if now >= next {
                    break;
                }
                let wake = next.min(s.valid_until);
                s = session.wait_timeout(s, wake - now);
            }
        }
        // A failed read says nothing about the lock: the session's trusted time covers it.
        if let Ok(v) = client.get::<View>(&format!("/v1/lock/{name}")) {
            match v.holder {
                Some(h) if h.lease == lease && h.fencing == fencing => {}
                _ => {
                    watch.lose(LockLoss::Taken);
                    return;
                }
            }
        }
    }
}

/// Leading an election; dropping it resigns (errors ignored; [`Leadership::resign`] shows
/// them).
#[derive(Debug)]
pub struct Leadership<'s> {
    session: &'s Session,
    election: String,
    leader: Leader,
    held: bool,
}

impl Leadership<'_> {
    /// The election.
    pub fn election(&self) -> &str {
        &self.election
    }

    /// This leader as the service records it (lease, value, the candidacy's log index).
    pub fn leader(&self) -> &Leader {
        &self.leader
    }

    /// The session leadership is held with.
    pub fn session(&self) -> &Session {
        self.session
    }

    /// Announces a new value as leader.
    pub fn proclaim(&mut self, value: &str) -> Result<(), ClientError> {
        let lease = self.session.lease;
        let body = self
            .session
            .client
            .with_lease_key(lease, json!({ "election": self.election, "lease": lease, "value": value }));
        self.session.client.post::<Value>("/v1/election/proclaim", body, Retry::Always)?;
        self.leader.value = value.to_string();
        Ok(())
    }

    /// Gives up leadership.
    pub fn resign(mut self) -> Result<(), ClientError> {
        self.held = false;
        self.send_resign()
    }

    fn send_resign(&self) -> Result<(), ClientError> {
        let lease = self.session.lease;
        let body =
            self.session.client.with_lease_key(lease, json!({ "election": self.election, "lease": lease }));
        self.session.client.post::<Value>("/v1/election/resign", body, Retry::Always).map(drop)
    }
}

impl Drop for Leadership<'_> {
    fn drop(&mut self) {
        if self.held {
            let _ = self.send_resign();
        }
    }
}

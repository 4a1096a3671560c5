//! `etcdserverpb.Watch`: the bidirectional Watch stream over the key-value store's events.
//!
//! One stream carries any number of watchers. A create request (key, `range_end`, an optional
//! `start_revision`, the NOPUT/NODELETE filters, `prev_kv`, `progress_notify`, a `watch_id` or
//! 0 for one the server chooses, counting from 0 as etcd does) is answered `created` first;
//! then come the events, one response per revision, in revision order, each with that revision
//! in its header. Events from a past `start_revision` come from the state machine's history;
//! a start before the history's first kept revision is answered, after `created`, with
//! `compact_revision` (the first revision that can be watched) and `canceled`, as etcd does.
//! Later events come from the node's notice stream, to which the stream subscribes before it
//! reads anything, so no event falls between the history and the notices. A node that installs
//! a snapshot publishes the changes it brought from the snapshot's history, one notice per
//! revision. A stream that falls so far behind that notices were dropped has all its watchers
//! cancelled with a reason, and so has every stream when a snapshot's history no longer
//! reaches back to the changes it brought (with `compact_revision`): a watcher never silently
//! misses an event.

use std::collections::BTreeMap;
use std::pin::Pin;
use std::time::Duration;

use futures_util::Stream;
use ringleader_lock_service::kv::{EventKind, KeyEvent, KvError, in_range};
use ringleader_lock_service::state::{Notice, StateMachine};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc;
use tonic::{Request, Response, Status, Streaming};

use super::kv::kv_pb;
use super::pb::etcdserverpb::watch_request::RequestUnion;
use super::pb::etcdserverpb::watch_server::Watch;
use super::pb::etcdserverpb::{WatchCreateRequest, WatchRequest, WatchResponse};
use super::pb::mvccpb;
use super::{Ctx, unavailable};

/// How often a watcher created with `progress_notify` is told the current revision.
pub const PROGRESS_NOTIFY_EVERY: Duration = Duration::from_secs(10);

/// The Watch service.
pub struct WatchApi(pub Ctx);

/// One watcher of a stream.
struct Watcher {
    key: Vec<u8>,
    range_end: Vec<u8>,
    no_put: bool,
    no_delete: bool,
    prev_kv: bool,
    progress_notify: bool,
    /// Events up to this revision were sent from the history (or precede the watch).
    after: u64,
}

impl Watcher {
    /// The events of one revision this watcher is to receive.
    fn select(&self, events: &[KeyEvent]) -> Vec<mvccpb::Event> {
        events
            .iter()
            .filter(|e| in_range(&e.kv.key, &self.key, &self.range_end))
            .filter(|e| match e.kind {
                EventKind::Put => !self.no_put,
                EventKind::Delete => !self.no_delete,
            })
            .map(|e| mvccpb::Event {
                r#type: match e.kind {
                    EventKind::Put => mvccpb::event::EventType::Put as i32,
                    EventKind::Delete => mvccpb::event::EventType::Delete as i32,
                },
                kv: Some(kv_pb(e.kv.clone())),
                prev_kv: if self.prev_kv { e.prev_kv.clone().map(kv_pb) } else { None },
            })
            .collect()
    }
}

/// The state of one Watch stream.
struct Session {
    ctx: Ctx,
    /// Who opened the stream: each watch is checked for `read` on its range.
    who: crate::ops::Caller,
    out: mpsc::Sender<Result<WatchResponse, Status>>,
    watchers: BTreeMap<i64, Watcher>,
    next_id: i64,
    /// The highest index of a notice this stream handled.
    seen: u64,
}

impl Session {
    fn response(&self, revision: u64, watch_id: i64) -> WatchResponse {
        WatchResponse { header: self.ctx.header(Some(revision)), watch_id, ..WatchResponse::default() }
    }

    /// Sends `r`; false if the client went away.
    async fn send(&self, r: WatchResponse) -> bool {
        self.out.send(Ok(r)).await.is_ok()
    }

    async fn create(&mut self, c: WatchCreateRequest) -> bool {
        let id = if c.watch_id == 0 {
            while self.watchers.contains_key(&self.next_id) {
                self.next_id += 1;
            }
            self.next_id += 1;
            self.next_id - 1
        } else {
            c.watch_id
        };
        let applied = self.ctx.header(None).map_or(0, |h| h.revision as u64);
        let need = crate::users::Need::Keys {
            access: ringleader_lock_service::auth::Access::Read,
            key: c.key.clone(),
            range_end: c.range_end.clone(),
        };
        let denied = crate::ops::permit(&self.ctx.node, &self.who, &need).err();
        if c.watch_id < 0 || self.watchers.contains_key(&id) || c.key.is_empty() || denied.is_some() {
            let reason = if let Some(denied) = denied {
                denied.to_string()
            } else if c.key.is_empty() {
                "etcdserver: key is not provided".to_string()
            } else {
                format!("mvcc: watch id {} is negative or already in use on this stream", c.watch_id)
            };
            let r = WatchResponse {
                created: true,
                canceled: true,
                cancel_reason: reason,
                ..self.response(applied, id)
            };
            return self.send(r).await;
        }
        let start = u64::try_from(c.start_revision).unwrap_or(0);
        let query = move |m: &StateMachine| {
            let applied = m.last_applied();
            let history = if start > 0 && start <= applied { Some(m.kv().events_since(start)) } else { None };
            (applied, history)
        };
        let (applied, history) = match self.ctx.node.local(query).await {
            Ok(answer) => answer,
            Err(e) => {
                let _ = self.out.send(Err(unavailable(e))).await;
                return false;
            }
        };
        let created = WatchResponse { created: true, ..self.response(applied, id) };
        if !self.send(created).await {
            return false;
        }
        let w = Watcher {
            key: c.key,
            range_end: c.range_end,
            no_put: c.filters.contains(&0),
            no_delete: c.filters.contains(&1),
            prev_kv: c.prev_kv,
            progress_notify: c.progress_notify,
            after: applied,
        };
        match history {
            Some(Err(KvError::Compacted { first_kept })) => {
                let r = WatchResponse {
                    compact_revision: first_kept as i64,
                    canceled: true,
                    cancel_reason: KvError::Compacted { first_kept }.to_string(),
                    ..self.response(applied, id)
                };
                return self.send(r).await;
            }
            Some(Err(e)) => {
                let r = WatchResponse {
                    canceled: true,
                    cancel_reason: e.to_string(),
                    ..self.response(applied, id)
                };
                return self.send(r).await;
            }
            Some(Ok(events)) => {
                // One response per revision, as the notices come.
                let mut i = 0;
                while i < events.len() {
                    let rev = events[i].0;
                    let j = i + events[i..].iter().take_while(|(r, _)| *r == rev).count();
                    let batch: Vec<KeyEvent> = events[i..j].iter().map(|(_, e)| e.clone()).collect();
                    let selected = w.select(&batch);
                    if !selected.is_empty()
                        && !self.send(WatchResponse { events: selected, ..self.response(rev, id) }).await
                    {
                        return false;
                    }
                    i = j;
                }
            }
            None => {}
        }
        // A start revision in the future: events from it on, none before.
        let w = Watcher { after: applied.max(start.saturating_sub(1)), ..w };
        self.watchers.insert(id, w);
        true
    }

    async fn notice(&mut self, index: u64, events: &[KeyEvent]) -> bool {
        self.seen = self.seen.max(index);
        let mut out = Vec::new();
        for (id, w) in &self.watchers {
            if index <= w.after {
                continue;
            }
            let selected = w.select(events);
            if !selected.is_empty() {
                out.push(WatchResponse { events: selected, ..self.response(index, *id) });
            }
        }
        for r in out {
            if !self.send(r).await {
                return false;
            }
        }
        true
    }

    /// The revision up to which every watcher has been sent every event.
    fn progress_revision(&self) -> u64 {
        self.watchers.values().map(|w| w.after.max(self.seen)).min().unwrap_or(self.seen)
    }

    async fn handle(&mut self, req: WatchRequest) -> bool {
        match req.request_union {
            Some(RequestUnion::CreateRequest(c)) => self.create(c).await,
            Some(RequestUnion::CancelRequest(c)) => {
                let rev = self.progress_revision();
                if self.watchers.remove(&c.watch_id).is_some() {
                    let r = WatchResponse { canceled: true, ..self.response(rev, c.watch_id) };
                    return self.send(r).await;
                }
                true
            }
            // Not tied to a watcher: etcd answers it with watch id -1.
            Some(RequestUnion::ProgressRequest(_)) => {
                self.send(self.response(self.progress_revision(), -1)).await
            }
            None => true,
        }
    }

    async fn lagged(&mut self) -> bool {
        let rev = self.progress_revision();
        let ids: Vec<i64> = self.watchers.keys().copied().collect();
        self.watchers.clear();
        for id in ids {
            let reason = format!(
                "ringleader: this watch stream fell behind and events after revision {rev} were dropped; \
                 watch again from revision {}",
                rev + 1
            );
            if !self
                .send(WatchResponse { canceled: true, cancel_reason: reason, ..self.response(rev, id) })
                .await
            {
                return false;
            }
        }
        true
    }

    /// A snapshot brought changes the history no longer holds: every watcher is cancelled with
    /// `compact_revision`, from which it can watch again.
    async fn history_gap(&mut self, index: u64, first_kept: u64) -> bool {
        self.seen = self.seen.max(index);
        let ids: Vec<i64> = self.watchers.keys().copied().collect();
        self.watchers.clear();
        for id in ids {
            let reason = KvError::Compacted { first_kept }.to_string();
            let r = WatchResponse {
                compact_revision: first_kept as i64,
                canceled: true,
                cancel_reason: reason,
                ..self.response(index, id)
            };
            if !self.send(r).await {
                return false;
            }
        }
        true
    }

    async fn progress(&mut self) -> bool {
        let rev = self.progress_revision();
        let ids: Vec<i64> =
            self.watchers.iter().filter(|(_, w)| w.progress_notify).map(|(id, _)| *id).collect();
        for id in ids {
            if !self.send(self.response(rev, id)).await {
                return false;
            }
        }
        true
    }
}

/// Serves one Watch stream until the client closes it or the node stops.
async fn run(mut session: Session, mut inbound: Streaming<WatchRequest>) {
    let mut notices = session.ctx.node.notices.subscribe();
    session.seen = session.ctx.header(None).map_or(0, |h| h.revision as u64);
    let mut progress = tokio::time::interval(PROGRESS_NOTIFY_EVERY);
    progress.tick().await;
    loop {
        let go_on = tokio::select! {
            msg = inbound.message() => match msg {
                Ok(Some(req)) => session.handle(req).await,
                Ok(None) | Err(_) => false,
            },
            n = notices.recv() => match n {
                Ok(p) => match &p.1 {
                    Notice::KeyEvents { events } => session.notice(p.0, events).await,
                    Notice::HistoryGap { first_kept } => session.history_gap(p.0, *first_kept).await,
                    _ => {
                        session.seen = session.seen.max(p.0);
                        true
                    }
                },
                Err(RecvError::Lagged(_)) => session.lagged().await,
                Err(RecvError::Closed) => false,
            },
            _ = progress.tick() => session.progress().await,
            () = session.out.closed() => false,
        };
        if !go_on {
            return;
        }
    }
}

type WatchStream = Pin<Box<dyn Stream<Item = Result<WatchResponse, Status>> + Send>>;

#[tonic::async_trait]
impl Watch for WatchApi {
    type WatchStream = WatchStream;

    async fn watch(
        &self,
        req: Request<Streaming<WatchRequest>>,
    ) -> Result<Response<Self::WatchStream>, Status> {
        let who = super::caller_of(&req)?;
        let (out, rx) = mpsc::channel(256);
        let session =
            Session { ctx: self.0.clone(), who, out, watchers: BTreeMap::new(), next_id: 0, seen: 0 };
        tokio::spawn(run(session, req.into_inner()));
        let stream =
            futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|r| (r, rx)) });
        Ok(Response::new(Box::pin(stream)))
    }
}

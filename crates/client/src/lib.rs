//! A blocking client of the ringleader coordination service (leases, named locks with fencing
//! tokens, elections), speaking the HTTP/JSON API of `docs/SERVICE-API.md`.
//!
//! ```no_run
//! use std::time::Duration;
//! use ringleader_client::{Client, Session};
//!
//! # fn main() -> Result<(), ringleader_client::ClientError> {
//! let client = Client::new(["http://127.0.0.1:4100", "http://127.0.0.1:4101"])?;
//! // A lease of 10 s, kept alive every 3.3 s by a background thread; dropping it revokes.
//! let session = Session::new(&client, Duration::from_secs(10))?;
//!
//! // A lock: blocks until granted (or 5 s); dropping the guard releases it.
//! let guard = session.lock("db-migration", Some(Duration::from_secs(5)))?;
//! println!("writing with fencing token {}", guard.fencing());
//! assert!(session.is_alive(), "check before every action the lock protects");
//! drop(guard);
//!
//! // An election: blocks until this session leads; dropping the leadership resigns.
//! let mut leading = session.campaign("scheduler", "node-a", None)?;
//! leading.proclaim("node-a:v2")?;
//! println!("leader is {:?}", client.leader("scheduler")?);
//! leading.resign()?;
//!
//! // Every leader change, as it happens.
//! for leader in client.observe("scheduler")?.take(1) {
//!     println!("{:?}", leader?);
//! }
//! # Ok(())
//! # }
//! ```
//!
//! Layout: [`Client`] (`client.rs`) holds the endpoints and does failover: a request that
//! cannot connect, or is answered 503 `unavailable`, goes to the next endpoint in turn, once
//! round by default; the endpoint that answered is tried first next time. Requests that are
//! safe to repeat (keep-alive, revoke, acquire and campaign by the same lease, release, resign)
//! are sent again on the next endpoint after any transport failure, and so is a grant, which
//! carries an idempotency key (`Idempotency-Key`, docs/SERVICE-API.md) so that the service
//! applies it at most once. A [`LockGuard`] watches its lock and its session
//! ([`LockGuard::wait_lost`]). [`Session`], [`LockGuard`] and [`Leadership`]
//! (`session.rs`) hold a lease and what is held with it. [`ClientError`] (`error.rs`) maps the
//! API's `reason` codes. `sse.rs` parses Server-Sent Events, `history.rs` records lock histories for the checker, and `events.rs` types the
//! `observe` and `watch` streams.
//!
//! Not done: a blocking acquire or campaign without a timeout waits on one connection with no
//! client-side bound; if that node is cut off without the connection failing, the wait lasts
//! until the connection does. Give a timeout where that matters.
//!
//! TLS: `https://` endpoints are verified with the CA of a [`ClientTls`] ([`Client::with_tls`];
//! only that CA, no system roots) before any request, bearer token included, is sent; a server
//! that fails is refused ([`ClientError::Untrusted`]). An `https://` endpoint without a CA is
//! refused, and so is an `http://` one with a CA ([`check_scheme`]).

mod client;
mod error;
mod events;
pub mod history;
mod session;
pub mod sse;

pub use client::{
    Client, ClientTls, DEFAULT_ATTEMPT_TIMEOUT, DEFAULT_CONNECT_TIMEOUT, DEFAULT_REQUEST_TIMEOUT, Leader,
    LeaseGrant, LeaseInfo, Member, Members, Status, check_scheme,
};
pub use error::ClientError;
pub use events::{LeaseEvent, LeaseEvents, LossReason, Observe};
pub use session::{Leadership, LockGuard, LockLoss, Session, SessionEnd};

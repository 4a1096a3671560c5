//! `ringleader lease`: grant, keep alive, revoke and inspect leases of the coordination
//! service by hand.

use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use clap::{Args, Subcommand};
use ringleader_client::ClientError;

use crate::service_client::{self, EndpointArgs};

/// Grant, keep alive, revoke or inspect a lease of the coordination service
///
/// A lease is what locks and candidacies are held with: when it expires or is revoked, they
/// go. `lock` and `elect` grant their own; these verbs are for scripts and for looking.
///
/// `grant` prints the lease as ID:KEY. The key is what acting on the lease takes (the id alone,
/// which anyone may see, acts on nothing): keep it as you would a password, and pass ID:KEY
/// to `keepalive` and `revoke`. `ttl` takes ID or ID:KEY.
///
/// Examples:
///   LEASE=$(ringleader lease grant --ttl 30s)
///   ringleader lease keepalive "$LEASE"
///   ringleader lease keepalive "$LEASE" --forever &
///   ringleader lease ttl "$LEASE"
///   ringleader lease revoke "$LEASE"
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct LeaseArgs {
    #[command(subcommand)]
    pub action: LeaseAction,
    #[command(flatten)]
    pub endpoints: EndpointArgs,
}

/// What to do with a lease.
#[derive(Subcommand, Debug)]
pub enum LeaseAction {
    /// Grant a lease; prints it as ID:KEY alone (for `LEASE=$(...)`).
    Grant {
        /// Its time to live, 10ms..3600s.
        #[arg(long, value_name = "TIME", default_value = "10s", value_parser = service_client::parse_ttl)]
        ttl: Duration,
    },
    /// Keep a lease alive once (its TTL starts again); prints `lease ID ttl_ms=T`.
    Keepalive {
        /// The lease, as `grant` printed it (ID:KEY).
        #[arg(value_name = "ID:KEY", value_parser = parse_lease)]
        id: Lease,
        /// Keep it alive every third of its TTL until it is lost or Ctrl-C.
        #[arg(long)]
        forever: bool,
    },
    /// Revoke a lease: its locks are released, its candidacies withdrawn.
    Revoke {
        /// The lease, as `grant` printed it (ID:KEY).
        #[arg(value_name = "ID:KEY", value_parser = parse_lease)]
        id: Lease,
    },
    /// Print a lease's TTL and what remains of it: `lease ID ttl_ms=T remaining_ms=R`.
    Ttl {
        /// The lease id (or ID:KEY).
        #[arg(value_name = "ID", value_parser = parse_lease)]
        id: Lease,
    },
}

/// A lease as the verbs take it: its id, and the key its grant answered when given.
#[derive(Clone, Debug)]
pub struct Lease {
    id: u64,
    key: Option<String>,
}

/// `ID` or `ID:KEY` (KEY: 64 hex digits).
fn parse_lease(text: &str) -> Result<Lease, String> {
    let (id, key) = match text.split_once(':') {
        Some((id, key)) => (id, Some(key)),
        None => (text, None),
    };
    let id = id
        .parse()
        .map_err(|_| format!("{id:?} is not a lease id; give ID:KEY as `lease grant` printed it"))?;
    if let Some(k) = key
        && (k.len() != 64 || !k.bytes().all(|b| b.is_ascii_hexdigit()))
    {
        return Err("a lease key is the 64 hex digits after the colon that `lease grant` printed".into());
    }
    Ok(Lease { id, key: key.map(str::to_string) })
}

/// Runs `ringleader lease`.
pub fn run(args: LeaseArgs) -> crate::CommandResult {
    let client = args.endpoints.client()?;
    let id = match &args.action {
        LeaseAction::Grant { .. } => None,
        LeaseAction::Keepalive { id, .. } | LeaseAction::Revoke { id } | LeaseAction::Ttl { id } => Some(id),
    };
    if let Some(Lease { id, key: Some(key) }) = id {
        client.use_lease_key(*id, key);
    }
    match args.action {
        LeaseAction::Grant { ttl } => {
            let g = client.grant(ttl).context("cannot grant a lease")?;
            println!("{}:{}", g.lease, client.lease_key(g.lease).unwrap_or_default());
        }
        LeaseAction::Keepalive { id: Lease { id, .. }, forever: false } => {
            let g = client.keep_alive(id).with_context(|| format!("cannot keep lease {id} alive"))?;
            println!("lease {id} ttl_ms={}", g.ttl_ms);
        }
        LeaseAction::Keepalive { id: Lease { id, .. }, forever: true } => keep_alive_forever(&client, id)?,
        LeaseAction::Revoke { id: Lease { id, .. } } => {
            client.revoke(id).with_context(|| format!("cannot revoke lease {id}"))?;
            println!("revoked {id}");
        }
        LeaseAction::Ttl { id: Lease { id, .. } } => {
            let i = client.time_to_live(id).with_context(|| format!("lease {id}"))?;
            println!("lease {id} ttl_ms={} remaining_ms={}", i.ttl_ms, i.remaining_ms);
        }
    }
    Ok(crate::ExitStatus::Ok)
}

/// Keeps `id` alive every third of its TTL; ends (status 1) when the service no longer knows
/// it, or when no keep-alive got through within the TTL.
fn keep_alive_forever(client: &ringleader_client::Client, id: u64) -> anyhow::Result<()> {
    let g = client.keep_alive(id).with_context(|| format!("cannot keep lease {id} alive"))?;
    println!("lease {id} ttl_ms={}", g.ttl_ms);
    let ttl = Duration::from_millis(g.ttl_ms.max(1));
    let mut last_ok = Instant::now();
    loop {
        std::thread::sleep(ttl / 3);
        let sent = Instant::now();
        match client.keep_alive(id) {
            Ok(_) => last_ok = sent,
            Err(ClientError::NoSuchLease) => bail!("lease {id} is gone (expired or revoked)"),
            Err(e) if last_ok.elapsed() >= ttl => {
                bail!("lease {id}: no keep-alive got through within its TTL: {e}")
            }
            Err(_) => {}
        }
    }
}

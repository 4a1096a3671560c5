//! `ringleader lock`: hold a named lock of the coordination service while a command runs.

use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use ringleader_client::Session;

use crate::service_client::{self, EndpointArgs, HoldEnd};

/// Hold a named lock of the coordination service while a command runs
///
/// Grants a lease (a session kept alive every third of --ttl), waits for the lock (FIFO), then
/// runs COMMAND with RINGLEADER_FENCING_TOKEN, RINGLEADER_LOCK, RINGLEADER_LEASE and RINGLEADER_LEASE_KEY in its
/// environment, releases the lock, revokes the lease, and exits with COMMAND's status.
/// Pass the fencing token to whatever the lock protects, so that it can refuse a holder whose
/// token is older than one it has seen.
///
/// Without COMMAND, prints `locked NAME fencing=T lease=L` and holds the lock until Ctrl-C.
///
/// If the lock is not had: exit 1 with one line saying why (timeout, no node reachable, ...).
/// The lock itself is checked every third of --ttl. If the lock or the session is lost while
/// COMMAND runs (the lock taken from the lease, or no keep-alive got through in time): COMMAND
/// is sent SIGTERM, then SIGKILL 5 s later if it has not ended, one line is printed, and the
/// exit status is 1. A SIGINT or SIGTERM sent to
/// this process is forwarded to COMMAND (Ctrl-C in a terminal reaches both already).
///
/// Examples:
///   ringleader lock db-migration -- ./migrate.sh
///   ringleader lock backup --ttl 30s --timeout 1m --endpoints http://10.0.0.1:4100,http://10.0.0.2:4100 -- sh -c 'backup --token "$RINGLEADER_FENCING_TOKEN"'
///   ringleader lock db-migration          (hold it by hand until Ctrl-C)
#[derive(Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct LockArgs {
    /// The lock's name.
    #[arg(value_name = "NAME", value_parser = service_client::parse_name)]
    pub name: String,
    #[command(flatten)]
    pub endpoints: EndpointArgs,
    /// The session's lease TTL, 10ms..3600s: how long the lock outlives this process if it dies.
    #[arg(long, value_name = "TIME", default_value = "10s", value_parser = service_client::parse_ttl)]
    pub ttl: Duration,
    /// Give up waiting for the lock after this long, 1ms..86400s [default: wait while the
    /// session lives].
    #[arg(long, value_name = "TIME", value_parser = service_client::parse_wait)]
    pub timeout: Option<Duration>,
    /// The command to run while holding the lock, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// Runs `ringleader lock`.
pub fn run(args: LockArgs) -> crate::CommandResult {
    let client = args.endpoints.client()?;
    let session = Session::new(&client, args.ttl).context("cannot start a session (grant a lease)")?;
    let guard = session
        .lock(&args.name, args.timeout)
        .with_context(|| format!("lock {:?} not acquired", args.name))?;
    // From here on Ctrl-C ends the hold cleanly (release, revoke); while waiting it just
    // ends the process, and the service drops the wait when the lease expires.
    service_client::catch_signals()?;
    let (fencing, lease) = (guard.fencing(), session.lease());
    if args.command.is_empty() {
        println!("locked {} fencing={fencing} lease={lease}", args.name);
    }
    let env = [
        ("RINGLEADER_FENCING_TOKEN", fencing.to_string()),
        ("RINGLEADER_LOCK", args.name.clone()),
        ("RINGLEADER_LEASE", lease.to_string()),
        ("RINGLEADER_LEASE_KEY", session.client().lease_key(lease).unwrap_or_default()),
    ];
    // The lock is watched, not only the lease: it can be taken from a lease that lives
    // (wound-wait, an operator's release). A failed check (no node reachable) is not a loss;
    // the session's own deadline covers an unreachable service.
    let lost = || match guard.check() {
        Err(ringleader_client::ClientError::Lost | ringleader_client::ClientError::NoSuchLease) => {
            Some(format!("the service no longer has lease {lease} holding it with fencing token {fencing}"))
        }
        _ => None,
    };
    let watch = service_client::Watch { lost: &lost, every: (args.ttl / 3).max(Duration::from_millis(50)) };
    let end = service_client::run_while(&session, Some(watch), &args.command, &env);
    drop(guard);
    drop(session);
    match end? {
        HoldEnd::Command(code) => service_client::exit_with(code),
        HoldEnd::Signalled => Ok(crate::ExitStatus::Ok),
        HoldEnd::Lost(why) => {
            let what = if args.command.is_empty() { "" } else { "; the command was sent SIGTERM" };
            anyhow::bail!("lost lock {:?} (lease {lease}): {why}{what}", args.name)
        }
    }
}
